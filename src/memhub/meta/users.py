"""Users and their keys: creation, lookup, deletion, key lifecycle and key verification.

A deleted user stays as a tombstone (status `deleted`, no keys, no memberships): its id can never
be handed to a new account, which would otherwise inherit the old one's teams, agents and assets.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.errors import FieldError, MemhubError
from memhub.meta import audit
from memhub.meta.caller import SYSTEM_ADMIN, Caller
from memhub.meta.clock import now_iso
from memhub.meta.errors import MetaError, denied
from memhub.meta.guards import ACTIVE, caller_id, membership
from memhub.meta.keys import KeyHasher, entity_id, masked, new_user_key
from memhub.meta.paging import Page, read_page
from memhub.meta.quotas import Quotas
from memhub.model.meta import DuplicateEntry, MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter
from memhub.timeutil import parse_iso_ms

DELETED = "deleted"
log = logging.getLogger("memhub.meta")
REVOKED = "revoked"
# A key's last_used_at is written at most this often: a write per request would serialise every
# authenticated read behind the database's single writer.
LAST_USED_EVERY_S = 60.0


def public_user(user: Row, caller: Caller | None = None) -> Row:
    """`{user_id, user_type, username, created_at}`; another system admin's type is not disclosed."""
    view = {k: user[k] for k in ("user_id", "user_type", "username", "created_at")}
    if user["user_type"] == SYSTEM_ADMIN and caller is not None and caller.user_id != user["user_id"]:
        view.pop("user_type")
    return view


def public_key(key: Row) -> Row:
    """A key as listed: masked, never the secret."""
    return {
        "key_id": key["key_id"],
        "user_id": key["user_id"],
        "key_prefix": masked(key["key_last4"]),
        "name": key["name"],
        "status": key["status"],
        "is_default": key["is_default"],
        "last_used_at": key["last_used_at"],
        "expires_at": key["expires_at"],
        "created_at": key["created_at"],
        "revoked_at": key["revoked_at"],
    }


def live_user(r: MetaReader, user_id: str) -> Row | None:
    """The user unless absent or deleted."""
    user = r.get(MetaKind.USER, user_id)
    return None if user is None or user["status"] == DELETED else user


def require_user(r: MetaReader, user_id: str, *, text: str | None = None) -> Row:
    """The live user, or `user_not_found`."""
    user = live_user(r, user_id)
    if user is None:
        raise MetaError("user_not_found", text or f"user not found: {user_id}")
    return user


def _expiry_ms(key: Row) -> int | None:
    """When the key stops authenticating (epoch ms), None when it never does; an unreadable expiry is already past."""
    expires = key["expires_at"]
    if not expires:
        return None
    at = parse_iso_ms(expires)
    return 0 if at is None else at


def _expired(key: Row, now_ms: int) -> bool:
    at = _expiry_ms(key)
    return at is not None and at <= now_ms


def _usable(r: MetaReader, key: Row, now_ms: int) -> tuple[Row, Row] | None:
    """The key and its user when the key may authenticate: active, not expired, its user active."""
    if key["status"] != ACTIVE or _expired(key, now_ms):
        return None
    user = live_user(r, key["user_id"])
    if user is None or user["status"] != ACTIVE:
        return None
    return key, user


def _future_expiry(expires_at: str | None, now_ms: int) -> None:
    """A new expiry must lie ahead: a key born expired is a silent no-op, and moving it back is pointless."""
    at = parse_iso_ms(expires_at) if expires_at else None
    if at is not None and at <= now_ms:
        raise FieldError("expires_at", "must be in the future")


@dataclass
class Users:
    """The users and keys of every tenant."""

    store: MetaStore
    hasher: KeyHasher
    quotas: Quotas = field(default_factory=Quotas)
    clock: Callable[[], float] = time.time  # epoch seconds: what a key's expires_at is compared with
    _last_used: dict[tuple[str, str], float] = field(default_factory=dict)
    _last_used_lock: threading.Lock = field(default_factory=threading.Lock)

    # -- verification --------------------------------------------------------------------
    def now_ms(self) -> int:
        """The instant key expiries are judged at (epoch ms)."""
        return int(self.clock() * 1000)

    def _key_owner(self, r: MetaReader, key: str) -> tuple[Row, Row] | None:
        rows = r.find(MetaKind.USER_KEY, {"key_hash": self.hasher.digest(key)}, limit=1)
        return _usable(r, rows[0], self.now_ms()) if rows else None

    def authenticate(self, service_id: str, key: str, request_id: str = "") -> Caller | None:
        """The caller a user key identifies in this tenant; None if unknown, revoked or expired."""
        with self.store.reading(service_id) as r:
            found = self._key_owner(r, key)
        if found is None:
            return None
        row, user = found
        self._touch(service_id, row["key_id"])
        return Caller(service_id, user["user_id"], user["user_type"], row["key_id"], request_id, _expiry_ms(row))

    def key_caller(self, service_id: str, key_id: str, request_id: str = "") -> Caller | None:
        """The caller a key stands for, by its id, while the key may still authenticate (the memory proxy's session
        tokens name a key, never carry it); None if the key is unknown, revoked or expired or its user is gone."""
        with self.store.reading(service_id) as r:
            row = r.get(MetaKind.USER_KEY, key_id)
            found = _usable(r, row, self.now_ms()) if row is not None else None
        if found is None:
            return None
        key, user = found
        return Caller(service_id, user["user_id"], user["user_type"], key_id, request_id, _expiry_ms(key))

    def _touch(self, service_id: str, key_id: str) -> None:
        now = time.monotonic()
        with self._last_used_lock:
            last = self._last_used.get((service_id, key_id))
            if last is not None and now - last < LAST_USED_EVERY_S:
                return
            self._last_used[(service_id, key_id)] = now
        try:
            with self.store.writing(service_id) as w:
                w.update(MetaKind.USER_KEY, key_id, {"last_used_at": now_iso()})
        except MemhubError as exc:
            # Bookkeeping only: a busy database must not fail the request the key authenticated.
            log.warning("last_used_at of key %s not recorded: %s", key_id, exc)

    def resolve(self, service_id: str, user_id: str | None, user_key: str | None) -> str:
        """The user a body names by id or by key (`user_id` wins, as in the original)."""
        if user_id:
            return user_id
        if not user_key:
            raise MetaError("invalid_request", "user_id or user_key is required")
        with self.store.reading(service_id) as r:
            found = self._key_owner(r, user_key)
        if found is None:
            raise MetaError("user_not_found", "user not found for user_key")
        return found[1]["user_id"]

    def verify(self, service_id: str, user_key: str) -> Row:
        """auth/verify: `{valid, user}`; an invalid key is an answer, not an error."""
        with self.store.reading(service_id) as r:
            found = self._key_owner(r, user_key)
        if found is None:
            return {"valid": False, "user": None}
        row, user = found
        self._touch(service_id, row["key_id"])
        return {"valid": True, "user": public_user(user)}

    # -- users ---------------------------------------------------------------------------
    def _insert_user(
        self, w: MetaWriter, fields: Mapping[str, Any], user_type: str, key: str, *, user_id: str | None = None
    ) -> Row:
        count = w.count(MetaKind.USER, {"status !=": DELETED})
        if count >= self.quotas.max_users:
            raise MetaError(
                "user_limit_exceeded",
                f"user limit {self.quotas.max_users} reached for instance {w.service_id} (current: {count})",
            )
        now = now_iso()
        uid = user_id or entity_id("usr")
        user = {
            "user_id": uid,
            "username": fields["username"],
            "display_name": fields.get("display_name"),
            "email": fields.get("email"),
            "auth_provider": fields.get("auth_provider") or "local",
            "external_id": fields.get("external_id") or uid,
            "status": ACTIVE,
            "user_type": user_type,
            "created_at": now,
            "updated_at": now,
        }
        try:
            w.insert(MetaKind.USER, user)
        except DuplicateEntry:
            if user_type == SYSTEM_ADMIN:
                raise MetaError("already_initialized", "system_admin already exists") from None
            raise MetaError("duplicate_entry", f"user already exists: {uid}") from None
        self._insert_key(w, uid, key, name=None, expires_at=None, is_default=True)
        return {**user, "default_user_key": key}

    def _insert_key(
        self, w: MetaWriter, user_id: str, key: str, *, name: str | None, expires_at: str | None, is_default: bool
    ) -> Row:
        row = {
            "key_id": entity_id("uky"),
            "user_id": user_id,
            "key_hash": self.hasher.digest(key),
            "key_last4": key[-4:],
            "name": name,
            "status": ACTIVE,
            "is_default": is_default,
            "last_used_at": None,
            "expires_at": expires_at,
            "created_at": now_iso(),
            "revoked_at": None,
        }
        try:
            w.insert(MetaKind.USER_KEY, row)
        except DuplicateEntry:
            raise MetaError("duplicate_user_key", "user_key already exists") from None
        return row

    @staticmethod
    def _require_system_admin(caller: Caller) -> None:
        if not caller.is_system_admin:
            raise denied("user management requires system admin")

    @staticmethod
    def _created(user: Row) -> Row:
        return {k: user[k] for k in ("user_id", "user_type", "created_at", "default_user_key")}

    def create(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """user/create: a normal user and its default key (shown once)."""
        self._require_system_admin(caller)
        with self.store.writing(caller.service_id) as w:
            user = self._insert_user(w, fields, "normal", new_user_key(), user_id=fields.get("user_id"))
            audit.record(w, caller, "user/create", [user["user_id"]], {"username": user["username"]})
        return self._created(user)

    def create_with_key(self, caller: Caller, fields: Mapping[str, Any]) -> Row:
        """user/create-with-key: as create, with a caller-chosen key."""
        self._require_system_admin(caller)
        with self.store.writing(caller.service_id) as w:
            user = self._insert_user(w, fields, "normal", fields["user_key"])
            audit.record(w, caller, "user/create-with-key", [user["user_id"]], {"username": user["username"]})
        return self._created(user)

    def init_admin(self, w: MetaWriter, caller: Caller, username: str, user_key: str | None) -> Row:
        """The instance's first user, a system admin (inside the caller's transaction)."""
        if w.count(MetaKind.USER, {"user_type": SYSTEM_ADMIN}):
            raise MetaError("already_initialized", "system_admin already exists")
        if w.count(MetaKind.USER):
            raise MetaError("already_initialized", "system already has users; init-admin requires empty database")
        user = self._insert_user(w, {"username": username}, SYSTEM_ADMIN, user_key or new_user_key())
        audit.record(w, caller, "user/init-admin", [user["user_id"]], {"username": username})
        return user

    def get(self, caller: Caller, user_id: str) -> Row:
        """user/get: yourself; a system admin may see every normal user."""
        with self.store.reading(caller.service_id) as r:
            user = live_user(r, user_id)
        visible = user is not None and (
            user["user_id"] == caller.user_id or (caller.is_system_admin and user["user_type"] != SYSTEM_ADMIN)
        )
        if user is None or not visible:
            raise MetaError("user_not_found", f"user not found: {user_id}")
        return public_user(user, caller)

    def delete(self, caller: Caller, user_ids: Sequence[str]) -> Row:
        """user/delete: tombstones the users; their keys, memberships and ACL entries go."""
        self._require_system_admin(caller)
        deleted: list[str] = []
        failed: list[Row] = []
        with self.store.writing(caller.service_id) as w:
            users = {uid: live_user(w, uid) for uid in dict.fromkeys(user_ids)}
            admins = w.count(MetaKind.USER, {"user_type": SYSTEM_ADMIN, "status !=": DELETED})
            deleting_admins = sum(1 for u in users.values() if u is not None and u["user_type"] == SYSTEM_ADMIN)
            if admins and admins - deleting_admins < 1:
                raise MetaError("last_system_admin", "cannot delete the last system_admin user")
            for uid, user in users.items():
                if user is None:
                    failed.append({"id": uid, "reason": "not_found"})
                    continue
                w.delete(MetaKind.USER_KEY, {"user_id": uid})
                w.delete(MetaKind.MEMBER, {"user_id": uid})
                w.delete(MetaKind.ACL, {"subject_type": "user", "subject_id": uid})
                w.delete(MetaKind.CONFIG, {"user_id": uid})
                # The admin index allows one system_admin per instance: a tombstone is no longer one.
                w.update(MetaKind.USER, uid, {"status": DELETED, "user_type": "normal", "updated_at": now_iso()})
                deleted.append(uid)
            audit.record(w, caller, "user/delete", deleted, {"failed": failed})
        return {"deleted_ids": deleted, "failed": failed}

    def list(self, caller: Caller, fields: Mapping[str, Any], page: Page) -> Row:
        """user/list: a system admin sees all users; a team admin the team; a member only themself."""
        me = caller_id(caller)
        where: dict[str, Any] = {"status !=": DELETED}
        if fields.get("user_ids"):
            where["user_id"] = list(fields["user_ids"])
        if fields.get("username"):
            where["username"] = fields["username"]
        team_id = fields.get("team_id")
        with self.store.reading(caller.service_id) as r:
            if team_id is None:
                if not caller.is_system_admin:
                    raise MetaError("missing_team_id", "team_id is required for non-system-admin callers")
            else:
                mine = membership(r, team_id, me)
                if not caller.is_system_admin:
                    if mine is None:
                        raise denied("not a team member")
                    if mine["role"] != "admin":
                        if fields.get("user_ids") or fields.get("username"):
                            raise MetaError("filter_not_allowed", "filters are not allowed for normal team members")
                        where["user_id"] = me
                members = r.find(MetaKind.MEMBER, {"team_id": team_id, "status": ACTIVE})
                ids = {m["user_id"] for m in members}
                wanted = where.get("user_id")
                if isinstance(wanted, list):
                    ids &= set(wanted)
                elif isinstance(wanted, str):
                    ids &= {wanted}
                where["user_id"] = sorted(ids)
            # Another system admin is never listed to anyone but themself.
            hidden = {"user_type !=": SYSTEM_ADMIN} if not caller.is_system_admin else {}
            where.update(hidden)
            return read_page(
                r, MetaKind.USER, where, ["-created_at", "user_id"], page, lambda u: public_user(u, caller)
            )

    def list_by_instance(self, service_id: str, fields: Mapping[str, Any], page: Page) -> Row:
        """Internal: every user of an instance, without secrets."""
        where: dict[str, Any] = {"status !=": DELETED}
        for name in ("status", "user_type"):
            if fields.get(name):
                where[name] = fields[name]
        if fields.get("user_ids"):
            where["user_id"] = sorted(set(fields["user_ids"]))
        with self.store.reading(service_id) as r:
            return read_page(r, MetaKind.USER, where, ["-created_at", "user_id"], page)

    # -- keys ----------------------------------------------------------------------------
    @staticmethod
    def _key_scope(caller: Caller, user_id: str) -> None:
        if not caller.is_system_admin and user_id != caller_id(caller):
            raise denied("cannot access another user's keys")

    def create_key(self, caller: Caller, user_id: str | None, name: str | None, expires_at: str | None) -> Row:
        """user-key/create: a further key (at most `max_active_keys` active ones); the value is shown once."""
        target = user_id or caller_id(caller)
        self._key_scope(caller, target)
        _future_expiry(expires_at, self.now_ms())
        key = new_user_key()
        with self.store.writing(caller.service_id) as w:
            require_user(w, target)
            active = w.count(MetaKind.USER_KEY, {"user_id": target, "status": ACTIVE})
            if active >= self.quotas.max_active_keys:
                raise MetaError("key_limit_exceeded", f"active user key limit {self.quotas.max_active_keys} reached")
            row = self._insert_key(w, target, key, name=name, expires_at=expires_at, is_default=False)
            audit.record(w, caller, "user-key/create", [row["key_id"]], {"user_id": target})
        return {**public_key(row), "key_value": key}

    def list_keys(self, caller: Caller, user_id: str | None, page: Page) -> Row:
        """user-key/list: the user's keys, newest first, masked."""
        target = user_id or caller_id(caller)
        self._key_scope(caller, target)
        with self.store.reading(caller.service_id) as r:
            require_user(r, target)
            where = {"user_id": target}
            return read_page(r, MetaKind.USER_KEY, where, ["-created_at", "key_id"], page, public_key)

    def _owned_key(self, r: MetaReader, caller: Caller, key_id: str) -> Row:
        key = r.get(MetaKind.USER_KEY, key_id)
        owner = live_user(r, key["user_id"]) if key else None
        if key is None or owner is None:
            raise MetaError("user_key_not_found", f"user key not found: {key_id}")
        if owner["user_type"] == SYSTEM_ADMIN and owner["user_id"] != caller.user_id:
            raise MetaError("user_key_not_found", f"user key not found: {key_id}")
        self._key_scope(caller, key["user_id"])
        return key

    def get_key(self, caller: Caller, key_id: str) -> Row:
        """user-key/get."""
        with self.store.reading(caller.service_id) as r:
            return public_key(self._owned_key(r, caller, key_id))

    def revoke_key(self, caller: Caller, key_id: str) -> None:
        """user-key/revoke: refused at once; the last active key of a user cannot go."""
        with self.store.writing(caller.service_id) as w:
            key = self._owned_key(w, caller, key_id)
            if key["status"] != ACTIVE:
                return
            others = w.find(
                MetaKind.USER_KEY,
                {"user_id": key["user_id"], "status": ACTIVE, "key_id !=": key_id},
                order_by=["created_at", "key_id"],
            )
            if not others:
                raise MetaError("last_key_cannot_revoke", "cannot revoke the last active user key")
            now = now_iso()
            w.update(MetaKind.USER_KEY, key_id, {"status": REVOKED, "revoked_at": now, "is_default": False})
            if key["is_default"]:
                w.update(MetaKind.USER_KEY, others[0]["key_id"], {"is_default": True})
            audit.record(w, caller, "user-key/revoke", [key_id], {"user_id": key["user_id"]})

    def update_key(self, caller: Caller, key_id: str, changes: Mapping[str, Any]) -> Row:
        """user-key/update: name and expiry (null clears it); an expired key stays expired."""
        with self.store.writing(caller.service_id) as w:
            key = self._owned_key(w, caller, key_id)
            patch = {k: v for k, v in changes.items() if k in ("name", "expires_at")}
            if "expires_at" in patch:
                if _expired(key, self.now_ms()):
                    # Renewing would bring back a credential its holder was told had lapsed.
                    raise FieldError("expires_at", "the key has expired and cannot be renewed; create a new key")
                _future_expiry(patch["expires_at"], self.now_ms())
            w.update(MetaKind.USER_KEY, key_id, patch)
            audit.record(w, caller, "user-key/update", [key_id], {"fields": sorted(patch)})
            row = w.get(MetaKind.USER_KEY, key_id)
        assert row is not None
        return public_key(row)
