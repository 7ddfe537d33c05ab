"""Bad input and bad credentials on the management plane: 400 naming the field, 401/400 for auth, nothing changed.

Also: every one of the original's 55 `/v3/meta/*` routes (plus memhub's audit/list and the two internal
routes) is mounted and documented in the OpenAPI schema.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import build_gateway
from tests.meta.org import Org, table_snapshot

# The original's management plane: 55 routes in 13 groups.
SPEC_ROUTES = [
    "user/create",
    "user/create-with-key",
    "user/get",
    "user/delete",
    "user/list",
    "user-key/create",
    "user-key/list",
    "user-key/get",
    "user-key/revoke",
    "user-key/update",
    "team/create",
    "team/get",
    "team/update",
    "team/delete",
    "team/list",
    "team-member/add",
    "team-member/remove",
    "team-member/list",
    "team-member/get",
    "agent/create",
    "agent/get",
    "agent/update",
    "agent/delete",
    "agent/list",
    "agent/archive",
    "task/create",
    "task/get",
    "task/update",
    "task/delete",
    "task/list",
    "task/archive",
    "task-agent/link",
    "task-agent/unlink",
    "task-agent/list",
    "participation-log/append",
    "participation-log/list",
    "asset/create",
    "asset/get",
    "asset/update",
    "asset/delete",
    "asset/list",
    "asset/list-accessible",
    "asset/touch-usage",
    "agent-fixed-asset/set",
    "agent-fixed-asset/list",
    "agent-fixed-asset/list-with-detail",
    "agent-fixed-asset/summary-by-agents",
    "acl/grant",
    "acl/revoke",
    "acl/list",
    "acl/check",
    "auth/verify",
    "instance-quota/get",
    "config/user/get",
    "config/user/set",
]
assert len(SPEC_ROUTES) == len(set(SPEC_ROUTES)) == 55
INTERNAL_ROUTES = ["user/init-admin", "user/list-by-instance"]

T, U, A, K, X = "team-aaaaaaaaaa", "usr-aaaaaaaaaa", "agt-aaaaaaaaaa", "uky-aaaaaaaaaa", "task-aaaaaaaaaa"
LONG_ID = "i" * 257
AGENT = {"team_id": T, "owner_user_id": U, "name": "a"}
TASK = {"team_id": T, "creator_user_id": U, "title": "t"}
TEAM = {"name": "t", "owner_user_id": U}
LOG = {"team_id": T, "task_id": X, "agent_id": A, "user_id": U}
ASSET = {"asset_id": "as-1", "team_id": T, "asset_type": "skill", "name": "n", "owner_user_id": U, "source_type": "m"}
GRANT = {"asset_id": "as-1", "subject_type": "user", "subject_id": U, "permission": "read", "granted_by": U}

IN_RANGE = "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC"  # checked after the offset
# (route, body, the message's start: "<field>: <rule>")
BAD_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("user/create", {}, "username: is required"),
    ("user/create", {"username": ""}, "username: must not be empty"),
    ("user/create", {"username": 5}, "username: must be a string"),
    ("user/create", {"username": "n" * 257}, "username: must be at most 256 characters"),
    ("user/create", {"username": "n", "user_id": LONG_ID}, "user_id: must be at most 256 characters"),
    ("user/create", {"username": "n", "email": "not-an-email"}, "email: "),
    ("user/create-with-key", {"username": "n"}, "user_key: is required"),
    ("user/create-with-key", {"username": "n", "user_key": "short"}, "user_key: must be at least 16 characters"),
    ("user/get", {}, "user_id: user_id or user_key is required"),
    ("user/get", {"user_id": 7}, "user_id: must be a string"),
    ("user/get", {"user_id": ""}, "user_id: must not be empty"),
    ("user/delete", {}, "user_ids: is required"),
    ("user/delete", {"user_ids": []}, "user_ids: must contain at least 1 items"),
    ("user/delete", {"user_ids": U}, "user_ids: must be an array"),
    ("user/delete", {"user_ids": [U, ""]}, "user_ids[1]: must not be empty"),
    ("user/list", {"limit": 0}, "limit: must be >= 1"),
    ("user/list", {"limit": 101}, "limit: must be <= 100"),
    ("user/list", {"offset": -1}, "offset: must be >= 0"),
    ("user/list", {"limit": "10"}, "limit: must be an integer"),
    ("user/list", {"limit": 2.5}, "limit: must be an integer"),
    ("user/list", {"user_ids": [f"usr-{i}" for i in range(101)]}, "user_ids: must contain at most 100 items"),
    ("user-key/create", {"name": ""}, "name: must not be empty"),
    ("user-key/create", {"name": "n" * 129}, "name: must be at most 128 characters"),
    ("user-key/create", {"expires_at": "tomorrow"}, "expires_at: must be an ISO 8601 instant"),
    ("user-key/create", {"expires_at": "2030-01-01"}, "expires_at: must be an ISO 8601 instant"),
    ("user-key/create", {"expires_at": "9999-12-31T23:59:59-14:00"}, f"expires_at: {IN_RANGE}"),
    ("user-key/list", {"offset": "1"}, "offset: must be an integer"),
    ("user-key/get", {}, "key_id: is required"),
    ("user-key/get", {"key_id": ""}, "key_id: must not be empty"),
    ("user-key/revoke", {"key_id": None}, "key_id: must be a string"),
    ("user-key/update", {"name": "n"}, "key_id: is required"),
    ("user-key/update", {"key_id": K, "expires_at": 1893456000}, "expires_at: must be a string"),
    ("user-key/update", {"key_id": K, "expires_at": "2030-02-30T00:00:00Z"}, "expires_at: must be an ISO 8601 instant"),
    ("team/create", {"name": "t"}, "owner_user_id: is required"),
    ("team/create", {"owner_user_id": U}, "name: is required"),
    ("team/create", {**TEAM, "status": "deleted"}, "status: must be one of"),
    ("team/create", {**TEAM, "metadata_json": "{not json"}, "metadata_json: must be a JSON document"),
    ("team/create", {**TEAM, "metadata_json": {"a": 1}}, "metadata_json: must be a string"),
    ("team/create", {**TEAM, "description": "d" * 4097}, "description: must be at most 4096 characters"),
    ("team/get", {"team_id": ["x"]}, "team_id: must be a string"),
    ("team/update", {"name": "x"}, "team_id: is required"),
    ("team/update", {"team_id": T, "name": ""}, "name: must not be empty"),
    ("team/delete", {"team_ids": []}, "team_ids: must contain at least 1 items"),
    ("team/list", {}, "user_id: user_id or user_key is required"),
    ("team/list", {"user_id": U, "limit": 0}, "limit: must be >= 1"),
    ("team-member/add", {"team_id": T}, "user_id: is required"),
    ("team-member/add", {"team_id": T, "user_id": U, "role": "owner"}, "role: must be one of"),
    ("team-member/add", {"team_id": T, "user_id": U, "status": "gone"}, "status: must be one of"),
    ("team-member/remove", {"user_id": U}, "team_id: is required"),
    ("team-member/list", {"team_id": T, "offset": -1}, "offset: must be >= 0"),
    ("team-member/get", {"team_id": T}, "user_id: is required"),
    ("agent/create", {"team_id": T, "owner_user_id": U}, "name: is required"),
    ("agent/create", {**AGENT, "visibility": "public"}, "visibility: must be one of"),
    ("agent/create", {**AGENT, "status": "archived"}, "status: must be one of"),
    ("agent/create", {**AGENT, "prompt": 5}, "prompt: must be a string"),
    ("agent/create", {**AGENT, "name": "n" * 257}, "name: must be at most 256 characters"),
    ("agent/get", {}, "agent_id: is required"),
    ("agent/update", {"agent_id": A, "metadata_json": "nope"}, "metadata_json: must be a JSON document"),
    (
        "agent/update",
        {"agent_id": A, "metadata_json": '{"memhub": {"offload": "yes"}}'},
        'metadata_json: memhub.offload: must be "on" or "off"',
    ),
    ("agent/create", {**AGENT, "metadata_json": '{"memhub": true}'}, "metadata_json: memhub: must be an object"),
    ("agent/delete", {"agent_ids": [1]}, "agent_ids[0]: must be a string"),
    ("agent/list", {}, "team_id: either team_id, owner_user_id, or owner_user_key is required"),
    ("agent/list", {"team_id": T, "status": "archived"}, "status: must be one of"),
    ("agent/archive", {"agent_id": ""}, "agent_id: must not be empty"),
    ("task/create", {"team_id": T, "creator_user_id": U}, "title: is required"),
    ("task/create", {**TASK, "source_type": "jira"}, "source_type: must be one of"),
    ("task/create", {**TASK, "status": "archived"}, "status: must be one of"),
    ("task/create", {**TASK, "auto_assign_floating_assets": "yes"}, "auto_assign_floating_assets: must be a boolean"),
    ("task/create", {**TASK, "linked_agents": [{}]}, "linked_agents[0].agent_id: is required"),
    ("task/create", {**TASK, "linked_agents": A}, "linked_agents: must be an array"),
    ("task/create", {**TASK, "linked_agents": [A]}, "linked_agents[0]: must be an object"),
    ("task/get", {"task_id": 1}, "task_id: must be a string"),
    ("task/update", {"task_id": X, "status": "done"}, "status: must be one of"),
    ("task/delete", {"task_ids": []}, "task_ids: must contain at least 1 items"),
    ("task/list", {}, "team_id: team_id, creator_user_id, or creator_user_key required"),
    ("task/list", {"team_id": T, "limit": 101}, "limit: must be <= 100"),
    ("task/archive", {}, "task_id: is required"),
    ("task-agent/link", {"task_id": X}, "agent_id: is required"),
    ("task-agent/unlink", {"agent_id": A}, "task_id: is required"),
    ("task-agent/list", {"task_id": X, "limit": 0}, "limit: must be >= 1"),
    ("participation-log/append", {k: v for k, v in LOG.items() if k != "user_id"}, "user_id: is required"),
    ("participation-log/append", {**LOG, "created_at": "yesterday"}, "created_at: must be an ISO 8601 instant"),
    ("participation-log/append", {**LOG, "metadata_json": "{"}, "metadata_json: must be a JSON document"),
    ("participation-log/list", {}, "team_id: is required"),
    (
        "participation-log/list",
        {"team_id": T, "created_after": "2030-13-01T00:00:00Z"},
        "created_after: must be an ISO 8601 instant",
    ),
    ("participation-log/list", {"team_id": T, "created_before": 5}, "created_before: must be a string"),
    ("participation-log/list", {"team_id": T, "dedupe": "true"}, "dedupe: must be a boolean"),
    ("asset/create", {**ASSET, "asset_type": "pdf"}, "asset_type: must be one of"),
    ("asset/update", {"asset_id": "as-1", "confidence": 2}, "confidence: must be <= 1"),
    ("asset/list", {}, "team_id: is required"),
    (
        "agent-fixed-asset/set",
        {"agent_id": A, "bindings": [{"asset_id": "as-1", "asset_type": "skill"}]},
        "bindings[0].created_by: is required",
    ),
    ("agent-fixed-asset/summary-by-agents", {"agent_ids": []}, "agent_ids: must contain at least 1 items"),
    (
        "acl/grant",
        {k: v for k, v in GRANT.items() if k != "granted_by"},
        "granted_by: granted_by or granted_by_key is required",
    ),
    ("acl/check", {"user_id": U, "asset_id": "as-1", "action": "fly"}, "action: must be one of"),
    ("auth/verify", {}, "user_key: is required"),
    ("auth/verify", {"user_key": ""}, "user_key: must not be empty"),
    ("config/user/get", {"user_id": U}, "module: is required"),
    (
        "config/user/set",
        {"user_id": U, "module": "asset_type", "params": "skill.enabled=0"},
        "params: must be an object",
    ),
    ("config/user/set", {"user_id": U, "module": "asset_type", "params": ["a"]}, "params: must be an object"),
    (
        "config/user/set",
        {"user_id": U, "module": "asset_type", "params": {"skill.enabled": 0}},
        "params.skill.enabled: must be a string",
    ),
    ("audit/list", {"since": "not a time"}, "since: must be an ISO 8601 instant"),
    ("audit/list", {"until": "0001-01-01T00:00:00+00:01"}, f"until: {IN_RANGE}"),
    (
        "participation-log/list",
        {"team_id": T, "created_before": "9999-12-31T23:00:00-01:00"},
        f"created_before: {IN_RANGE}",
    ),
    ("participation-log/append", {**LOG, "created_at": "9999-12-31T23:59:59-14:00"}, f"created_at: {IN_RANGE}"),
    ("asset/update", {"asset_id": "as-1", "expires_at": "0001-01-01T00:00:00+01:00"}, f"expires_at: {IN_RANGE}"),
    ("audit/list", {"limit": 1000}, "limit: must be <= 100"),
]


@pytest.fixture(scope="module")
def org(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Org]:
    """One instance for the whole module: every request here must leave it unchanged."""
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("MEMHUB_", "TDAI_", "V3_STRICT_ISOLATION", "MEMORY_")):
                mp.delenv(name)
        gw = build_gateway(tmp_path_factory.mktemp("meta-validation") / "data")
    org = Org(gw)
    alice = org.user("alice")
    org.join(org.team_id, org.admin, alice)
    yield org
    gw.close()


def test_the_table_covers_many_routes() -> None:
    assert len(BAD_BODIES) >= 60
    assert len({case[0] for case in BAD_BODIES}) >= 40


@pytest.mark.parametrize(
    ("route", "body", "expected"), BAD_BODIES, ids=[f"{r}:{m.split(':')[0]}" for r, _, m in BAD_BODIES]
)
def test_bad_body_is_a_400_naming_the_field(org: Org, route: str, body: dict[str, Any], expected: str) -> None:
    before = table_snapshot(org.gw)
    response = org.call(org.admin, f"/v3/meta/{route}", body)
    envelope = response.json()
    assert (response.status_code, envelope["code"]) == (400, 400), envelope
    assert envelope["message"].startswith(expected), envelope
    field = expected.split(": ")[0]
    assert {"field": field} == {"field": envelope["data"]["errors"][0]["field"]}, envelope
    assert envelope["request_id"]
    assert "data" in envelope and "items" not in envelope["data"]
    assert table_snapshot(org.gw) == before


@pytest.mark.parametrize(
    ("route", "body", "expected"),
    [
        ("user/init-admin", {}, "username: is required"),
        ("user/init-admin", {"username": "x", "user_key": "short"}, "user_key: must be at least 16 characters"),
        ("user/list-by-instance", {"user_type": "root"}, "user_type: must be one of"),
        ("user/list-by-instance", {"status": "deleted"}, "status: must be one of"),
        (
            "user/list-by-instance",
            {"user_ids": [f"u{i}" for i in range(101)]},
            "user_ids: must contain at most 100 items",
        ),
        ("user/list-by-instance", {"limit": 0}, "limit: must be >= 1"),
    ],
)
def test_bad_internal_body_is_a_400_naming_the_field(org: Org, route: str, body: dict[str, Any], expected: str) -> None:
    before = table_snapshot(org.gw)
    response = org.gw.client.post(f"/v3/internal/meta/{route}", json=body, headers=org.headers(None))
    envelope = response.json()
    assert (response.status_code, envelope["code"]) == (400, 400), envelope
    assert envelope["message"].startswith(expected), envelope
    assert table_snapshot(org.gw) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "Invalid JSON body"),
        (b"{not json", "Invalid JSON body"),
        (b"[1, 2]", "Invalid JSON body: the body must be a JSON object"),
        (b'"text"', "Invalid JSON body: the body must be a JSON object"),
        (b"null", "Invalid JSON body: the body must be a JSON object"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(org: Org, content: bytes, message: str) -> None:
    before = table_snapshot(org.gw)
    headers = {**org.headers(org.admin), "content-type": "application/json"}
    response = org.gw.client.post("/v3/meta/user/create", content=content, headers=headers)
    envelope = response.json()
    assert (response.status_code, envelope["code"], envelope["message"]) == (400, 400, message)
    assert table_snapshot(org.gw) == before


# -- authentication ---------------------------------------------------------------------------------
AUTH_SAMPLE = [
    ("user/create", {"username": "nobody"}),
    ("user/get", {"user_id": U}),
    ("user-key/revoke", {"key_id": K}),
    ("team/create", {"name": "t", "owner_user_id": U}),
    ("team-member/list", {"team_id": T}),
    ("agent/create", AGENT),
    ("task/list", {"team_id": T}),
    ("participation-log/list", {"team_id": T}),
    ("asset/get", {"asset_id": "as-1"}),
    ("acl/check", {"user_id": U, "asset_id": "as-1", "action": "read"}),
    ("instance-quota/get", {}),
    ("config/user/get", {"user_id": U, "module": "asset_type"}),
    ("audit/list", {}),
]


def auth_cases(org: Org) -> list[tuple[str, dict[str, str], int, str]]:
    gateway = f"Bearer {org.gw.key}"
    svc = {"x-tdai-service-id": "svc-a"}
    return [
        ("no Authorization", {**svc, "x-tdai-user-key": org.admin.key}, 401, "Unauthorized: missing Bearer token"),
        (
            "Basic scheme",
            {"authorization": "Basic abc", **svc, "x-tdai-user-key": org.admin.key},
            401,
            "Unauthorized: missing Bearer token",
        ),
        (
            "empty Bearer",
            {"authorization": "Bearer ", **svc, "x-tdai-user-key": org.admin.key},
            401,
            "Unauthorized: missing Bearer token",
        ),
        (
            "wrong Bearer",
            {"authorization": "Bearer wrong-key", **svc, "x-tdai-user-key": org.admin.key},
            401,
            "Unauthorized: invalid token",
        ),
        ("no user key", {"authorization": gateway, **svc}, 401, "unauthorized: missing_user_key"),
        (
            "blank user key",
            {"authorization": gateway, **svc, "x-tdai-user-key": "  "},
            401,
            "unauthorized: missing_user_key",
        ),
        (
            "unknown sk-mem key",
            {"authorization": gateway, **svc, "x-tdai-user-key": "sk-mem-" + "u" * 32},
            401,
            "unauthorized: invalid_user_key",
        ),
        (
            "garbage user key",
            {"authorization": gateway, **svc, "x-tdai-user-key": "garbage"},
            401,
            "unauthorized: invalid_user_key",
        ),
        (
            "gateway key as user key",
            {"authorization": gateway, **svc, "x-tdai-user-key": org.gw.key or ""},
            401,
            "unauthorized: invalid_user_key",
        ),
        (
            "key of another instance",
            {"authorization": gateway, "x-tdai-service-id": "svc-b", "x-tdai-user-key": org.admin.key},
            401,
            "unauthorized: invalid_user_key",
        ),
        (
            "no service id",
            {"authorization": gateway, "x-tdai-user-key": org.admin.key},
            400,
            "missing_instance_id: x-tdai-service-id header is required",
        ),
        (
            "service id too long",
            {"authorization": gateway, "x-tdai-service-id": "s" * 129, "x-tdai-user-key": org.admin.key},
            400,
            "invalid_instance_id: x-tdai-service-id must be 1..128 printable characters",
        ),
        (
            "blank service id",
            {"authorization": gateway, "x-tdai-service-id": "  ", "x-tdai-user-key": org.admin.key},
            400,
            "missing_instance_id: x-tdai-service-id header is required",
        ),
    ]


@pytest.mark.parametrize(("route", "body"), AUTH_SAMPLE, ids=[r for r, _ in AUTH_SAMPLE])
def test_credentials_are_checked_before_anything_else(org: Org, route: str, body: dict[str, Any]) -> None:
    before = table_snapshot(org.gw)
    for label, headers, status, message in auth_cases(org):
        response = org.gw.client.post(f"/v3/meta/{route}", json=body, headers=headers)
        envelope = response.json()
        assert (response.status_code, envelope["code"], envelope["message"]) == (status, status, message), label
        assert envelope["request_id"] and "data" not in envelope, label
    # A bad body is not even looked at without credentials.
    response = org.gw.client.post(f"/v3/meta/{route}", json={"limit": "bad"}, headers={"x-tdai-service-id": "svc-a"})
    assert (response.status_code, response.json()["message"]) == (401, "Unauthorized: missing Bearer token")
    assert table_snapshot(org.gw) == before


def test_auth_verify_is_the_only_route_without_a_user_key(org: Org) -> None:
    headers = {"authorization": f"Bearer {org.gw.key}", "x-tdai-service-id": "svc-a"}
    ok = org.gw.client.post("/v3/meta/auth/verify", json={"user_key": org.admin.key}, headers=headers)
    assert ok.status_code == 200 and ok.json()["data"]["valid"] is True
    before = table_snapshot(org.gw)
    for route in [*SPEC_ROUTES, "audit/list"]:
        if route == "auth/verify":
            continue
        response = org.gw.client.post(f"/v3/meta/{route}", json={}, headers=headers)
        assert (response.status_code, response.json()["message"]) == (401, "unauthorized: missing_user_key"), route
    assert table_snapshot(org.gw) == before


# -- routes are mounted ----------------------------------------------------------------------------
def test_every_spec_route_is_mounted_and_documented(org: Org) -> None:
    schema = org.gw.client.get("/openapi.json").json()
    paths = schema["paths"]
    expected = {f"/v3/meta/{r}" for r in [*SPEC_ROUTES, "audit/list"]}
    expected |= {f"/v3/internal/meta/{r}" for r in INTERNAL_ROUTES}
    missing = sorted(p for p in expected if p not in paths or "post" not in paths[p])
    assert missing == []
    mounted_meta = {p for p in paths if p.startswith("/v3/meta/")}
    assert mounted_meta == {f"/v3/meta/{r}" for r in [*SPEC_ROUTES, "audit/list"]}
    for path in expected:
        body = paths[path]["post"].get("requestBody", {})
        assert body.get("content", {}).get("application/json", {}).get("schema"), path
    # And each answers (here: 401 without credentials), where an unknown path is a 404.
    for path in sorted(expected):
        response = org.gw.client.post(path, json={})
        assert response.status_code == 401, (path, response.status_code)
    unknown = org.gw.client.post("/v3/meta/user/frobnicate", json={}, headers=org.headers(org.admin))
    assert unknown.status_code == 404
