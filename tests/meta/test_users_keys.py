"""Users, user keys and auth/verify on /v3/meta (the original's user/*, user-key/* and auth/* routes).

Every call goes through the real HTTP app over a real SQLite file. Each refusal asserts the
envelope code, the HTTP status, the exact message and that no row changed (audit log included).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import time
from collections.abc import Callable
from typing import Any

from memhub.meta.users import Users
from memhub.timeutil import parse_iso_ms
from tests.meta.org import Member, Org, lapse_key, table_snapshot
from tests.meta.org import refused as refused_unchanged
from tests.meta.shapes import ISO_MS, KEY_FIELDS, KEY_ID, USER_FIELDS, USER_ID, USER_KEY

PAST = "2001-01-01T00:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"
INVALID_USER_KEY = "unauthorized: invalid_user_key"
NOT_ADMIN = "permission_denied: user management requires system admin"
OTHERS_KEYS = "permission_denied: cannot access another user's keys"


def refused(org: Org, who: Member | str | None, path: str, body: dict[str, Any], code: int, message: str) -> None:
    """The shared refusal check (code, HTTP status, exact message, no row changed) and a request id."""
    envelope = refused_unchanged(org, who, path, body, code, message)
    assert envelope["request_id"]


def whoami(org: Org, key: str) -> Any:
    """user/get of the key's own user, authenticated by that key: the raw response."""
    return org.gw.client.post("/v3/meta/user/get", json={"user_key": key}, headers=org.headers(key))


def key_works(org: Org, key: str) -> bool:
    response = whoami(org, key)
    if response.status_code == 401:
        assert response.json()["message"] == INVALID_USER_KEY
        return False
    assert response.status_code == 200, response.json()
    return True


def bearer_call(org: Org, token: str, path: str, body: dict[str, Any], user_key: str | None = None) -> Any:
    headers = {"authorization": f"Bearer {token}", "x-tdai-service-id": org.service}
    if user_key is not None:
        headers["x-tdai-user-key"] = user_key
    return org.gw.client.post(path, json=body, headers=headers)


def verify(org: Org, user_key: str) -> Any:
    """auth/verify with the gateway key and no user-key header."""
    response = org.gw.client.post(
        "/v3/meta/auth/verify",
        json={"user_key": user_key},
        headers={"authorization": f"Bearer {org.gw.key}", "x-tdai-service-id": org.service},
    )
    envelope = response.json()
    assert response.status_code == 200 and envelope["code"] == 0, envelope
    return envelope["data"]


def new_key(org: Org, who: Member, **body: Any) -> dict[str, Any]:
    time.sleep(0.003)  # distinct created_at (millisecond resolution) keeps "oldest" well defined
    return org.ok(who, "/v3/meta/user-key/create", body)


def keys_of(org: Org, who: Member, user_id: str | None = None) -> dict[str, dict[str, Any]]:
    data = org.ok(who, "/v3/meta/user-key/list", {"user_id": user_id} if user_id else {})
    return {k["key_id"]: k for k in data["items"]}


def default_key_id(org: Org, who: Member) -> str:
    (key_id,) = [k for k, v in keys_of(org, who).items() if v["is_default"]]
    return key_id


# -- user/create, user/create-with-key -----------------------------------------------------------
def test_create_user_returns_exactly_the_created_shape_and_a_working_default_key(org: Org) -> None:
    data = org.ok(org.admin, "/v3/meta/user/create", {"username": "alice"})
    assert set(data) == {"user_id", "user_type", "created_at", "default_user_key"}
    assert USER_ID.fullmatch(data["user_id"])
    assert USER_KEY.fullmatch(data["default_user_key"])
    assert ISO_MS.fullmatch(data["created_at"])
    assert data["user_type"] == "normal"
    alice = Member(data["user_id"], data["default_user_key"], "alice")
    me = org.ok(alice, "/v3/meta/user/get", {"user_id": alice.user_id})
    assert me == {
        "user_id": alice.user_id,
        "user_type": "normal",
        "username": "alice",
        "created_at": data["created_at"],
    }
    keys = list(keys_of(org, alice).values())
    assert len(keys) == 1 and keys[0]["is_default"] is True and keys[0]["status"] == "active"
    assert keys[0]["key_prefix"] == "sk-mem-****" + data["default_user_key"][-4:]


def test_create_user_keeps_the_optional_fields_and_defaults(org: Org) -> None:
    body = {
        "username": "bob",
        "user_id": "usr-chosen0001",
        "display_name": "Bob B.",
        "email": "bob@example.com",
        "auth_provider": "oidc",
        "external_id": "ext-42",
    }
    assert org.ok(org.admin, "/v3/meta/user/create", body)["user_id"] == "usr-chosen0001"
    plain = org.ok(org.admin, "/v3/meta/user/create", {"username": "carol"})["user_id"]
    rows = org.gw.client.post("/v3/internal/meta/user/list-by-instance", json={}, headers=org.headers(None)).json()[
        "data"
    ]["items"]
    by_id = {r["user_id"]: r for r in rows}
    bob, carol = by_id["usr-chosen0001"], by_id[plain]
    assert (bob["display_name"], bob["email"], bob["auth_provider"], bob["external_id"]) == (
        "Bob B.",
        "bob@example.com",
        "oidc",
        "ext-42",
    )
    assert (carol["auth_provider"], carol["external_id"], carol["status"]) == ("local", plain, "active")


def test_create_user_needs_a_system_admin(org: Org) -> None:
    alice = org.user("alice")
    team = org.team(alice, "alice-team")  # a team owner/admin is still not a system admin
    assert team
    refused(org, alice, "/v3/meta/user/create", {"username": "eve"}, 403, NOT_ADMIN)
    refused(org, alice, "/v3/meta/user/create-with-key", {"username": "eve", "user_key": "k" * 20}, 403, NOT_ADMIN)


def test_create_user_with_an_existing_id_is_a_conflict(org: Org) -> None:
    alice = org.user("alice")
    refused(
        org,
        org.admin,
        "/v3/meta/user/create",
        {"username": "again", "user_id": alice.user_id},
        409,
        f"duplicate_entry: user already exists: {alice.user_id}",
    )


def test_create_with_key_uses_the_given_key(org: Org) -> None:
    chosen = "sk-mem-chosen-by-the-operator-0001"
    data = org.ok(org.admin, "/v3/meta/user/create-with-key", {"username": "dora", "user_key": chosen})
    assert set(data) == {"user_id", "user_type", "created_at", "default_user_key"}
    assert data["default_user_key"] == chosen and data["user_type"] == "normal"
    assert whoami(org, chosen).json()["data"]["user_id"] == data["user_id"]


def test_create_with_key_refuses_a_key_already_in_use(org: Org) -> None:
    alice = org.user("alice")
    for taken in (alice.key, org.admin.key):
        refused(
            org,
            org.admin,
            "/v3/meta/user/create-with-key",
            {"username": "copycat", "user_key": taken},
            409,
            "duplicate_user_key: user_key already exists",
        )


def test_create_with_key_refuses_the_value_of_a_revoked_key(org: Org) -> None:
    """A revoked key is kept (status revoked): its value must never become someone else's key."""
    alice = org.user("alice")
    spare = new_key(org, alice)
    org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": spare["key_id"]})
    refused(
        org,
        org.admin,
        "/v3/meta/user/create-with-key",
        {"username": "heir", "user_key": spare["key_value"]},
        409,
        "duplicate_user_key: user_key already exists",
    )


def test_user_quota_counts_live_users_of_the_instance(make_org: Callable[..., Org]) -> None:
    org = make_org("data", max_users_per_instance=3)
    gw = org.gw
    org.user("alice")
    bob = org.user("bob")  # admin + 2 = 3 users
    message = "user_limit_exceeded: user limit 3 reached for instance svc-a (current: 3)"
    refused(org, org.admin, "/v3/meta/user/create", {"username": "carol"}, 409, message)
    refused(org, org.admin, "/v3/meta/user/create-with-key", {"username": "carol", "user_key": "c" * 24}, 409, message)
    # Another instance has its own quota.
    other = Org(gw, service="svc-b")
    other.user("x")
    # A deleted user no longer counts.
    org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [bob.user_id]})
    org.user("carol")


# -- user/get ------------------------------------------------------------------------------------
def test_get_user_by_id_and_by_key(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    by_id = org.ok(alice, "/v3/meta/user/get", {"user_id": alice.user_id})
    by_key = org.ok(alice, "/v3/meta/user/get", {"user_key": alice.key})
    assert by_id == by_key and set(by_id) == USER_FIELDS
    assert (by_id["username"], by_id["user_type"]) == ("alice", "normal")
    # user_id wins over user_key, as in the original.
    assert org.ok(alice, "/v3/meta/user/get", {"user_id": alice.user_id, "user_key": bob.key}) == by_id
    # The system admin sees every normal user, with their type; and itself.
    assert org.ok(org.admin, "/v3/meta/user/get", {"user_id": bob.user_id})["user_type"] == "normal"
    assert org.ok(org.admin, "/v3/meta/user/get", {"user_key": bob.key})["user_id"] == bob.user_id
    me = org.ok(org.admin, "/v3/meta/user/get", {"user_id": org.admin.user_id})
    assert (me["user_type"], me["username"]) == ("system_admin", "root")


def test_get_user_hides_everyone_else_from_a_normal_user(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    org.join(org.team_id, org.admin, alice)
    org.join(org.team_id, org.admin, bob)  # team peers are not visible through user/get either
    path = "/v3/meta/user/get"
    refused(org, alice, path, {"user_id": bob.user_id}, 404, f"user_not_found: user not found: {bob.user_id}")
    refused(
        org, alice, path, {"user_id": org.admin.user_id}, 404, f"user_not_found: user not found: {org.admin.user_id}"
    )
    refused(org, alice, path, {"user_id": "usr-nobody0000"}, 404, "user_not_found: user not found: usr-nobody0000")
    refused(org, alice, path, {"user_key": "sk-mem-" + "x" * 32}, 404, "user_not_found: user not found for user_key")


def test_get_user_by_a_revoked_or_expired_key_finds_nobody(org: Org) -> None:
    alice = org.user("alice")
    spare = new_key(org, alice)
    stale = new_key(org, alice, expires_at=FUTURE)
    lapse_key(org, stale["key_id"])
    org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": spare["key_id"]})
    for key in (spare["key_value"], stale["key_value"]):
        refused(
            org, org.admin, "/v3/meta/user/get", {"user_key": key}, 404, "user_not_found: user not found for user_key"
        )


# -- user/delete ---------------------------------------------------------------------------------
def test_delete_user_needs_a_system_admin(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    refused(org, alice, "/v3/meta/user/delete", {"user_ids": [bob.user_id]}, 403, NOT_ADMIN)


def test_the_last_system_admin_cannot_be_deleted(org: Org) -> None:
    alice = org.user("alice")
    message = "last_system_admin: cannot delete the last system_admin user"
    refused(org, org.admin, "/v3/meta/user/delete", {"user_ids": [org.admin.user_id]}, 409, message)
    # All or nothing: alice, listed with the admin, is not deleted either.
    refused(org, org.admin, "/v3/meta/user/delete", {"user_ids": [alice.user_id, org.admin.user_id]}, 409, message)
    assert key_works(org, alice.key) and key_works(org, org.admin.key)


def test_delete_user_refuses_their_keys_at_once_and_drops_their_memberships(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    team = org.team(bob, "bob-team")
    org.join(team, bob, alice)
    org.join(org.team_id, org.admin, alice, role="admin")
    spare = new_key(org, alice)["key_value"]
    assert key_works(org, alice.key) and key_works(org, spare)

    result = org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [alice.user_id, "usr-nobody0000"]})
    assert result == {"deleted_ids": [alice.user_id], "failed": [{"id": "usr-nobody0000", "reason": "not_found"}]}

    # Every key of the deleted user is refused on the very next request, and by auth/verify.
    for key in (alice.key, spare):
        assert not key_works(org, key)
        assert verify(org, key) == {"valid": False, "user": None}
        response = bearer_call(org, key, "/v3/meta/user/get", {"user_id": alice.user_id})
        assert (response.status_code, response.json()["message"]) == (401, INVALID_USER_KEY)
    # Memberships are gone.
    for team_id, admin in ((team, bob), (org.team_id, org.admin)):
        members = org.ok(admin, "/v3/meta/team-member/list", {"team_id": team_id})["items"]
        assert alice.user_id not in {m["user_id"] for m in members}
        refused(
            org,
            admin,
            "/v3/meta/team-member/get",
            {"team_id": team_id, "user_id": alice.user_id},
            404,
            f"member_not_found: member not found: {team_id}/{alice.user_id}",
        )
    con = org.gw.store._reader()
    assert con.execute("SELECT COUNT(*) FROM meta_team_members WHERE user_id = ?", (alice.user_id,)).fetchone()[0] == 0
    # The user is gone for every reader.
    refused(
        org,
        org.admin,
        "/v3/meta/user/get",
        {"user_id": alice.user_id},
        404,
        f"user_not_found: user not found: {alice.user_id}",
    )
    listed = org.ok(org.admin, "/v3/meta/user/list", {})["items"]
    assert alice.user_id not in {u["user_id"] for u in listed}
    refused(
        org,
        org.admin,
        "/v3/meta/user-key/list",
        {"user_id": alice.user_id},
        404,
        f"user_not_found: user not found: {alice.user_id}",
    )
    refused(
        org,
        bob,
        "/v3/meta/team-member/add",
        {"team_id": team, "user_id": alice.user_id},
        404,
        f"user_not_found: not found: {alice.user_id}",
    )
    # Deleting again reports it as not found.
    again = org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [alice.user_id]})
    assert again == {"deleted_ids": [], "failed": [{"id": alice.user_id, "reason": "not_found"}]}


def test_a_deleted_user_id_is_never_handed_out_again(org: Org) -> None:
    alice = org.user("alice")
    org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [alice.user_id]})
    refused(
        org,
        org.admin,
        "/v3/meta/user/create",
        {"username": "alice2", "user_id": alice.user_id},
        409,
        f"duplicate_entry: user already exists: {alice.user_id}",
    )


# -- user/list -----------------------------------------------------------------------------------
def ids(items: list[dict[str, Any]]) -> set[str]:
    return {item["user_id"] for item in items}


def test_list_users_without_team_is_for_system_admins(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    refused(
        org,
        alice,
        "/v3/meta/user/list",
        {},
        400,
        "missing_team_id: team_id is required for non-system-admin callers",
    )
    page = org.ok(org.admin, "/v3/meta/user/list", {})
    assert (page["total"], page["limit"], page["offset"]) == (3, 20, 0)
    assert ids(page["items"]) == {org.admin.user_id, alice.user_id, bob.user_id}
    assert all(set(u) == USER_FIELDS for u in page["items"])
    # Filters and paging.
    assert ids(org.ok(org.admin, "/v3/meta/user/list", {"username": "bob"})["items"]) == {bob.user_id}
    picked = org.ok(org.admin, "/v3/meta/user/list", {"user_ids": [alice.user_id, "usr-nobody0000"]})
    assert ids(picked["items"]) == {alice.user_id} and picked["total"] == 1
    first = org.ok(org.admin, "/v3/meta/user/list", {"limit": 2})
    rest = org.ok(org.admin, "/v3/meta/user/list", {"limit": 2, "offset": 2})
    assert (len(first["items"]), len(rest["items"]), first["total"], rest["offset"]) == (2, 1, 3, 2)
    assert ids(first["items"]) | ids(rest["items"]) == ids(page["items"])


def test_list_users_of_a_team_for_a_plain_member_is_only_themself(org: Org) -> None:
    alice, bob, carol = org.user("alice"), org.user("bob"), org.user("carol")
    team = org.team(alice, "t")
    org.join(team, alice, bob)
    page = org.ok(bob, "/v3/meta/user/list", {"team_id": team})
    assert page == {
        "items": [
            {
                "user_id": bob.user_id,
                "user_type": "normal",
                "username": "bob",
                "created_at": page["items"][0]["created_at"],
            }
        ],
        "total": 1,
        "limit": 20,
        "offset": 0,
    }
    assert org.ok(bob, "/v3/meta/user/list", {"team_id": team, "offset": 1}) == {
        "items": [],
        "total": 1,
        "limit": 20,
        "offset": 1,
    }
    message = "filter_not_allowed: filters are not allowed for normal team members"
    refused(org, bob, "/v3/meta/user/list", {"team_id": team, "user_ids": [alice.user_id]}, 400, message)
    refused(org, bob, "/v3/meta/user/list", {"team_id": team, "username": "alice"}, 400, message)
    refused(org, carol, "/v3/meta/user/list", {"team_id": team}, 403, "permission_denied: not a team member")


def test_list_users_of_a_team_for_a_team_admin_is_the_members(org: Org) -> None:
    alice, bob, carol, dave = org.user("alice"), org.user("bob"), org.user("carol"), org.user("dave")
    team = org.team(alice, "t")
    org.join(team, alice, bob)
    org.join(team, alice, carol, role="reviewer")
    page = org.ok(alice, "/v3/meta/user/list", {"team_id": team})
    assert ids(page["items"]) == {alice.user_id, bob.user_id, carol.user_id} and page["total"] == 3
    assert dave.user_id not in ids(page["items"])
    assert {u["username"] for u in page["items"]} == {"alice", "bob", "carol"}
    assert ids(org.ok(alice, "/v3/meta/user/list", {"team_id": team, "username": "carol"})["items"]) == {carol.user_id}
    assert ids(
        org.ok(alice, "/v3/meta/user/list", {"team_id": team, "user_ids": [bob.user_id, dave.user_id]})["items"]
    ) == {bob.user_id}
    # The system admin lists a team's active members too.
    assert ids(org.ok(org.admin, "/v3/meta/user/list", {"team_id": team})["items"]) == ids(page["items"])


def test_a_team_admin_never_sees_the_system_admin_in_user_list(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    org.join(org.team_id, org.admin, alice, role="admin")
    org.join(org.team_id, org.admin, bob)
    page = org.ok(alice, "/v3/meta/user/list", {"team_id": org.team_id})
    assert ids(page["items"]) == {alice.user_id, bob.user_id}
    assert page["total"] == 2


# -- user-key/create, list, get ------------------------------------------------------------------
def test_create_key_shows_the_value_once_and_never_again(org: Org) -> None:
    alice = org.user("alice")
    created = new_key(org, alice, name="ci")
    assert set(created) == KEY_FIELDS | {"key_value"}
    assert USER_KEY.fullmatch(created["key_value"]) and KEY_ID.fullmatch(created["key_id"])
    assert created["key_prefix"] == "sk-mem-****" + created["key_value"][-4:]
    assert (created["user_id"], created["name"], created["status"]) == (alice.user_id, "ci", "active")
    assert (created["is_default"], created["expires_at"], created["revoked_at"]) == (False, None, None)
    assert ISO_MS.fullmatch(created["created_at"])
    assert key_works(org, created["key_value"])
    assert whoami(org, created["key_value"]).json()["data"]["user_id"] == alice.user_id

    listed = org.gw.client.post("/v3/meta/user-key/list", json={}, headers=org.headers(alice))
    got = org.gw.client.post("/v3/meta/user-key/get", json={"key_id": created["key_id"]}, headers=org.headers(alice))
    for response in (listed, got):
        assert response.status_code == 200
        assert created["key_value"] not in response.text and alice.key not in response.text
        assert "key_value" not in response.text and "key_hash" not in response.text
    page = listed.json()["data"]
    assert (page["total"], page["limit"], page["offset"]) == (2, 20, 0)
    assert page["items"][0]["key_id"] == created["key_id"]  # newest first
    assert all(set(k) == KEY_FIELDS and k["key_prefix"].startswith("sk-mem-****") for k in page["items"])
    assert got.json()["data"] == {k: v for k, v in created.items() if k != "key_value"} | {
        "last_used_at": got.json()["data"]["last_used_at"]
    }


def test_create_key_for_another_user(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    refused(org, alice, "/v3/meta/user-key/create", {"user_id": bob.user_id}, 403, OTHERS_KEYS)
    refused(org, alice, "/v3/meta/user-key/list", {"user_id": bob.user_id}, 403, OTHERS_KEYS)
    made = org.ok(org.admin, "/v3/meta/user-key/create", {"user_id": bob.user_id, "name": "by-admin"})
    assert made["user_id"] == bob.user_id and key_works(org, made["key_value"])
    assert made["key_id"] in keys_of(org, org.admin, bob.user_id)
    refused(
        org,
        org.admin,
        "/v3/meta/user-key/create",
        {"user_id": "usr-nobody0000"},
        404,
        "user_not_found: user not found: usr-nobody0000",
    )


def test_active_key_quota(make_org: Callable[..., Org]) -> None:
    org = make_org("data", max_active_keys_per_user=3)
    alice = org.user("alice")  # 1 active (default)
    first = new_key(org, alice)
    new_key(org, alice)  # 3 active
    message = "key_limit_exceeded: active user key limit 3 reached"
    refused(org, alice, "/v3/meta/user-key/create", {}, 409, message)
    refused(org, org.admin, "/v3/meta/user-key/create", {"user_id": alice.user_id}, 409, message)
    # A revoked key no longer counts.
    org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": first["key_id"]})
    new_key(org, alice)
    refused(org, alice, "/v3/meta/user-key/create", {}, 409, message)


def test_the_default_quota_is_twenty_active_keys(org: Org) -> None:
    alice = org.user("alice")
    for _ in range(19):
        org.ok(alice, "/v3/meta/user-key/create", {})
    refused(org, alice, "/v3/meta/user-key/create", {}, 409, "key_limit_exceeded: active user key limit 20 reached")


# -- user-key/get, update, and another user's keys ------------------------------------------------
def test_update_key_name_and_expiry_and_null_clears(org: Org) -> None:
    alice = org.user("alice")
    key = new_key(org, alice, name="old")
    path = "/v3/meta/user-key/update"
    updated = org.ok(alice, path, {"key_id": key["key_id"], "name": "new", "expires_at": FUTURE})
    assert set(updated) == KEY_FIELDS
    assert (updated["name"], updated["expires_at"]) == ("new", FUTURE)
    assert org.ok(alice, "/v3/meta/user-key/get", {"key_id": key["key_id"]})["expires_at"] == FUTURE
    # Omitted fields stay; an explicit null clears.
    cleared = org.ok(alice, path, {"key_id": key["key_id"], "expires_at": None})
    assert (cleared["name"], cleared["expires_at"]) == ("new", None)
    assert key_works(org, key["key_value"])


def test_keys_of_another_user(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    bobs = new_key(org, bob)["key_id"]
    admins = default_key_id(org, org.admin)
    for path, extra in (
        ("/v3/meta/user-key/get", {}),
        ("/v3/meta/user-key/update", {"name": "mine"}),
        ("/v3/meta/user-key/revoke", {}),
    ):
        before = table_snapshot(org.gw)
        envelope = org.fails(alice, path, {"key_id": bobs, **extra}, 403)
        assert envelope["message"].startswith("permission_denied: cannot access another user's key"), envelope
        assert table_snapshot(org.gw) == before
        # The system admin's keys do not exist for anyone else.
        refused(org, alice, path, {"key_id": admins, **extra}, 404, f"user_key_not_found: user key not found: {admins}")
        refused(
            org,
            alice,
            path,
            {"key_id": "uky-nothing000", **extra},
            404,
            "user_key_not_found: user key not found: uky-nothing000",
        )
    # The system admin manages normal users' keys.
    assert org.ok(org.admin, "/v3/meta/user-key/get", {"key_id": bobs})["user_id"] == bob.user_id
    assert org.ok(org.admin, "/v3/meta/user-key/update", {"key_id": bobs, "name": "ops"})["name"] == "ops"
    assert org.ok(org.admin, "/v3/meta/user-key/revoke", {"key_id": bobs}) == {"ok": True}


# -- user-key/revoke ------------------------------------------------------------------------------
def test_a_revoked_key_is_refused_on_the_very_next_request(org: Org) -> None:
    alice = org.user("alice")
    spare = new_key(org, alice)
    assert key_works(org, spare["key_value"])
    assert org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": spare["key_id"]}) == {"ok": True}
    assert not key_works(org, spare["key_value"])
    assert verify(org, spare["key_value"]) == {"valid": False, "user": None}
    response = bearer_call(org, spare["key_value"], "/v3/meta/user-key/list", {})
    assert (response.status_code, response.json()["code"], response.json()["message"]) == (401, 401, INVALID_USER_KEY)
    # Kept, with status revoked.
    row = keys_of(org, alice)[spare["key_id"]]
    assert (row["status"], row["is_default"]) == ("revoked", False)
    assert ISO_MS.fullmatch(row["revoked_at"])
    assert key_works(org, alice.key)


def test_a_key_revoking_itself_stops_working(org: Org) -> None:
    alice = org.user("alice")
    spare = new_key(org, alice)
    own = Member(alice.user_id, spare["key_value"], "alice")
    assert org.ok(own, "/v3/meta/user-key/revoke", {"key_id": spare["key_id"]}) == {"ok": True}
    assert not key_works(org, spare["key_value"])


def test_the_last_active_key_cannot_be_revoked(org: Org) -> None:
    alice = org.user("alice")
    default = default_key_id(org, alice)
    message = "last_key_cannot_revoke: cannot revoke the last active user key"
    refused(org, alice, "/v3/meta/user-key/revoke", {"key_id": default}, 409, message)
    refused(org, org.admin, "/v3/meta/user-key/revoke", {"key_id": default}, 409, message)
    # A revoked key does not count as a remaining active one.
    spare = new_key(org, alice)
    org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": spare["key_id"]})
    refused(org, alice, "/v3/meta/user-key/revoke", {"key_id": default}, 409, message)
    assert key_works(org, alice.key)


def test_revoking_the_default_key_promotes_the_oldest_other_active_key(org: Org) -> None:
    alice = org.user("alice")
    default = default_key_id(org, alice)
    older, newer = new_key(org, alice), new_key(org, alice)
    org.ok(alice, "/v3/meta/user-key/revoke", {"key_id": default})
    keys = keys_of(org, Member(alice.user_id, newer["key_value"], "alice"))
    assert keys[older["key_id"]]["is_default"] is True
    assert keys[newer["key_id"]]["is_default"] is False
    assert (keys[default]["is_default"], keys[default]["status"]) == (False, "revoked")
    assert not key_works(org, alice.key)
    assert key_works(org, older["key_value"]) and key_works(org, newer["key_value"])


# -- expiry ---------------------------------------------------------------------------------------
def test_a_key_cannot_be_created_already_expired(org: Org) -> None:
    alice = org.user("alice")
    just_now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 1))
    for past in (PAST, just_now):
        refused(org, alice, "/v3/meta/user-key/create", {"expires_at": past}, 400, "expires_at: must be in the future")
    assert new_key(org, alice, expires_at=FUTURE)["expires_at"] == FUTURE


def test_an_expiry_cannot_move_to_the_past_and_a_lapsed_key_cannot_be_revived(org: Org) -> None:
    alice = org.user("alice")
    spare = new_key(org, alice, expires_at=FUTURE)
    assert key_works(org, spare["key_value"])
    path = "/v3/meta/user-key/update"
    refused(org, alice, path, {"key_id": spare["key_id"], "expires_at": PAST}, 400, "expires_at: must be in the future")
    assert key_works(org, spare["key_value"])
    lapse_key(org, spare["key_id"])
    assert not key_works(org, spare["key_value"])
    assert verify(org, spare["key_value"]) == {"valid": False, "user": None}
    # Neither a later expiry nor none at all brings a lapsed key back, for its owner or an admin.
    lapsed = "expires_at: the key has expired and cannot be renewed; create a new key"
    for who in (alice, org.admin):
        for expiry in (FUTURE, None):
            refused(org, who, path, {"key_id": spare["key_id"], "expires_at": expiry}, 400, lapsed)
    assert not key_works(org, spare["key_value"])
    # Its name may still change.
    assert org.ok(alice, path, {"key_id": spare["key_id"], "name": "old laptop"})["name"] == "old laptop"


# -- auth/verify and user keys as the Bearer token ---------------------------------------------------
def test_auth_verify_needs_no_user_key(org: Org) -> None:
    alice = org.user("alice")
    valid = verify(org, alice.key)
    assert valid["valid"] is True and set(valid["user"]) == USER_FIELDS
    assert (valid["user"]["user_id"], valid["user"]["username"], valid["user"]["user_type"]) == (
        alice.user_id,
        "alice",
        "normal",
    )
    assert verify(org, org.admin.key)["user"]["user_type"] == "system_admin"
    assert verify(org, "sk-mem-" + "A" * 32) == {"valid": False, "user": None}
    assert verify(org, "not-a-key") == {"valid": False, "user": None}
    # A key of this instance is unknown to another one.
    other = org.gw.client.post(
        "/v3/meta/auth/verify",
        json={"user_key": alice.key},
        headers={"authorization": f"Bearer {org.gw.key}", "x-tdai-service-id": "svc-b"},
    ).json()
    assert other["data"] == {"valid": False, "user": None}


def test_auth_verify_still_needs_the_gateway_layer_and_a_service_id(org: Org) -> None:
    alice = org.user("alice")
    client = org.gw.client
    no_bearer = client.post(
        "/v3/meta/auth/verify", json={"user_key": alice.key}, headers={"x-tdai-service-id": "svc-a"}
    )
    assert (no_bearer.status_code, no_bearer.json()["message"]) == (401, "Unauthorized: missing Bearer token")
    no_service = client.post(
        "/v3/meta/auth/verify", json={"user_key": alice.key}, headers={"authorization": f"Bearer {org.gw.key}"}
    )
    assert (no_service.status_code, no_service.json()["code"]) == (400, 400)
    assert no_service.json()["message"] == "missing_instance_id: x-tdai-service-id header is required"
    # A user key may stand in for the gateway key here too.
    as_bearer = bearer_call(org, alice.key, "/v3/meta/auth/verify", {"user_key": alice.key}).json()
    assert as_bearer["data"]["valid"] is True


def test_a_user_key_as_the_bearer_token_authenticates_on_the_management_plane(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    team = org.team(alice, "t")
    response = bearer_call(org, alice.key, "/v3/meta/user/get", {"user_id": alice.user_id})
    assert response.status_code == 200 and response.json()["data"]["username"] == "alice"
    members = bearer_call(org, alice.key, "/v3/meta/team-member/list", {"team_id": team}).json()["data"]["items"]
    assert [m["user_id"] for m in members] == [alice.user_id]
    # The same key again in the header is fine; a different one is refused.
    same = bearer_call(org, alice.key, "/v3/meta/user/get", {"user_id": alice.user_id}, user_key=alice.key)
    assert same.status_code == 200
    before = table_snapshot(org.gw)
    for token, header in ((alice.key, bob.key), ("sk-mem-" + "Z" * 32, None)):
        response = bearer_call(org, token, "/v3/meta/user/get", {"user_id": alice.user_id}, user_key=header)
        assert (response.status_code, response.json()["message"]) == (401, INVALID_USER_KEY)
    garbage = bearer_call(org, "not-a-gateway-key", "/v3/meta/user/get", {"user_id": alice.user_id})
    assert (garbage.status_code, garbage.json()["message"]) == (401, "Unauthorized: invalid token")
    # An authenticated user acts as themself only: a user key Bearer cannot create users.
    denied = bearer_call(org, alice.key, "/v3/meta/user/create", {"username": "x"})
    assert (denied.status_code, denied.json()["message"]) == (403, NOT_ADMIN)
    assert table_snapshot(org.gw) == before


# -- storage --------------------------------------------------------------------------------------
def test_user_keys_are_stored_only_as_keyed_hashes(org: Org) -> None:
    alice = org.user("alice")
    chosen = "sk-mem-operator-chosen-key-value-1"
    org.ok(org.admin, "/v3/meta/user/create-with-key", {"username": "dora", "user_key": chosen})
    extra = new_key(org, alice)["key_value"]
    keys = [org.admin.key, alice.key, chosen, extra]
    org.gw.store._reader().execute("SELECT 1").fetchall()
    data_dir = org.gw.data_dir
    files = [p for p in data_dir.iterdir() if p.name.startswith("memhub.db")]
    assert {p.name for p in files} >= {"memhub.db"}
    for path in files:
        blob = path.read_bytes()
        for key in keys:
            assert key.encode() not in blob, (path.name, key)
            assert key.removeprefix("sk-mem-").encode() not in blob, (path.name, key)
            assert hashlib.sha256(key.encode()).hexdigest().encode() not in blob  # not an unkeyed hash
    secret_file = data_dir / "key-secret"
    assert secret_file.stat().st_mode & 0o077 == 0, oct(secret_file.stat().st_mode)
    secret = secret_file.read_text().strip().encode()
    stored = {row[0] for row in org.gw.store._reader().execute("SELECT key_hash FROM meta_user_keys")}
    for key in keys:
        assert hmac.new(secret, key.encode(), hashlib.sha256).hexdigest() in stored


def test_a_key_authenticates_until_the_millisecond_it_expires(org: Org) -> None:
    """The key store judges expiries by its own clock (injected here): the check made by every request
    (`authenticate`) and the one behind the proxy's session tokens (`key_caller`) refuse at the expiry exactly, and
    a caller carries the expiry so that a check remembered for a moment ends there too."""
    alice = org.user("alice")
    key = new_key(org, alice, expires_at="2999-01-01T00:00:00.250Z")
    expiry = parse_iso_ms(key["expires_at"])
    assert expiry is not None
    now = [(expiry - 1) / 1000]
    users: Users = dataclasses.replace(org.gw.client.app.state.hub.meta.users, clock=lambda: now[0])  # type: ignore[attr-defined]
    caller = users.authenticate(org.service, key["key_value"])
    assert caller is not None and caller.key_expires_ms == expiry
    assert not caller.key_expired(expiry - 1) and caller.key_expired(expiry)
    by_id = users.key_caller(org.service, key["key_id"])
    assert by_id is not None and by_id.key_expires_ms == expiry
    now[0] = expiry / 1000
    assert users.authenticate(org.service, key["key_value"]) is None
    assert users.key_caller(org.service, key["key_id"]) is None
    assert users.verify(org.service, key["key_value"]) == {"valid": False, "user": None}
    assert key_works(org, key["key_value"])  # the gateway's own clock is still far from 2999
    forever = users.authenticate(org.service, alice.key)
    assert forever is not None and forever.key_expires_ms is None and not forever.key_expired(2**62)
