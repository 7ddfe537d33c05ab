"""auth/verify, instance-quota/get, config/user/get|set, and audit/list (a memhub addition)."""

from __future__ import annotations

from typing import Any

from memhub.api.meta_schemas import AuditList, AuthVerify, ConfigGet, ConfigSet, QuotaGet
from memhub.api.metaplane import Guard, MetaCall, MetaRoute
from memhub.meta import audit
from memhub.meta.errors import denied


def verify(call: MetaCall, body: AuthVerify) -> Any:
    return call.meta.users.verify(call.caller.service_id, body.user_key)


def quota(call: MetaCall, body: QuotaGet) -> Any:
    return call.meta.config.instance_quota(call.caller.service_id)


def config_get(call: MetaCall, body: ConfigGet) -> Any:
    return call.meta.config.get_user_config(call.caller, body.user_id, body.module, body.param_name)


def config_set(call: MetaCall, body: ConfigSet) -> Any:
    return call.meta.config.set_user_config(call.caller, body.user_id, body.module, body.params)


def audit_list(call: MetaCall, body: AuditList) -> Any:
    if not call.caller.is_system_admin:
        raise denied("the audit log is readable by system admins only")
    return audit.query(call.meta.store, call.caller.service_id, body.fields(), body.page())


ROUTES = [
    MetaRoute("auth/verify", AuthVerify, verify, Guard.ANYONE, summary="Is this user key valid, and whose is it"),
    MetaRoute("instance-quota/get", QuotaGet, quota, summary="The instance's user and team quotas"),
    MetaRoute("config/user/get", ConfigGet, config_get, summary="A user's effective config of one module"),
    MetaRoute("config/user/set", ConfigSet, config_set, summary="Set a user's config params"),
    MetaRoute("audit/list", AuditList, audit_list, summary="The management audit log (system admins)"),
]
