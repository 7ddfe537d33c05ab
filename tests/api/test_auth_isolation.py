"""Authentication (secure by default) and isolation (body, then `x-tdai-*-id` headers, then "default") of the
data plane."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import GATEWAY_KEY, ISO, SERVICE, Gateway

MISSING_BEARER = "Unauthorized: missing Bearer token"
INVALID_TOKEN = "Unauthorized: invalid token"
MISSING_SERVICE = "Missing x-tdai-service-id header"
MISSING_AUTH = "Missing or invalid Authorization header. Expected: Bearer {api_key}"

# One writing call per layer, each of which would leave a trace if it got through.
WRITES = [
    ("/v3/conversation/add", {"session_id": "s1", "messages": [{"role": "user", "content": "hello there"}]}),
    ("/v3/atomic/add", {"content": "likes tea", "type": "persona"}),
    ("/v3/scenario/create", {"path": "a.md", "content": "scene"}),
    ("/v3/core/write", {"content": "persona"}),
    ("/v2/conversation/add", {"messages": [{"role": "user", "content": "hi v2"}]}),
    ("/v2/core/write", {"content": "persona v2"}),
]


def nothing_stored(gw: Gateway, service: str = SERVICE) -> None:
    for count in ("/v3/conversation/count", "/v3/atomic/count", "/v3/scenario/count", "/v3/core/count"):
        assert gw.ok(count, {}, service=service) == {"total": 0}, count
    assert gw.store.list_audit(service) == []


def refused(gw: Gateway, path: str, body: dict[str, Any], headers: dict[str, str], message: str) -> None:
    response = gw.client.post(path, json={**ISO, **body}, headers=headers)
    envelope = response.json()
    assert response.status_code == 401, envelope
    assert envelope["code"] == 401
    assert envelope["message"] == message
    assert envelope["request_id"].startswith("req-")
    assert "data" not in envelope


# -- secure mode ---------------------------------------------------------------------------
SECURE_FAILURES = [
    pytest.param({"x-tdai-service-id": SERVICE}, MISSING_BEARER, id="no-authorization"),
    pytest.param({"authorization": "", "x-tdai-service-id": SERVICE}, MISSING_BEARER, id="empty-authorization"),
    pytest.param({"authorization": "Bearer", "x-tdai-service-id": SERVICE}, MISSING_BEARER, id="bearer-no-token"),
    pytest.param({"authorization": "Bearer   ", "x-tdai-service-id": SERVICE}, MISSING_BEARER, id="bearer-blank"),
    pytest.param({"authorization": f"Basic {GATEWAY_KEY}", "x-tdai-service-id": SERVICE}, MISSING_BEARER, id="basic"),
    pytest.param({"authorization": GATEWAY_KEY, "x-tdai-service-id": SERVICE}, MISSING_BEARER, id="no-scheme"),
    pytest.param({"authorization": "Bearer wrong", "x-tdai-service-id": SERVICE}, INVALID_TOKEN, id="wrong-token"),
    pytest.param(
        {"authorization": f"Bearer {GATEWAY_KEY}x", "x-tdai-service-id": SERVICE}, INVALID_TOKEN, id="key-plus-one"
    ),
    pytest.param(
        {"authorization": f"Bearer {GATEWAY_KEY[:-1]}", "x-tdai-service-id": SERVICE}, INVALID_TOKEN, id="key-prefix"
    ),
    pytest.param({"authorization": f"Bearer {GATEWAY_KEY}"}, MISSING_SERVICE, id="no-service-id"),
    pytest.param(
        {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": "  "}, MISSING_SERVICE, id="blank-sid"
    ),
    pytest.param({}, MISSING_BEARER, id="nothing"),
]


@pytest.mark.parametrize(("headers", "message"), SECURE_FAILURES)
def test_secure_mode_refuses_and_writes_nothing(gateway: Gateway, headers: dict[str, str], message: str) -> None:
    for path, body in WRITES:
        refused(gateway, path, body, headers, message)
    nothing_stored(gateway)


def test_right_key_with_service_id_passes(gateway: Gateway) -> None:
    for scheme in ("Bearer", "bearer"):
        headers = {"authorization": f"{scheme} {GATEWAY_KEY}", "x-tdai-service-id": SERVICE}
        response = gateway.client.post("/v3/core/count", json={}, headers=headers)
        assert response.json()["code"] == 0, scheme


def test_auth_is_checked_before_the_body(gateway: Gateway) -> None:
    response = gateway.client.post("/v3/core/write", content=b"{broken", headers={"x-tdai-service-id": SERVICE})
    assert response.status_code == 401
    assert response.json()["message"] == MISSING_BEARER
    response = gateway.client.post(
        "/v3/core/write", content=b"x" * (2 * 1024 * 1024), headers={"authorization": "Bearer wrong"}
    )
    assert response.json()["message"] == INVALID_TOKEN


def test_overlong_service_id_is_400(gateway: Gateway) -> None:
    gateway.fails("/v3/core/count", {}, 400, service="s" * 129)
    gateway.ok("/v3/core/count", {}, service="s" * 128)


# -- insecure mode -------------------------------------------------------------------------
@pytest.fixture
def insecure(make_gateway: Any) -> Gateway:
    return make_gateway("insecure", insecure=True)


@pytest.mark.parametrize("token", ["anything", "wrong", GATEWAY_KEY])
def test_insecure_mode_accepts_any_bearer(insecure: Gateway, token: str) -> None:
    headers = {"authorization": f"Bearer {token}", "x-tdai-service-id": SERVICE}
    response = insecure.client.post("/v3/core/write", json={**ISO, "content": f"by {token}"}, headers=headers)
    assert response.json()["code"] == 0
    assert insecure.ok("/v3/core/read", {})["content"] == f"by {token}"


INSECURE_FAILURES = [
    pytest.param({"x-tdai-service-id": SERVICE}, MISSING_AUTH, id="no-authorization"),
    pytest.param({"authorization": "Bearer ", "x-tdai-service-id": SERVICE}, MISSING_AUTH, id="empty-bearer"),
    pytest.param({"authorization": "Basic abc", "x-tdai-service-id": SERVICE}, MISSING_AUTH, id="basic"),
    pytest.param({"authorization": "Bearer anything"}, MISSING_SERVICE, id="no-service-id"),
]


@pytest.mark.parametrize(("headers", "message"), INSECURE_FAILURES)
def test_insecure_mode_still_needs_bearer_and_service(insecure: Gateway, headers: dict[str, str], message: str) -> None:
    for path, body in WRITES:
        refused(insecure, path, body, headers, message)
    nothing_stored(insecure)


# -- isolation resolution ------------------------------------------------------------------
def _add(gw: Gateway, body_ids: dict[str, str], header_ids: dict[str, str]) -> list[str]:
    headers = {f"x-tdai-{k.replace('_', '-')}": v for k, v in header_ids.items()}
    body = {**body_ids, "messages": [{"role": "user", "content": "where am I"}]}
    return gw.ok("/v3/conversation/add", body, isolation={}, headers=headers)["accepted_ids"]


ALL_HEADERS = {
    "team_id": "h-team",
    "user_id": "h-user",
    "agent_id": "h-agent",
    "task_id": "h-task",
    "session_id": "h-s",
}
ALL_BODY = {"team_id": "b-team", "user_id": "b-user", "agent_id": "b-agent", "task_id": "b-task", "session_id": "b-s"}
DEFAULTS = {"team_id": "default", "user_id": "default", "agent_id": "default", "task_id": "", "session_id": "default"}


@pytest.mark.parametrize(
    ("body_ids", "header_ids", "expected"),
    [
        pytest.param(ALL_BODY, ALL_HEADERS, ALL_BODY, id="body-wins"),
        pytest.param({}, ALL_HEADERS, ALL_HEADERS, id="headers-used"),
        pytest.param({}, {}, DEFAULTS, id="defaults"),
        pytest.param(
            {"team_id": "b-team", "agent_id": ""},
            {"agent_id": "h-agent", "user_id": "h-user"},
            {**DEFAULTS, "team_id": "b-team", "agent_id": "h-agent", "user_id": "h-user"},
            id="mixed-empty-body-falls-back",
        ),
        pytest.param(
            {"user_id": "  b-user  "},
            {"team_id": "  h-team "},
            {**DEFAULTS, "user_id": "b-user", "team_id": "h-team"},
            id="trimmed",
        ),
    ],
)
def test_ids_come_from_body_then_headers_then_default(
    gateway: Gateway, body_ids: dict[str, str], header_ids: dict[str, str], expected: dict[str, str]
) -> None:
    (added,) = _add(gateway, body_ids, header_ids)
    # Reading back under exactly the expected ids finds the message, stamped with them.
    (message,) = gateway.ok("/v3/conversation/query", dict(expected), isolation={})["messages"]
    assert message["id"] == added
    assert {k: message[k] for k in expected} == expected
    if expected != DEFAULTS:
        assert gateway.ok("/v3/conversation/count", {}, isolation={}) == {"total": 0}


def test_header_ids_scope_reads_like_body_ids(gateway: Gateway) -> None:
    gateway.ok("/v3/atomic/add", {"content": "header scoped", "type": "episodic"}, isolation={}, headers={
        "x-tdai-team-id": "t", "x-tdai-agent-id": "a", "x-tdai-user-id": "u"})  # fmt: skip
    found = gateway.ok("/v3/atomic/query", {}, isolation={"team_id": "t", "agent_id": "a", "user_id": "u"})
    assert [i["content"] for i in found["items"]] == ["header scoped"]
    assert (found["items"][0]["team_id"], found["items"][0]["user_id"]) == ("t", "u")
    assert gateway.ok("/v3/atomic/query", {}, isolation={})["total"] == 0


# -- strict isolation ----------------------------------------------------------------------
@pytest.fixture
def strict(make_gateway: Any) -> Gateway:
    return make_gateway("strict", strict_isolation=True)


STRICT_CASES = [
    pytest.param({}, {}, ["team_id", "agent_id", "user_id"], id="none"),
    pytest.param({"team_id": "t"}, {}, ["agent_id", "user_id"], id="team-only"),
    pytest.param({"team_id": "t", "agent_id": "a"}, {}, ["user_id"], id="no-user"),
    pytest.param({"agent_id": "a", "user_id": "u"}, {}, ["team_id"], id="no-team"),
    pytest.param({"team_id": "t", "user_id": "u", "session_id": "s", "task_id": "k"}, {}, ["agent_id"], id="no-agent"),
    pytest.param({"team_id": " ", "agent_id": "a"}, {"x-tdai-user-id": "u"}, ["team_id"], id="blank-team+header"),
    pytest.param({}, {"x-tdai-team-id": "t", "x-tdai-agent-id": "a"}, ["user_id"], id="headers-count"),
]
STRICT_ROUTES = ["conversation/query", "atomic/add", "scenario/ls", "core/write", "conversation/count"]


@pytest.mark.parametrize(("ids", "headers", "missing"), STRICT_CASES)
def test_strict_v3_names_exactly_the_missing_ids(
    strict: Gateway, ids: dict[str, str], headers: dict[str, str], missing: list[str]
) -> None:
    body = {"content": "x", "type": "persona"}
    for route in STRICT_ROUTES:
        env = strict.fails(f"/v3/{route}", {**ids, **body}, 422, isolation={}, headers=headers)
        assert env["message"] == f"/v3 requires strict isolation: missing {', '.join(missing)}", route
        assert env["data"] == {"missing": missing}
    assert strict.store.list_audit(SERVICE) == []
    assert strict.ok("/v3/atomic/count", {}) == {"total": 0}
    assert strict.ok("/v3/core/count", {}) == {"total": 0}


@pytest.mark.parametrize("route", [r for r in STRICT_ROUTES if not r.endswith("count")])
def test_strict_mode_leaves_v2_lax(strict: Gateway, route: str) -> None:
    strict.ok(f"/v2/{route}", {"content": "x", "type": "persona"}, isolation={})


def test_strict_mode_accepts_full_ids_without_session(strict: Gateway) -> None:
    strict.ok("/v3/atomic/add", {"content": "x", "type": "persona"}, isolation=ISO)
    assert strict.ok("/v3/atomic/count", {}, isolation=ISO) == {"total": 1}


def test_lax_v3_fills_defaults(gateway: Gateway) -> None:
    assert gateway.ok("/v3/core/read", {}, isolation={})["team_id"] == "default"


# -- L0/L1 scope spans sessions ------------------------------------------------------------
def test_l0_and_l1_span_sessions_of_one_scope(gateway: Gateway) -> None:
    ids = {}
    for session in ("s1", "s2"):
        msgs = [{"role": "user", "content": f"kayak trip {session}"}]
        ids[session] = gateway.ok("/v3/conversation/add", {"session_id": session, "messages": msgs})["accepted_ids"][0]
        gateway.ok("/v3/atomic/add", {"content": f"kayak memory {session}", "type": "episodic", "session_id": session})

    assert gateway.ok("/v3/conversation/query", {})["total"] == 2
    assert gateway.ok("/v3/conversation/count", {}) == {"total": 2}
    only = gateway.ok("/v3/conversation/query", {"session_id": "s1"})
    assert [m["id"] for m in only["messages"]] == [ids["s1"]]
    assert gateway.ok("/v3/conversation/count", {"session_id": "s2"}) == {"total": 1}
    assert len(gateway.ok("/v3/conversation/search", {"query": "kayak"})["messages"]) == 2
    # L1 ignores the session: a third session sees every memory of the scope.
    assert gateway.ok("/v3/atomic/query", {"session_id": "s3"})["total"] == 2
    assert gateway.ok("/v3/atomic/count", {"session_id": "s3"}) == {"total": 2}
    assert len(gateway.ok("/v3/atomic/search", {"query": "kayak", "session_id": "s3"})["items"]) == 2
    # Deleting by message id works from any session of the scope.
    assert gateway.ok("/v3/conversation/delete", {"message_ids": [ids["s1"]], "session_id": "s9"}) == {
        "deleted_count": 1
    }


# -- the isolation matrix ------------------------------------------------------------------
OWNER = {**ISO, "task_id": "task-1"}
OUTSIDERS = [
    pytest.param("svc-b", OWNER, id="other-service"),
    pytest.param(SERVICE, {**OWNER, "team_id": "team-2"}, id="other-team"),
    pytest.param(SERVICE, {**OWNER, "agent_id": "agent-2"}, id="other-agent"),
    pytest.param(SERVICE, {**OWNER, "user_id": "user-2"}, id="other-user"),
    pytest.param(SERVICE, {**OWNER, "task_id": "task-2"}, id="other-task"),
    pytest.param(SERVICE, {"team_id": "team-1"}, id="defaults"),
]
# L2/L3 belong to (team, agent, user): only another task of the same user shares the profile.
PROFILE_OUTSIDERS = {"other-service", "other-team", "other-agent", "other-user", "defaults"}


def seed(gw: Gateway) -> dict[str, str]:
    msgs = [{"role": "user", "content": "zebra crossing at noon"}, {"role": "assistant", "content": "zebra noted"}]
    added = gw.ok("/v3/conversation/add", {"session_id": "s1", "messages": msgs}, isolation=OWNER)
    memory = gw.ok("/v3/atomic/add", {"content": "owner loves zebras", "type": "persona"}, isolation=OWNER)
    gw.ok("/v3/scenario/create", {"path": "zoo/zebra.md", "content": "zebra scene"}, isolation=OWNER)
    gw.ok("/v3/core/write", {"content": "zebra persona"}, isolation=OWNER)
    return {"message": added["accepted_ids"][0], "message2": added["accepted_ids"][1], "memory": memory["id"]}


def owner_still_has_everything(gw: Gateway, ids: dict[str, str]) -> None:
    assert gw.ok("/v3/conversation/count", {}, isolation=OWNER) == {"total": 2}
    hits = gw.ok("/v3/conversation/search", {"query": "zebra"}, isolation=OWNER)["messages"]
    assert {h["id"] for h in hits} == {ids["message"], ids["message2"]}
    items = gw.ok("/v3/atomic/query", {}, isolation=OWNER)["items"]
    assert [(i["id"], i["content"], i["version"]) for i in items] == [(ids["memory"], "owner loves zebras", 0)]
    assert [i["id"] for i in gw.ok("/v3/atomic/search", {"query": "zebras"}, isolation=OWNER)["items"]] == [
        ids["memory"]
    ]
    assert gw.ok("/v3/scenario/read", {"path": "zoo/zebra.md"}, isolation=OWNER)["content"].endswith("zebra scene\n")
    assert gw.ok("/v3/core/read", {}, isolation=OWNER)["content"].startswith("zebra persona")


@pytest.mark.parametrize(("service", "who"), OUTSIDERS)
def test_outsiders_cannot_see_or_delete_l0_l1(gateway: Gateway, service: str, who: dict[str, str]) -> None:
    ids = seed(gateway)
    as_them: dict[str, Any] = {"isolation": who, "service": service}
    for prefix in ("/v3", "/v2"):
        assert gateway.ok(f"{prefix}/conversation/query", {}, **as_them) == {"messages": [], "total": 0}
        assert gateway.ok(f"{prefix}/conversation/query", {"session_id": "s1"}, **as_them)["total"] == 0
        assert gateway.ok(f"{prefix}/conversation/search", {"query": "zebra"}, **as_them)["messages"] == []
        assert gateway.ok(f"{prefix}/atomic/query", {}, **as_them) == {"items": [], "total": 0}
        assert gateway.ok(f"{prefix}/atomic/search", {"query": "zebras"}, **as_them)["items"] == []
        deleted = gateway.ok(
            f"{prefix}/conversation/delete", {"message_ids": [ids["message"]], "session_ids": ["s1"]}, **as_them
        )
        assert deleted == {"deleted_count": 0}
        assert gateway.ok(f"{prefix}/atomic/delete", {"ids": [ids["memory"]]}, **as_them) == {"deleted_count": 0}
    assert gateway.ok("/v3/conversation/count", {}, **as_them) == {"total": 0}
    assert gateway.ok("/v3/atomic/count", {}, **as_them) == {"total": 0}

    # No existence leak, across tenants or scopes: the answer for an unknown id.
    env = gateway.fails("/v3/atomic/update", {"id": ids["memory"], "content": "hijacked"}, 404, **as_them)
    assert env["message"] == f"Atomic memory not found: {ids['memory']}"
    owner_still_has_everything(gateway, ids)
    audit = sorted((r["layer"], r["action"]) for r in gateway.store.list_audit(SERVICE))
    assert audit == [("L2", "write"), ("L3", "write")]  # the seed's, and nothing from the outsider
    assert gateway.store.list_audit("svc-b") == []


@pytest.mark.parametrize(("service", "who"), OUTSIDERS)
def test_outsiders_of_the_profile_cannot_see_or_remove_l2_l3(
    gateway: Gateway, request: pytest.FixtureRequest, service: str, who: dict[str, str]
) -> None:
    ids = seed(gateway)
    as_them: dict[str, Any] = {"isolation": who, "service": service}
    shares_profile = request.node.callspec.id not in PROFILE_OUTSIDERS
    scene = gateway.ok("/v3/scenario/read", {"path": "zoo/zebra.md"}, **as_them)
    persona = gateway.ok("/v3/core/read", {}, **as_them)
    if shares_profile:  # another task of the same user sees them
        assert scene["content"].endswith("zebra scene\n")
        assert persona["content"].startswith("zebra persona")
        assert gateway.ok("/v3/scenario/count", {}, **as_them) == {"total": 1}
        return
    assert scene["content"] is None
    assert persona["content"] is None
    assert gateway.ok("/v3/scenario/ls", {}, **as_them) == {"entries": [], "total": 0}
    assert gateway.ok("/v3/scenario/count", {}, **as_them) == {"total": 0}
    assert gateway.ok("/v3/core/count", {}, **as_them) == {"total": 0}
    gateway.fails("/v3/scenario/write", {"path": "zoo/zebra.md", "content": "x"}, 404, **as_them)
    gateway.ok("/v3/scenario/rm", {"path": "zoo/"}, **as_them)
    gateway.ok("/v2/scenario/rm", {"paths": ["zoo/zebra.md"]}, **as_them)
    owner_still_has_everything(gateway, ids)
    assert [r for r in gateway.store.list_audit(SERVICE) if r["action"] == "rm"] == []
