"""The internal routes (`/v3/internal/meta/*`), the management audit log and request-id adoption.

init-admin and list-by-instance open with the gateway key only (the original's "internal" authentication
layer); audit/list is a memhub addition for system admins: one append-only entry per management action,
written in the same transaction, carrying the request id the caller saw.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.meta.org import Member, Org, refused, rows, table_snapshot
from tests.meta.shapes import AGENT_ID, AUDIT_FIELDS, REQ_ID, TEAM_ID, USER_ID, USER_KEY

INIT = "/v3/internal/meta/user/init-admin"
BY_INSTANCE = "/v3/internal/meta/user/list-by-instance"
AUDIT = "/v3/meta/audit/list"


def internal(
    gw: Gateway, path: str, body: dict[str, Any], *, token: str | None = None, service: str | None = "svc-a"
) -> Any:
    headers = {}
    if token != "":
        headers["authorization"] = f"Bearer {token or gw.key}"
    if service is not None:
        headers["x-tdai-service-id"] = service
    return gw.client.post(path, json=body, headers=headers)


def refused_raw(gw: Gateway, response_of: Any, status: int, message: str) -> dict[str, Any]:
    """The raw call fails with this status (envelope code too) and message, and changes nothing.

    `message` is compared exactly unless it ends with "…", then as a prefix.
    """
    before = table_snapshot(gw)
    response = response_of()
    envelope = response.json()
    if message.endswith("…"):
        assert (response.status_code, envelope["code"]) == (status, status), envelope
        assert envelope["message"].startswith(message[:-1]), envelope
    else:
        assert (response.status_code, envelope["code"], envelope["message"]) == (status, status, message), envelope
    assert table_snapshot(gw) == before
    return envelope


# -- init-admin ---------------------------------------------------------------------------------
def test_init_admin_creates_the_admin_its_default_team_and_agent(gw: Gateway) -> None:
    response = internal(gw, INIT, {"username": "root"})
    envelope = response.json()
    assert (response.status_code, envelope["code"], envelope["message"]) == (200, 0, "ok")
    data = envelope["data"]
    assert set(data) == {"user_id", "user_key", "team_id", "agent_id"}
    assert USER_ID.fullmatch(data["user_id"]) and USER_KEY.fullmatch(data["user_key"])
    assert TEAM_ID.fullmatch(data["team_id"]) and AGENT_ID.fullmatch(data["agent_id"])
    org_headers = {
        "authorization": f"Bearer {gw.key}",
        "x-tdai-service-id": "svc-a",
        "x-tdai-user-key": data["user_key"],
    }
    me = gw.client.post("/v3/meta/user/get", json={"user_id": data["user_id"]}, headers=org_headers).json()["data"]
    assert (me["username"], me["user_type"]) == ("root", "system_admin")
    team = gw.client.post("/v3/meta/team/get", json={"team_id": data["team_id"]}, headers=org_headers).json()["data"]
    assert (team["name"], team["owner_user_id"], team["status"]) == ("default-team", data["user_id"], "active")
    member = gw.client.post(
        "/v3/meta/team-member/get", json={"team_id": data["team_id"], "user_id": data["user_id"]}, headers=org_headers
    ).json()["data"]
    assert (member["role"], member["status"]) == ("admin", "active")
    agent = gw.client.post("/v3/meta/agent/get", json={"agent_id": data["agent_id"]}, headers=org_headers).json()[
        "data"
    ]
    assert (agent["name"], agent["visibility"], agent["team_id"], agent["owner_user_id"], agent["status"]) == (
        "default-agent-root",
        "team",
        data["team_id"],
        data["user_id"],
        "active",
    )
    asset = f"chat_memory-{data['team_id']}-{data['agent_id']}"
    assert rows(gw, "SELECT asset_type, owner_user_id FROM meta_assets WHERE asset_id = ?", asset) == [
        ("chat_memory", data["user_id"])
    ]


def test_init_admin_with_a_chosen_key(gw: Gateway) -> None:
    chosen = "sk-mem-bootstrap-key-chosen-0001"
    data = internal(gw, INIT, {"username": "ops", "user_key": chosen}).json()["data"]
    assert data["user_key"] == chosen
    verify = gw.client.post(
        "/v3/meta/auth/verify",
        json={"user_key": chosen},
        headers={"authorization": f"Bearer {gw.key}", "x-tdai-service-id": "svc-a"},
    ).json()["data"]
    assert (verify["valid"], verify["user"]["user_id"]) == (True, data["user_id"])


def test_init_admin_only_once_per_instance(gw: Gateway) -> None:
    first = internal(gw, INIT, {"username": "root"}).json()["data"]
    refused_raw(
        gw,
        lambda: internal(gw, INIT, {"username": "again"}),
        409,
        "already_initialized: system_admin already exists",
    )
    # The rule holds per instance: another service id initialises on its own.
    other = internal(gw, INIT, {"username": "root-b"}, service="svc-b").json()
    assert other["code"] == 0 and other["data"]["user_id"] != first["user_id"]


def test_init_admin_takes_the_instance_from_the_body_when_no_header(gw: Gateway) -> None:
    data = internal(gw, INIT, {"username": "root", "instance_id": "svc-body"}, service=None).json()["data"]
    headers = {
        "authorization": f"Bearer {gw.key}",
        "x-tdai-service-id": "svc-body",
        "x-tdai-user-key": data["user_key"],
    }
    assert gw.client.post("/v3/meta/user/get", json={"user_id": data["user_id"]}, headers=headers).status_code == 200
    wrong = {**headers, "x-tdai-service-id": "svc-a"}
    response = gw.client.post("/v3/meta/user/get", json={"user_id": data["user_id"]}, headers=wrong)
    assert (response.status_code, response.json()["message"]) == (401, "unauthorized: invalid_user_key")
    # The header wins over the body.
    listed = internal(gw, BY_INSTANCE, {"instance_id": "svc-body"}, service="svc-a").json()["data"]
    assert listed["items"] == [] and listed["total"] == 0
    refused_raw(
        gw,
        lambda: internal(gw, INIT, {"username": "root"}, service=None),
        400,
        "missing_instance_id: x-tdai-service-id header or instance_id is required",
    )


def test_init_admin_refuses_an_instance_id_the_management_plane_would_refuse(gw: Gateway) -> None:
    """An instance whose id /v3/meta rejects (over 128 characters) could never be used: refuse it up front."""
    too_long = "x" * 129
    for call in (
        lambda: internal(gw, INIT, {"username": "root", "instance_id": too_long}, service=None),
        lambda: internal(gw, INIT, {"username": "root"}, service=too_long),
    ):
        envelope = refused_raw(gw, call, 400, "invalid_instance_id: …")
        assert "128" in envelope["message"]


def test_init_admin_opens_with_the_gateway_key_only(gw: Gateway) -> None:
    org = Org(gw)
    alice = org.user("alice")
    # A user key (even the system admin's) as the Bearer is refused; so are no or a wrong Bearer.
    for token in (org.admin.key, alice.key):
        refused_raw(
            gw,
            lambda t=token: internal(gw, INIT, {"username": "x"}, token=t, service="svc-new"),
            401,
            "Unauthorized: invalid token",
        )
        refused_raw(gw, lambda t=token: internal(gw, BY_INSTANCE, {}, token=t), 401, "Unauthorized: invalid token")
    refused_raw(
        gw,
        lambda: internal(gw, INIT, {"username": "x"}, token="nope", service="svc-new"),
        401,
        "Unauthorized: invalid token",
    )
    refused_raw(
        gw,
        lambda: internal(gw, INIT, {"username": "x"}, token="", service="svc-new"),
        401,
        "Unauthorized: missing Bearer token",
    )
    # A user-key header does not help either.
    refused_raw(
        gw,
        lambda: gw.client.post(
            INIT,
            json={"username": "x"},
            headers={"x-tdai-service-id": "svc-new", "x-tdai-user-key": org.admin.key},
        ),
        401,
        "Unauthorized: missing Bearer token",
    )


# -- list-by-instance ---------------------------------------------------------------------------------
def test_list_by_instance_lists_users_without_secrets(org: Org) -> None:
    gw = org.gw
    alice, bob = org.user("alice"), org.user("bob")
    org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [bob.user_id]})
    Org(gw, service="svc-b").user("elsewhere")
    response = internal(gw, BY_INSTANCE, {})
    page = response.json()["data"]
    assert (page["total"], page["limit"], page["offset"]) == (2, 20, 0)
    assert {u["user_id"] for u in page["items"]} == {org.admin.user_id, alice.user_id}
    for user in page["items"]:
        assert {"user_id", "username", "user_type", "status", "created_at", "auth_provider", "external_id"} <= set(user)
        assert not {"password_hash", "key_hash", "password", "user_key", "default_user_key"} & set(user)
    for key in (org.admin.key, alice.key, bob.key):
        assert key not in response.text
    admins = internal(gw, BY_INSTANCE, {"user_type": "system_admin"}).json()["data"]["items"]
    assert [u["user_id"] for u in admins] == [org.admin.user_id]
    picked = internal(gw, BY_INSTANCE, {"user_ids": [alice.user_id, alice.user_id, "usr-nobody0000"]}).json()["data"]
    assert [u["user_id"] for u in picked["items"]] == [alice.user_id] and picked["total"] == 1
    other = internal(gw, BY_INSTANCE, {}, service="svc-b").json()["data"]
    assert sorted(u["username"] for u in other["items"]) == ["elsewhere", "root"]
    paged = internal(gw, BY_INSTANCE, {"limit": 1, "offset": 1}).json()["data"]
    assert (len(paged["items"]), paged["total"]) == (1, 2)


# -- audit/list ---------------------------------------------------------------------------------------
def test_audit_list_is_for_system_admins_only(org: Org) -> None:
    alice = org.user("alice")
    team = org.team(alice, "mine")
    assert team
    message = "permission_denied: the audit log is readable by system admins only"
    refused(org, alice, AUDIT, {}, 403, message)


def test_every_management_action_is_audited_with_its_request_id(org: Org) -> None:
    seen: list[tuple[str, str, str, list[str]]] = []  # (action, actor, request_id, expected targets)

    def act(who: Member, path: str, body: dict[str, Any]) -> Any:
        response = org.call(who, path, body)
        envelope = response.json()
        assert envelope["code"] == 0, envelope
        assert envelope["request_id"] == response.headers["x-request-id"]
        return envelope

    def expect(action: str, who: Member, envelope: dict[str, Any], targets: list[str]) -> None:
        seen.append((action, who.user_id, envelope["request_id"], targets))

    created = act(org.admin, "/v3/meta/user/create", {"username": "alice"})
    alice = Member(created["data"]["user_id"], created["data"]["default_user_key"], "alice")
    expect("user/create", org.admin, created, [alice.user_id])
    e = act(org.admin, "/v3/meta/user/create-with-key", {"username": "bob", "user_key": "sk-mem-bob-chosen-key-000001"})
    bob = Member(e["data"]["user_id"], "sk-mem-bob-chosen-key-000001", "bob")
    expect("user/create-with-key", org.admin, e, [bob.user_id])
    e = act(alice, "/v3/meta/user-key/create", {"name": "k"})
    key_id = e["data"]["key_id"]
    expect("user-key/create", alice, e, [key_id])
    expect("user-key/update", alice, act(alice, "/v3/meta/user-key/update", {"key_id": key_id, "name": "k2"}), [key_id])
    expect("user-key/revoke", alice, act(alice, "/v3/meta/user-key/revoke", {"key_id": key_id}), [key_id])
    e = act(alice, "/v3/meta/team/create", {"name": "T", "owner_user_id": alice.user_id})
    team = e["data"]["team_id"]
    expect("team/create", alice, e, [team])
    expect("team/update", alice, act(alice, "/v3/meta/team/update", {"team_id": team, "name": "T2"}), [team])
    e = act(alice, "/v3/meta/team-member/add", {"team_id": team, "user_id": bob.user_id})
    expect("team-member/add", alice, e, [team, bob.user_id])
    e = act(alice, "/v3/meta/agent/create", {"team_id": team, "owner_user_id": alice.user_id, "name": "a"})
    agent = e["data"]["agent_id"]
    expect("agent/create", alice, e, [agent])
    expect("agent/update", alice, act(alice, "/v3/meta/agent/update", {"agent_id": agent, "name": "b"}), [agent])
    e = act(alice, "/v3/meta/task/create", {"team_id": team, "creator_user_id": alice.user_id, "title": "t"})
    task = e["data"]["task_id"]
    expect("task/create", alice, e, [task])
    expect("task/update", alice, act(alice, "/v3/meta/task/update", {"task_id": task, "title": "u"}), [task])
    e = act(alice, "/v3/meta/task-agent/link", {"task_id": task, "agent_id": agent})
    expect("task-agent/link", alice, e, [task, agent])
    e = act(alice, "/v3/meta/task-agent/unlink", {"task_id": task, "agent_id": agent})
    expect("task-agent/unlink", alice, e, [task, agent])
    expect("task/archive", alice, act(alice, "/v3/meta/task/archive", {"task_id": task}), [task])
    expect("task/delete", alice, act(alice, "/v3/meta/task/delete", {"task_ids": [task]}), [task])
    expect("agent/archive", alice, act(alice, "/v3/meta/agent/archive", {"agent_id": agent}), [agent])
    expect("agent/delete", alice, act(alice, "/v3/meta/agent/delete", {"agent_ids": [agent]}), [agent])
    e = act(alice, "/v3/meta/team-member/remove", {"team_id": team, "user_id": bob.user_id})
    expect("team-member/remove", alice, e, [team, bob.user_id])
    expect("team/delete", alice, act(alice, "/v3/meta/team/delete", {"team_ids": [team]}), [team])
    expect("user/delete", org.admin, act(org.admin, "/v3/meta/user/delete", {"user_ids": [bob.user_id]}), [bob.user_id])

    page = org.ok(org.admin, AUDIT, {"limit": 100})
    entries = page["items"]
    assert all(set(x) == AUDIT_FIELDS for x in entries)
    seqs = [x["seq"] for x in entries]
    assert seqs == sorted(seqs, reverse=True) and len(set(seqs)) == len(seqs)  # newest first
    stamps = [x["created_at"] for x in entries]
    assert stamps == sorted(stamps, reverse=True)
    for action, actor, request_id, targets in seen:
        matching = [x for x in entries if x["action"] == action and x["request_id"] == request_id]
        assert len(matching) == 1, (action, request_id, [x["action"] for x in entries])
        (entry,) = matching
        assert entry["actor_user_id"] == actor, entry
        assert entry["target_ids"] == targets, entry
        assert REQ_ID.fullmatch(entry["request_id"])
    # The management actions appear in the order they were performed (newest first), after init-admin's.
    pairs = {(s[0], s[2]) for s in seen}
    ours = [x["action"] for x in entries if (x["action"], x["request_id"]) in pairs]
    assert ours == [s[0] for s in reversed(seen)]
    # Adding a member also created their default agent, audited under the same request.
    add_request = next(s[2] for s in seen if s[0] == "team-member/add")
    same_request = [x["action"] for x in entries if x["request_id"] == add_request]
    assert same_request == ["team-member/add", "agent/create"]
    bootstrap = [x for x in entries if x["action"] == "user/init-admin"]
    assert len(bootstrap) == 1 and bootstrap[0]["target_ids"] == [org.admin.user_id]
    assert bootstrap[0]["actor_kind"] == "gateway_key"
    # No key value is ever written to the audit log.
    text = str(entries)
    assert alice.key not in text and bob.key not in text and org.admin.key not in text


def test_audit_list_filters(org: Org) -> None:
    alice = org.user("alice")
    org.user("bob")
    team = org.team(alice, "T")
    creates = org.ok(org.admin, AUDIT, {"action": "user/create"})
    assert [x["action"] for x in creates["items"]] == ["user/create", "user/create"] and creates["total"] == 2
    by_alice = org.ok(org.admin, AUDIT, {"actor_user_id": alice.user_id})["items"]
    assert [(x["action"], x["target_ids"]) for x in by_alice] == [("team/create", [team])]
    paged = org.ok(org.admin, AUDIT, {"limit": 1, "offset": 1})
    everything = org.ok(org.admin, AUDIT, {})
    assert paged["items"] == everything["items"][1:2] and paged["total"] == everything["total"]
    assert org.ok(org.admin, AUDIT, {"since": "2999-01-01T00:00:00Z"})["items"] == []
    assert org.ok(org.admin, AUDIT, {"until": "2000-01-01T00:00:00Z"})["items"] == []
    assert org.ok(org.admin, AUDIT, {"until": "2999-01-01T00:00:00Z"})["total"] == everything["total"]


def test_audit_window_compares_instants_not_text(org: Org) -> None:
    """`until` one hour from now, written at -12:00, still lies after every entry."""
    org.user("alice")
    total = org.ok(org.admin, AUDIT, {})["total"]
    later = time.strftime("%Y-%m-%dT%H:%M:%S-12:00", time.gmtime(time.time() + 3600 - 12 * 3600))
    assert org.ok(org.admin, AUDIT, {"until": later})["total"] == total
    earlier = time.strftime("%Y-%m-%dT%H:%M:%S+12:00", time.gmtime(time.time() - 3600 + 12 * 3600))
    assert org.ok(org.admin, AUDIT, {"since": earlier})["total"] == total


def test_a_failed_action_leaves_no_audit_entry(make_org: Callable[..., Org]) -> None:
    org = make_org("data", max_teams_per_instance=1)
    alice = org.user("alice")
    before = org.ok(org.admin, AUDIT, {})["total"]
    # Refused for permission, for quota (inside the transaction), and for validation.
    refused(
        org,
        alice,
        "/v3/meta/user/create",
        {"username": "x"},
        403,
        "permission_denied: user management requires system admin",
    )
    refused(
        org,
        alice,
        "/v3/meta/team/create",
        {"name": "T", "owner_user_id": alice.user_id},
        409,
        "team_limit_exceeded: team limit 1 reached for instance svc-a (current: 1)",
    )
    refused(
        org,
        org.admin,
        "/v3/meta/user/delete",
        {"user_ids": [org.admin.user_id]},
        409,
        "last_system_admin: cannot delete the last system_admin user",
    )
    refused(org, org.admin, "/v3/meta/user/create", {"username": ""}, 400, "username: must not be empty")
    assert org.ok(org.admin, AUDIT, {})["total"] == before


def test_the_audit_table_refuses_update_and_delete_in_sql(org: Org) -> None:
    org.user("alice")
    con = sqlite3.connect(org.gw.data_dir / "memhub.db", timeout=5)
    try:
        before = con.execute("SELECT * FROM meta_audit ORDER BY seq").fetchall()
        assert before
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute("UPDATE meta_audit SET action = 'forged'")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute("DELETE FROM meta_audit")
        con.rollback()
        assert con.execute("SELECT * FROM meta_audit ORDER BY seq").fetchall() == before
    finally:
        con.close()


# -- request ids ----------------------------------------------------------------------------------
def test_meta_adopts_the_callers_request_id(org: Org) -> None:
    gw = org.gw
    cases = [
        ({"x-request-id": "trace-abc.123:xyz"}, "trace-abc.123:xyz"),
        ({"x-qcloud-transaction-id": "qc-0001"}, "qc-0001"),
        ({"x-qcloud-transaction-id": "qc-0002", "x-request-id": "ignored-1"}, "qc-0002"),
    ]
    for extra, expected in cases:
        response = gw.client.post(
            "/v3/meta/user/get", json={"user_id": org.admin.user_id}, headers=org.headers(org.admin, extra)
        )
        assert (response.json()["request_id"], response.headers["x-request-id"]) == (expected, expected)
    # Errors echo it too, and audit entries carry it.
    failed = gw.client.post(
        "/v3/meta/user/create", json={}, headers=org.headers(org.admin, {"x-request-id": "bad-body-1"})
    )
    assert (failed.status_code, failed.json()["request_id"], failed.headers["x-request-id"]) == (
        400,
        "bad-body-1",
        "bad-body-1",
    )
    denied = gw.client.post(
        "/v3/meta/user/create",
        json={"username": "x"},
        headers={"authorization": "Bearer nope", "x-tdai-service-id": "svc-a", "x-request-id": "no-auth-1"},
    )
    assert (denied.status_code, denied.json()["request_id"], denied.headers["x-request-id"]) == (
        401,
        "no-auth-1",
        "no-auth-1",
    )
    made = gw.client.post(
        "/v3/meta/user/create", json={"username": "z"}, headers=org.headers(org.admin, {"x-request-id": "create-z-1"})
    )
    assert made.json()["request_id"] == "create-z-1"
    (entry,) = org.ok(org.admin, AUDIT, {"action": "user/create"})["items"]
    assert entry["request_id"] == "create-z-1"
    # Internal routes adopt it as well.
    listed = gw.client.post(BY_INSTANCE, json={}, headers={**org.headers(None), "x-request-id": "internal-1"})
    assert (listed.json()["request_id"], listed.headers["x-request-id"]) == ("internal-1", "internal-1")


def test_unusable_inbound_request_ids_are_replaced(org: Org) -> None:
    for bad in ("has space", "x" * 129, "semi;colon", "new\u00e9"):
        headers = org.headers(org.admin, {"x-request-id": bad})
        try:
            response = org.gw.client.post("/v3/meta/user/get", json={"user_id": org.admin.user_id}, headers=headers)
        except UnicodeEncodeError:
            continue  # the client cannot send a non-ASCII header at all
        rid = response.json()["request_id"]
        assert REQ_ID.fullmatch(rid), (bad, rid)
        assert response.headers["x-request-id"] == rid
