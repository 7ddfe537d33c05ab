"""user/* and user-key/* routes."""

from __future__ import annotations

from typing import Any

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.meta_schemas import (
    KeyRef,
    UserCreate,
    UserCreateWithKey,
    UserDelete,
    UserGet,
    UserKeyCreate,
    UserKeyList,
    UserKeyUpdate,
    UserList,
)

OK = {"ok": True}


def create(call: GuardedCall, body: UserCreate) -> Any:
    return call.meta.users.create(call.caller, body.fields())


def create_with_key(call: GuardedCall, body: UserCreateWithKey) -> Any:
    return call.meta.users.create_with_key(call.caller, body.fields())


def get(call: GuardedCall, body: UserGet) -> Any:
    user_id = call.meta.users.resolve(call.caller.service_id, body.user_id, body.user_key)
    return call.meta.users.get(call.caller, user_id)


def delete(call: GuardedCall, body: UserDelete) -> Any:
    return call.meta.users.delete(call.caller, body.user_ids)


def list_users(call: GuardedCall, body: UserList) -> Any:
    return call.meta.users.list(call.caller, body.fields(), body.page())


def key_create(call: GuardedCall, body: UserKeyCreate) -> Any:
    return call.meta.users.create_key(call.caller, body.user_id, body.name, body.expires_at)


def key_list(call: GuardedCall, body: UserKeyList) -> Any:
    return call.meta.users.list_keys(call.caller, body.user_id, body.page())


def key_get(call: GuardedCall, body: KeyRef) -> Any:
    return call.meta.users.get_key(call.caller, body.key_id)


def key_revoke(call: GuardedCall, body: KeyRef) -> Any:
    call.meta.users.revoke_key(call.caller, body.key_id)
    return OK


def key_update(call: GuardedCall, body: UserKeyUpdate) -> Any:
    return call.meta.users.update_key(call.caller, body.key_id, body.fields())


ROUTES = [
    GuardedRoute("user/create", UserCreate, create, summary="Create a user and its default key (system admin)"),
    GuardedRoute("user/create-with-key", UserCreateWithKey, create_with_key, summary="Create a user with a chosen key"),
    GuardedRoute("user/get", UserGet, get, summary="Get a user by id or key"),
    GuardedRoute("user/delete", UserDelete, delete, summary="Delete users (system admin)"),
    GuardedRoute("user/list", UserList, list_users, summary="List users"),
    GuardedRoute("user-key/create", UserKeyCreate, key_create, summary="Create a user key (shown once)"),
    GuardedRoute("user-key/list", UserKeyList, key_list, summary="List a user's keys, masked"),
    GuardedRoute("user-key/get", KeyRef, key_get, summary="Get a key, masked"),
    GuardedRoute("user-key/revoke", KeyRef, key_revoke, summary="Revoke a key"),
    GuardedRoute("user-key/update", UserKeyUpdate, key_update, summary="Rename a key or change its expiry"),
]
