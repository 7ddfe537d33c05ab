"""asset/*, agent-fixed-asset/* and acl/* routes."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.meta_schemas import (
    AclCheck,
    AclGrant,
    AclList,
    AclRef,
    AssetCreate,
    AssetDelete,
    AssetList,
    AssetListAccessible,
    AssetRef,
    AssetUpdate,
    FixedAssetDetail,
    FixedAssetList,
    FixedAssetSet,
    FixedAssetSummary,
)

OK = {"ok": True}


def create(call: GuardedCall, body: AssetCreate) -> Any:
    return call.meta.assets.create(call.caller, body.fields())


def get(call: GuardedCall, body: AssetRef) -> Any:
    return call.meta.assets.get(call.caller, body.asset_id)


def update(call: GuardedCall, body: AssetUpdate) -> Any:
    return call.meta.assets.update(call.caller, body.asset_id, body.fields())


def delete(call: GuardedCall, body: AssetDelete) -> Any:
    return call.meta.assets.delete(call.caller, body.asset_ids)


def list_assets(call: GuardedCall, body: AssetList) -> Any:
    return call.meta.assets.list(call.caller, body.team_id, body.fields(), body.page())


def list_accessible(call: GuardedCall, body: AssetListAccessible) -> Any:
    user_id = call.meta.users.resolve(call.caller.service_id, body.user_id, body.user_key)
    return call.meta.assets.list_accessible(
        call.caller,
        user_id,
        team_id=body.team_id,
        action=body.action or "read",
        asset_type=body.asset_type,
        agent_id=body.agent_id,
        visibility=body.visibility,
        page=body.page(),
    )


def touch_usage(call: GuardedCall, body: AssetRef) -> Any:
    call.meta.assets.touch_usage(call.caller, body.asset_id)
    return OK


def fixed_set(call: GuardedCall, body: FixedAssetSet) -> Any:
    call.meta.assets.set_fixed_assets(call.caller, body.agent_id, [b.fields() for b in body.bindings])
    return OK


def fixed_list(call: GuardedCall, body: FixedAssetList) -> Any:
    return call.meta.assets.list_fixed_assets(call.caller, body.agent_id, body.page())


def fixed_detail(call: GuardedCall, body: FixedAssetDetail) -> Any:
    return call.meta.assets.list_fixed_assets_with_detail(
        call.caller,
        body.agent_id,
        apply_visibility_filter=bool(body.apply_visibility_filter),
        touch_usage=bool(body.touch_usage),
        asset_types=body.asset_types,
        page=body.page(),
    )


def fixed_summary(call: GuardedCall, body: FixedAssetSummary) -> Any:
    return call.meta.assets.summary_by_agents(call.caller, body.agent_ids, body.asset_id)


def acl_grant(call: GuardedCall, body: AclGrant) -> Any:
    granted_by = call.meta.users.resolve(call.caller.service_id, body.granted_by, body.granted_by_key)
    return call.meta.assets.grant_acl(
        call.caller,
        asset_id=body.asset_id,
        subject_type=body.subject_type,
        subject_id=body.subject_id,
        permission=body.permission,
        effect=body.effect or "allow",
        granted_by=granted_by,
    )


def acl_revoke(call: GuardedCall, body: AclRef) -> Any:
    call.meta.assets.revoke_acl(call.caller, body.id)
    return OK


def acl_list(call: GuardedCall, body: AclList) -> Any:
    return call.meta.assets.list_acl(call.caller, body.asset_id, body.page())


def acl_check(call: GuardedCall, body: AclCheck) -> Any:
    user_id = call.meta.users.resolve(call.caller.service_id, body.user_id, body.user_key)
    return call.meta.assets.check_acl(call.caller, user_id, body.asset_id, body.action, body.agent_id)


ROUTES = [
    GuardedRoute("asset/create", AssetCreate, create, summary="Register an asset (the caller owns it)"),
    GuardedRoute("asset/get", AssetRef, get, summary="Get an asset the caller may read"),
    GuardedRoute("asset/update", AssetUpdate, update, summary="Update an asset (owner)"),
    GuardedRoute("asset/delete", AssetDelete, delete, summary="Delete assets (owner)"),
    GuardedRoute("asset/list", AssetList, list_assets, summary="A team's assets the caller may read"),
    GuardedRoute("asset/list-accessible", AssetListAccessible, list_accessible, summary="Assets a user may act on"),
    GuardedRoute("asset/touch-usage", AssetRef, touch_usage, summary="Count a use of an asset"),
    GuardedRoute("agent-fixed-asset/set", FixedAssetSet, fixed_set, summary="Replace an agent's bound assets"),
    GuardedRoute("agent-fixed-asset/list", FixedAssetList, fixed_list, summary="An agent's bindings"),
    GuardedRoute("agent-fixed-asset/list-with-detail", FixedAssetDetail, fixed_detail, summary="Bindings with assets"),
    GuardedRoute("agent-fixed-asset/summary-by-agents", FixedAssetSummary, fixed_summary, summary="Binding counts"),
    GuardedRoute("acl/grant", AclGrant, acl_grant, summary="Grant a permission on an asset"),
    GuardedRoute("acl/revoke", AclRef, acl_revoke, summary="Revoke an ACL entry"),
    GuardedRoute("acl/list", AclList, acl_list, summary="ACL entries of an asset"),
    GuardedRoute("acl/check", AclCheck, acl_check, summary="May this user do this to this asset"),
]
