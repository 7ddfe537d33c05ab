"""auth/verify, instance-quota/get, config/user/get|set, and audit/list (a memhub addition)."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import Guard, GuardedCall, GuardedRoute
from memhub.api.meta_schemas import AuditList, AuthVerify, ConfigGet, ConfigSet, QuotaGet
from memhub.meta import audit
from memhub.meta.errors import denied


def verify(call: GuardedCall, body: AuthVerify) -> Any:
    return call.meta.users.verify(call.caller.service_id, body.user_key)


def quota(call: GuardedCall, body: QuotaGet) -> Any:
    return call.meta.config.instance_quota(call.caller.service_id)


def config_get(call: GuardedCall, body: ConfigGet) -> Any:
    return call.meta.config.get_user_config(call.caller, body.user_id, body.module, body.param_name)


def config_set(call: GuardedCall, body: ConfigSet) -> Any:
    return call.meta.config.set_user_config(call.caller, body.user_id, body.module, body.params)


def audit_list(call: GuardedCall, body: AuditList) -> Any:
    if not call.caller.is_system_admin:
        raise denied("the audit log is readable by system admins only")
    return audit.query(call.meta.store, call.caller.service_id, body.fields(), body.page())


ROUTES = [
    GuardedRoute("auth/verify", AuthVerify, verify, Guard.ANYONE, summary="Is this user key valid, and whose is it"),
    GuardedRoute("instance-quota/get", QuotaGet, quota, summary="The instance's user and team quotas"),
    GuardedRoute("config/user/get", ConfigGet, config_get, summary="A user's effective config of one module"),
    GuardedRoute("config/user/set", ConfigSet, config_set, summary="Set a user's config params"),
    GuardedRoute("audit/list", AuditList, audit_list, summary="The management audit log (system admins)"),
]
