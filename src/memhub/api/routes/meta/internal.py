"""`/v3/internal/meta/*`: instance bootstrap, opened by the gateway key only."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.meta_schemas import InitAdmin, ListByInstance
from memhub.ids import MAX_SERVICE_ID_CHARS, valid_service_id
from memhub.meta.errors import MetaError


def _instance(call: GuardedCall, body_instance: str | None) -> str:
    # The original takes the instance from the header, else from the body.
    instance = call.caller.service_id or (body_instance or "").strip()
    if not instance:
        raise MetaError("missing_instance_id", "x-tdai-service-id header or instance_id is required")
    if not valid_service_id(instance):
        # An instance the other planes would refuse could never use the admin created here.
        raise MetaError("invalid_instance_id", f"instance id must be 1..{MAX_SERVICE_ID_CHARS} printable characters")
    return instance


def init_admin(call: GuardedCall, body: InitAdmin) -> Any:
    return call.meta.init_admin(_instance(call, body.instance_id), body.username, body.user_key, call.caller.request_id)


def list_by_instance(call: GuardedCall, body: ListByInstance) -> Any:
    return call.meta.users.list_by_instance(_instance(call, body.instance_id), body.fields(), body.page())


ROUTES = [
    GuardedRoute("user/init-admin", InitAdmin, init_admin, Guard.GATEWAY, summary="Create the first system admin"),
    GuardedRoute("user/list-by-instance", ListByInstance, list_by_instance, Guard.GATEWAY, summary="All users"),
]
