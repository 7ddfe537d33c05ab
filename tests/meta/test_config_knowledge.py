"""config/user/get|set, instance-quota/get and the knowledge registry (/v3/knowledge/*), over a live server.

Config: module `asset_type` holds four switches (`<type>.enabled`, default "1"); a user
reads and sets only their own values (no system-admin bypass); unknown_module / invalid_param_key /
invalid_param_scope (the global-only quota module) / invalid_param_value ("0"/"1" only) → 400, and
a set is all-or-nothing. Knowledge (`/v3/knowledge/*`): data-plane authentication; a user-key
caller must be an active member of the team concerned; create is an idempotent upsert; only an entry's
owner or an admin of its team changes or deletes it; a service_url must be on this gateway's public
origin or an allow-listed one (every teammate's agent is told to send its key there).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.metadata_client import serve
from tests.meta.org import Member, Org, refused, rows, table_snapshot
from tests.meta.shapes import ISO_MS, KNOWLEDGE_FIELDS

SWITCHES = ("skill.enabled", "llm_wiki.enabled", "code_graph.enabled", "chat_memory.enabled")
OWN_URL = "http://127.0.0.1:8420/v3"  # the default public knowledge URL of a gateway on the default address
ALLOWED = "https://ks.example:9000"  # the one origin this module's gateway allow-lists


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The module's live server, with one allow-listed knowledge origin."""
    built = build_gateway(tmp_path_factory.mktemp("live"), knowledge_url_allowlist=[ALLOWED])
    with serve(built) as gateway:
        yield gateway
    built.close()


@dataclass
class Crew:
    org: Org
    team_id: str  # alice's team; bob and dave are members, erin an admin
    other_team: str  # carol's team
    alice: Member
    bob: Member
    carol: Member
    dave: Member
    erin: Member


@pytest.fixture
def c(live: Gateway) -> Crew:
    org = Org(live, service=f"svc-{uuid.uuid4().hex[:10]}")
    alice, bob, carol, dave, erin = org.users("alice", "bob", "carol", "dave", "erin")
    team_id = org.staffed_team(alice, "team", (bob, "member"), (dave, "member"), (erin, "admin"))
    return Crew(org, team_id, org.team(carol, "other"), alice, bob, carol, dave, erin)


# -- config/user/get ------------------------------------------------------------------------------
def _config(c: Crew, who: Member, module: str = "asset_type", **body: Any) -> dict[str, Any]:
    return c.org.ok(who, "/v3/meta/config/user/get", {"user_id": who.user_id, "module": module, **body})


def _values(data: dict[str, Any]) -> dict[str, str]:
    return {item["param_name"]: item["effective_value"] for item in data["items"]}


def test_get_defaults_and_shape(c: Crew) -> None:
    data = _config(c, c.bob)
    assert set(data) == {"user_id", "module", "module_description", "items"}
    assert (data["user_id"], data["module"]) == (c.bob.user_id, "asset_type")
    assert data["module_description"] == "AssetType 资源使用开关"
    assert [i["param_name"] for i in data["items"]] == list(SWITCHES)  # registry order
    for item in data["items"]:
        assert set(item) == {"module", "param_name", "param_key", "description", "effective_value"}
        assert item["module"] == "asset_type" and item["param_key"] == f"asset_type.{item['param_name']}"
        assert item["effective_value"] == "1"
    assert data["items"][0]["description"] == "是否允许使用 Skill 类资产"
    one = _config(c, c.bob, param_name="chat_memory.enabled")
    assert [i["param_key"] for i in one["items"]] == ["asset_type.chat_memory.enabled"]
    # The global-only quota module can be read (its effective value is the instance's).
    quota = _config(c, c.bob, "quota")
    assert _values(quota) == {"max_users_per_instance": "500", "max_teams_per_instance": "100"}


def test_set_then_get_and_upsert(c: Crew) -> None:
    path = "/v3/meta/config/user/set"
    body = {
        "user_id": c.bob.user_id,
        "module": "asset_type",
        "params": {"skill.enabled": "0", "code_graph.enabled": "0"},
    }
    assert c.org.ok(c.bob, path, body) == {"ok": True}
    assert _values(_config(c, c.bob)) == {
        "skill.enabled": "0",
        "llm_wiki.enabled": "1",
        "code_graph.enabled": "0",
        "chat_memory.enabled": "1",
    }
    assert set(_values(_config(c, c.alice)).values()) == {"1"}  # other users keep the default
    c.org.ok(c.bob, path, {**body, "params": {"skill.enabled": "1"}})
    assert _values(_config(c, c.bob))["skill.enabled"] == "1"
    con = c.org.gw.store._reader()
    rows = con.execute(
        "SELECT COUNT(*) FROM meta_config_params WHERE user_id = ? AND param_name = 'skill.enabled'",
        (c.bob.user_id,),
    ).fetchone()[0]
    assert rows == 1  # updated in place, not duplicated
    # An empty params map is a no-op success.
    before = table_snapshot(c.org.gw)
    assert c.org.ok(c.bob, path, {**body, "params": {}}) == {"ok": True}
    assert table_snapshot(c.org.gw) == before


def test_only_the_user_themself(c: Crew) -> None:
    message = "permission_denied: user_id does not match caller"
    get_body = {"user_id": c.alice.user_id, "module": "asset_type"}
    set_body = {**get_body, "params": {"skill.enabled": "0"}}
    for who in (c.bob, c.org.admin):  # a system admin gets no bypass
        refused(c.org, who, "/v3/meta/config/user/get", get_body, 403, message)
        refused(c.org, who, "/v3/meta/config/user/set", set_body, 403, message)
    # Unknown ids are refused alike (no probing for users).
    refused(c.org, c.bob, "/v3/meta/config/user/get", {**get_body, "user_id": "usr-nope"}, 403, message)
    refused(c.org, c.bob, "/v3/meta/config/user/set", {**set_body, "user_id": "usr-nope"}, 403, message)
    response = c.org.gw.client.post(
        "/v3/meta/config/user/get",
        json=get_body,
        headers={"authorization": f"Bearer {c.org.gw.key}", "x-tdai-service-id": c.org.service},
    )
    assert response.status_code == 401 and response.json()["message"] == "unauthorized: missing_user_key"


def test_config_errors(c: Crew) -> None:
    me = c.bob.user_id
    get_path, set_path = "/v3/meta/config/user/get", "/v3/meta/config/user/set"

    def bad(path: str, body: dict[str, Any], message: str | None) -> None:
        """bob's own config call with this body is refused with 400 (and this message) and changes nothing."""
        refused(c.org, c.bob, path, {"user_id": me, **body}, 400, message)

    bad(get_path, {"module": "video"}, "unknown_module: unknown module: video")
    bad(set_path, {"module": "video", "params": {"x": "1"}}, "unknown_module: unknown module: video")
    unknown_param = "invalid_param_key: unknown param: asset_type.video.enabled"
    bad(get_path, {"module": "asset_type", "param_name": "video.enabled"}, unknown_param)
    bad(set_path, {"module": "asset_type", "params": {"video.enabled": "1"}}, unknown_param)
    bad(
        set_path,
        {"module": "quota", "params": {"max_users_per_instance": "5"}},
        "invalid_param_scope: module 'quota' is global-only, cannot set for user scope",
    )
    for value in ("2", "true", "", " 1", "01"):
        bad(
            set_path,
            {"module": "asset_type", "params": {"skill.enabled": value}},
            f"invalid_param_value: param 'skill.enabled' only accepts '0' or '1', got '{value}'",
        )
    bad(set_path, {"module": "asset_type", "params": {"skill.enabled": 1}}, None)
    bad(set_path, {"module": "asset_type"}, "params: …")
    bad(get_path, {}, "module: …")
    refused(c.org, c.bob, get_path, {"module": "asset_type"}, 400, "user_id: …")


def test_set_is_all_or_nothing(c: Crew) -> None:
    path = "/v3/meta/config/user/set"
    for params, message in (
        (
            {"skill.enabled": "0", "llm_wiki.enabled": "yes"},
            "invalid_param_value: param 'llm_wiki.enabled' only accepts '0' or '1', got 'yes'",
        ),
        ({"skill.enabled": "0", "video.enabled": "0"}, "invalid_param_key: unknown param: asset_type.video.enabled"),
    ):
        refused(c.org, c.bob, path, {"user_id": c.bob.user_id, "module": "asset_type", "params": params}, 400, message)
    assert _values(_config(c, c.bob))["skill.enabled"] == "1"


def test_llm_api_key_is_never_returned_in_clear(c: Crew) -> None:
    body = {"user_id": c.bob.user_id, "module": "llm", "params": {"api_key": "sk-upstream-abcdefgh1234"}}
    assert c.org.ok(c.bob, "/v3/meta/config/user/set", body) == {"ok": True}
    assert _values(_config(c, c.bob, "llm")) == {"api_key": "****1234"}
    assert _values(_config(c, c.alice, "llm")) == {"api_key": ""}


def test_instance_quota(c: Crew, make_org: Callable[..., Org]) -> None:
    for who in (c.bob, c.org.admin):
        assert c.org.ok(who, "/v3/meta/instance-quota/get", {"ignored": True}) == {
            "max_users_per_instance": 500,
            "max_teams_per_instance": 100,
        }
    org = make_org("small", max_users_per_instance=7, max_teams_per_instance=3)
    assert org.ok(org.admin, "/v3/meta/instance-quota/get", {}) == {
        "max_users_per_instance": 7,
        "max_teams_per_instance": 3,
    }
    quota = org.ok(org.admin, "/v3/meta/config/user/get", {"user_id": org.admin.user_id, "module": "quota"})
    assert _values(quota) == {"max_users_per_instance": "7", "max_teams_per_instance": "3"}


# -- knowledge ------------------------------------------------------------------------------------
def _kb(c: Crew, knowledge_id: str = "kb-1", **fields: Any) -> dict[str, Any]:
    return {
        "knowledge_id": knowledge_id,
        "type": "wiki",
        "service_url": OWN_URL,
        "name": f"wiki {knowledge_id}",
        "team_id": c.team_id,
        **fields,
    }


def _gateway_headers(c: Crew) -> dict[str, str]:
    return {"authorization": f"Bearer {c.org.gw.key}", "x-tdai-service-id": c.org.service}


def _as_gateway(c: Crew, path: str, body: dict[str, Any]) -> Any:
    response = c.org.gw.client.post(path, json=body, headers=_gateway_headers(c))
    envelope = response.json()
    assert response.status_code == 200 and envelope["code"] == 0, envelope
    return envelope["data"]


def test_knowledge_create_is_an_idempotent_upsert(c: Crew) -> None:
    body = _kb(c, summary="s", user_id=c.bob.user_id, repo_url="https://git/x.git", branch="main")
    first = c.org.ok(c.bob, "/v3/knowledge/create", body)
    assert set(first) == KNOWLEDGE_FIELDS
    assert {k: first[k] for k in body} == body
    assert (
        first["agent_id"] == "" and ISO_MS.fullmatch(first["created_at"]) and first["created_at"] == first["updated_at"]
    )
    again = c.org.ok(c.bob, "/v3/knowledge/create", body)
    assert again["created_at"] == first["created_at"] and {k: again[k] for k in body} == body
    changed = c.org.ok(
        c.bob, "/v3/knowledge/create", {**body, "type": "code-graph", "name": "renamed", "summary": None}
    )
    assert (changed["type"], changed["name"], changed["summary"]) == ("code-graph", "renamed", None)
    assert changed["created_at"] == first["created_at"] and changed["updated_at"] >= first["updated_at"]
    listed = c.org.ok(c.bob, "/v3/knowledge/list", {"team_id": c.team_id})
    assert listed["total"] == 1 and listed["items"] == [changed]
    assert c.org.ok(c.bob, "/v3/knowledge/get", {"knowledge_id": "kb-1"}) == changed


def test_knowledge_validation(c: Crew) -> None:
    path = "/v3/knowledge/create"
    refused(c.org, c.bob, path, _kb(c, type="pdf"), 400, "type: must be one of 'wiki' or 'code-graph'")
    for url in ("ftp://knowledge/x", "knowledge:8424", "http://", "not a url", ""):
        envelope = refused(c.org, c.bob, path, _kb(c, service_url=url), 400)
        assert envelope["message"].startswith("service_url: "), envelope
    refused(c.org, c.bob, path, _kb(c, summary="x" * 257), 400, "summary: must be at most 256 characters")
    assert c.org.ok(c.bob, path, _kb(c, summary="x" * 256))["summary"] == "x" * 256
    for missing in ("knowledge_id", "type", "service_url", "name", "team_id"):
        body = {k: v for k, v in _kb(c, "kb-2").items() if k != missing}
        envelope = refused(c.org, c.bob, path, body, 400)
        assert envelope["message"].startswith(f"{missing}: "), envelope
    refused(c.org, c.bob, path, _kb(c, "kb-2", name=""), 400, "name: …")
    refused(
        c.org, c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-1", "service_url": "ftp://x"}, 400, "service_url: …"
    )
    refused(c.org, c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-1", "summary": "y" * 257}, 400, "summary: …")
    refused(c.org, c.bob, "/v3/knowledge/delete", {"knowledge_ids": []}, 400, "knowledge_ids: …")
    ids = [f"k{i}" for i in range(101)]
    refused(
        c.org,
        c.bob,
        "/v3/knowledge/delete",
        {"knowledge_ids": ids},
        400,
        "knowledge_ids: must contain at most 100 items",
    )
    listing = {"team_id": c.team_id}
    ids = [f"k{i}" for i in range(201)]
    refused(c.org, c.bob, "/v3/knowledge/list", {**listing, "knowledge_ids": ids}, 400, "knowledge_ids: …")
    refused(c.org, c.bob, "/v3/knowledge/list", {**listing, "pagination": {"limit": 1001}}, 400, "pagination.limit: …")
    refused(c.org, c.bob, "/v3/knowledge/list", {**listing, "pagination": {"limit": 0}}, 400, "pagination.limit: …")
    refused(c.org, c.bob, "/v3/knowledge/list", {**listing, "pagination": {"offset": -1}}, 400, "pagination.offset: …")
    refused(c.org, c.bob, "/v3/knowledge/list", {**listing, "type": "pdf"}, 400, "type: …")
    refused(c.org, c.bob, "/v3/knowledge/list", {}, 400, "team_id: …")
    refused(c.org, c.bob, "/v3/knowledge/get", {}, 400, "knowledge_id: …")


def test_knowledge_get_update(c: Crew) -> None:
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, summary="s", branch="main"))
    refused(c.org, c.bob, "/v3/knowledge/get", {"knowledge_id": "nope"}, 404, "Knowledge not found")
    # Carol is not in kb-1's team: to her it does not exist, whichever team_id she names.
    refused(
        c.org,
        c.carol,
        "/v3/knowledge/get",
        {"knowledge_id": "kb-1", "team_id": c.other_team},
        404,
        "Knowledge not found",
    )
    # Alice may see kb-1, so naming another team is a plain mismatch.
    c.org.join(c.other_team, c.carol, c.alice)
    refused(
        c.org,
        c.alice,
        "/v3/knowledge/get",
        {"knowledge_id": "kb-1", "team_id": c.other_team},
        403,
        "Knowledge team_id mismatch",
    )
    got = c.org.ok(c.alice, "/v3/knowledge/get", {"knowledge_id": "kb-1", "team_id": c.team_id})
    assert got["knowledge_id"] == "kb-1" and got["summary"] == "s"
    update = {
        "knowledge_id": "kb-1",
        "team_id": c.team_id,
        "name": "renamed",
        "service_url": f"{ALLOWED}/v3",
        "repo_url": "https://git/y.git",
        "branch": "dev",
        "summary": None,
    }
    updated = c.org.ok(c.alice, "/v3/knowledge/update", update)
    assert {k: updated[k] for k in ("name", "service_url", "repo_url", "branch", "summary")} == {
        "name": "renamed",
        "service_url": f"{ALLOWED}/v3",
        "repo_url": "https://git/y.git",
        "branch": "dev",
        "summary": None,
    }
    assert updated["type"] == "wiki" and updated["created_at"] == got["created_at"]
    assert updated["updated_at"] >= got["updated_at"]
    assert c.org.ok(c.bob, "/v3/knowledge/get", {"knowledge_id": "kb-1"}) == updated
    partial = c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-1", "name": "again"})
    assert partial["name"] == "again" and partial["branch"] == "dev"
    refused(c.org, c.bob, "/v3/knowledge/update", {"knowledge_id": "nope", "name": "x"}, 404, "Knowledge not found")
    refused(
        c.org,
        c.carol,
        "/v3/knowledge/update",
        {"knowledge_id": "kb-1", "team_id": c.other_team, "name": "x"},
        404,
        "Knowledge not found",
    )
    refused(
        c.org,
        c.alice,
        "/v3/knowledge/update",
        {"knowledge_id": "kb-1", "team_id": c.other_team, "name": "x"},
        403,
        "Knowledge team_id mismatch",
    )


def test_knowledge_delete(c: Crew) -> None:
    for kid in ("k1", "k2", "k3"):
        c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, kid))
    c.org.ok(c.carol, "/v3/knowledge/create", _kb(c, "theirs", team_id=c.other_team))
    data = c.org.ok(c.bob, "/v3/knowledge/delete", {"knowledge_ids": ["k1", "missing", "k1"]})
    assert data == {"deleted_ids": ["k1"], "failed": [{"id": "missing", "reason": "not_found"}]}
    scoped = c.org.ok(c.carol, "/v3/knowledge/delete", {"knowledge_ids": ["theirs"], "team_id": c.other_team})
    assert scoped == {"deleted_ids": ["theirs"], "failed": []}
    # With a team guard, another team's entry is not deleted (the gateway key may name any team).
    guarded = _as_gateway(c, "/v3/knowledge/delete", {"knowledge_ids": ["k2"], "team_id": c.other_team})
    assert guarded["deleted_ids"] == [] and [f["id"] for f in guarded["failed"]] == ["k2"]
    assert set(guarded["failed"][0]) == {"id", "reason"}
    listed = c.org.ok(c.bob, "/v3/knowledge/list", {"team_id": c.team_id})
    assert sorted(i["knowledge_id"] for i in listed["items"]) == ["k2", "k3"]


def test_knowledge_list(c: Crew) -> None:
    for kid, kind in (("w1", "wiki"), ("g1", "code-graph"), ("w2", "wiki"), ("g2", "code-graph")):
        c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, kid, type=kind))
    c.org.ok(c.carol, "/v3/knowledge/create", _kb(c, "w-other", team_id=c.other_team))
    path = "/v3/knowledge/list"
    data = c.org.ok(c.bob, path, {"team_id": c.team_id})
    assert set(data) == {"items", "total"} and data["total"] == 4
    assert all(set(i) == KNOWLEDGE_FIELDS and i["team_id"] == c.team_id for i in data["items"])
    stamps = [i["created_at"] for i in data["items"]]
    assert stamps == sorted(stamps, reverse=True)
    wikis = c.org.ok(c.bob, path, {"team_id": c.team_id, "type": "wiki"})
    assert sorted(i["knowledge_id"] for i in wikis["items"]) == ["w1", "w2"] and wikis["total"] == 2
    batch = c.org.ok(c.bob, path, {"team_id": c.team_id, "knowledge_ids": ["g1", "w2", "w-other", "nope"]})
    assert sorted(i["knowledge_id"] for i in batch["items"]) == ["g1", "w2"] and batch["total"] == 2
    both = c.org.ok(c.bob, path, {"team_id": c.team_id, "type": "code-graph", "knowledge_ids": ["g1", "w2"]})
    assert [i["knowledge_id"] for i in both["items"]] == ["g1"]
    page = c.org.ok(c.bob, path, {"team_id": c.team_id, "pagination": {"limit": 3, "offset": 2}})
    assert len(page["items"]) == 2 and page["total"] == 4
    assert [i["knowledge_id"] for i in page["items"]] == [i["knowledge_id"] for i in data["items"][2:]]
    big = c.org.ok(c.bob, path, {"team_id": c.team_id, "pagination": {"limit": 1000}})
    assert big["total"] == 4
    ids = [f"k{i}" for i in range(200)]
    assert c.org.ok(c.bob, path, {"team_id": c.team_id, "knowledge_ids": ids}) == {"items": [], "total": 0}


def test_knowledge_callers(c: Crew) -> None:
    """The gateway key may act on any team; a user key only on teams its user is an active member of."""
    created = _as_gateway(c, "/v3/knowledge/create", _kb(c, "by-gateway"))
    assert created["team_id"] == c.team_id and created["user_id"] is None
    assert _as_gateway(c, "/v3/knowledge/list", {"team_id": c.other_team}) == {"items": [], "total": 0}
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-1"))
    not_member = f"Not a member of team {c.team_id}"
    refused(c.org, c.carol, "/v3/knowledge/create", _kb(c, "mine"), 403, not_member)
    refused(c.org, c.carol, "/v3/knowledge/list", {"team_id": c.team_id}, 403, not_member)
    refused(c.org, c.carol, "/v3/knowledge/get", {"knowledge_id": "kb-1", "team_id": c.team_id}, 403, not_member)
    refused(
        c.org,
        c.carol,
        "/v3/knowledge/update",
        {"knowledge_id": "kb-1", "team_id": c.team_id, "name": "x"},
        403,
        not_member,
    )
    refused(c.org, c.carol, "/v3/knowledge/delete", {"knowledge_ids": ["kb-1"], "team_id": c.team_id}, 403, not_member)
    # Without a team guard, another team's entry is answered as missing (nothing disclosed).
    refused(c.org, c.carol, "/v3/knowledge/get", {"knowledge_id": "kb-1"}, 404, "Knowledge not found")
    refused(c.org, c.carol, "/v3/knowledge/update", {"knowledge_id": "kb-1", "name": "x"}, 404, "Knowledge not found")
    before = table_snapshot(c.org.gw)
    data = c.org.ok(c.carol, "/v3/knowledge/delete", {"knowledge_ids": ["kb-1"]})
    assert data == {"deleted_ids": [], "failed": [{"id": "kb-1", "reason": "not_found"}]}
    assert table_snapshot(c.org.gw) == before
    # Re-registering someone else's entry id cannot move it into the caller's team.
    refused(
        c.org, c.carol, "/v3/knowledge/create", _kb(c, "kb-1", team_id=c.other_team), 403, "Knowledge team_id mismatch"
    )
    # A user key names only its own user.
    refused(
        c.org,
        c.bob,
        "/v3/knowledge/create",
        _kb(c, "kb-2", user_id=c.alice.user_id),
        403,
        "user_id does not match caller",
    )
    # A removed member loses access at once.
    c.org.ok(c.alice, "/v3/meta/team-member/remove", {"team_id": c.team_id, "user_id": c.bob.user_id})
    refused(c.org, c.bob, "/v3/knowledge/list", {"team_id": c.team_id}, 403, not_member)


def test_knowledge_credentials(c: Crew, make_org: Callable[..., Org]) -> None:
    client = c.org.gw.client
    body = {"team_id": c.team_id}
    # A user key alone as the Bearer (no gateway key) authenticates that user.
    response = client.post(
        "/v3/knowledge/list",
        json=body,
        headers={"authorization": f"Bearer {c.bob.key}", "x-tdai-service-id": c.org.service},
    )
    assert response.status_code == 200 and response.json()["data"] == {"items": [], "total": 0}
    response = client.post(
        "/v3/knowledge/list",
        json=body,
        headers={"authorization": f"Bearer {c.carol.key}", "x-tdai-service-id": c.org.service},
    )
    assert response.status_code == 403
    for headers, message in (
        ({**_gateway_headers(c), "x-tdai-user-key": "sk-mem-not-a-key"}, "unauthorized: invalid_user_key"),
        (
            {"authorization": "Bearer sk-mem-not-a-key", "x-tdai-service-id": c.org.service},
            "unauthorized: invalid_user_key",
        ),
        ({"authorization": f"Bearer {c.org.gw.key}"}, "Missing x-tdai-service-id header"),
        ({"x-tdai-service-id": c.org.service}, "Unauthorized: missing Bearer token"),
        ({"authorization": "Bearer wrong", "x-tdai-service-id": c.org.service}, "Unauthorized: invalid token"),
    ):
        before = table_snapshot(c.org.gw)
        response = client.post("/v3/knowledge/create", json=_kb(c, "k-denied"), headers=headers)
        assert response.status_code == 401 and response.json()["code"] == 401, response.text
        assert response.json()["message"] == message
        assert table_snapshot(c.org.gw) == before
    # The key of one service id is unknown to another.
    other = {
        "authorization": f"Bearer {c.org.gw.key}",
        "x-tdai-service-id": "svc-elsewhere",
        "x-tdai-user-key": c.bob.key,
    }
    response = client.post("/v3/knowledge/list", json=body, headers=other)
    assert response.status_code == 401 and response.json()["message"] == "unauthorized: invalid_user_key"

    org = make_org("strict", data_plane_auth="user_key")
    strict = org.gw
    team_id = org.team(org.admin, "t")
    response = strict.client.post("/v3/knowledge/list", json={"team_id": team_id}, headers=org.headers(None))
    assert response.status_code == 401 and response.json()["message"] == "unauthorized: missing_user_key"
    assert org.ok(org.admin, "/v3/knowledge/list", {"team_id": team_id}) == {"items": [], "total": 0}


# -- knowledge: who may change an entry, where it may point ----------------------------------------
def _not_yours(c: Crew, knowledge_id: str) -> str:
    return (
        f"knowledge_id: {knowledge_id} was registered by another user;"
        f" only its owner or an admin of team {c.team_id} may change or delete it"
    )


def _entry(c: Crew, knowledge_id: str) -> dict[str, Any]:
    data: dict[str, Any] = c.org.ok(c.alice, "/v3/knowledge/get", {"knowledge_id": knowledge_id})
    return data


def test_a_member_cannot_change_or_delete_another_member_s_entry(c: Crew) -> None:
    mine = c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-bob"))
    assert mine["user_id"] == c.bob.user_id  # a user who sends no user_id registers the entry as their own
    message = _not_yours(c, "kb-bob")
    hijack = {"knowledge_id": "kb-bob", "service_url": f"{ALLOWED}/v3"}
    refused(c.org, c.dave, "/v3/knowledge/update", hijack, 403, message)
    refused(c.org, c.dave, "/v3/knowledge/update", {**hijack, "team_id": c.team_id, "name": "mine now"}, 403, message)
    refused(c.org, c.dave, "/v3/knowledge/delete", {"knowledge_ids": ["kb-bob"]}, 403, message)
    refused(c.org, c.dave, "/v3/knowledge/delete", {"knowledge_ids": ["kb-bob"], "team_id": c.team_id}, 403, message)
    # Creating an id that exists is an update of that entry, with or without naming oneself as its user.
    refused(c.org, c.dave, "/v3/knowledge/create", _kb(c, "kb-bob", name="mine now"), 403, message)
    refused(c.org, c.dave, "/v3/knowledge/create", _kb(c, "kb-bob", user_id=c.dave.user_id), 403, message)
    # One entry that is not the caller's refuses the whole delete: the caller's own entry is not deleted either.
    c.org.ok(c.dave, "/v3/knowledge/create", _kb(c, "kb-dave"))
    refused(c.org, c.dave, "/v3/knowledge/delete", {"knowledge_ids": ["kb-dave", "kb-bob"]}, 403, message)
    assert _entry(c, "kb-bob") == mine
    # The owner still manages their entry; a plain member still registers, changes and deletes their own.
    assert c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-bob", "name": "renamed"})["name"] == "renamed"
    assert c.org.ok(c.dave, "/v3/knowledge/update", {"knowledge_id": "kb-dave", "name": "d"})["name"] == "d"
    assert c.org.ok(c.dave, "/v3/knowledge/delete", {"knowledge_ids": ["kb-dave"]})["deleted_ids"] == ["kb-dave"]
    assert c.org.ok(c.bob, "/v3/knowledge/delete", {"knowledge_ids": ["kb-bob"]})["deleted_ids"] == ["kb-bob"]


def test_team_admins_and_the_owner_manage_every_entry_of_their_team(c: Crew) -> None:
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-bob"))
    for who, name in ((c.alice, "by the team owner"), (c.erin, "by a team admin"), (c.org.admin, "by a system admin")):
        assert c.org.ok(who, "/v3/knowledge/update", {"knowledge_id": "kb-bob", "name": name})["name"] == name
    assert _as_gateway(c, "/v3/knowledge/update", {"knowledge_id": "kb-bob", "name": "by the gateway key"})
    # Re-created by an admin without a user_id: the entry keeps its owner.
    again = c.org.ok(c.erin, "/v3/knowledge/create", _kb(c, "kb-bob", name="re-created"))
    assert (again["name"], again["user_id"]) == ("re-created", c.bob.user_id)
    c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-bob", "summary": "still bob's"})
    # An entry registered by the gateway key has no owner: only admins change it.
    _as_gateway(c, "/v3/knowledge/create", _kb(c, "kb-gw"))
    refused(c.org, c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-gw", "name": "x"}, 403, _not_yours(c, "kb-gw"))
    # Admin rights are per team: erin administers c.team_id, not carol's team.
    c.org.ok(c.carol, "/v3/knowledge/create", _kb(c, "kb-carol", team_id=c.other_team))
    c.org.join(c.other_team, c.carol, c.erin)
    message = (
        "knowledge_id: kb-carol was registered by another user;"
        f" only its owner or an admin of team {c.other_team} may change or delete it"
    )
    refused(c.org, c.erin, "/v3/knowledge/delete", {"knowledge_ids": ["kb-carol"]}, 403, message)
    deleted = c.org.ok(c.erin, "/v3/knowledge/delete", {"knowledge_ids": ["kb-bob", "kb-gw"]})
    assert deleted == {"deleted_ids": ["kb-bob", "kb-gw"], "failed": []}


def test_a_removed_admin_loses_the_right_at_once(c: Crew) -> None:
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-bob"))
    c.org.join(c.team_id, c.alice, c.erin, "member")  # demoted
    body = {"knowledge_id": "kb-bob", "name": "x"}
    refused(c.org, c.erin, "/v3/knowledge/update", body, 403, _not_yours(c, "kb-bob"))


SERVICE_URL_RULE = (
    "service_url: must be on this gateway's public origin or an origin in MEMHUB_KNOWLEDGE_URL_ALLOWLIST"
    f" (accepted: http://127.0.0.1:8420, {ALLOWED})"
)


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/v3",
        "http://127.0.0.1.evil.example:8420/v3",  # our host as a prefix of theirs
        "http://127.0.0.1:8421/v3",  # another port on our host
        "https://127.0.0.1:8420/v3",  # another scheme
        "http://localhost:8420/v3",  # the same machine under a name the operator did not list
        "https://ks.example/v3",  # the allow-listed host on its default port, not 9000
        "https://ks.example:9001/v3",
        "http://ks.example:9000/v3",
        "https://ks.example.evil.example:9000/v3",
        "https://evil.example/https://ks.example:9000/v3",
        "https://evil.example/v3?https://ks.example:9000",
    ],
)
def test_a_service_url_on_a_foreign_origin_is_refused(c: Crew, url: str) -> None:
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-bob"))
    refused(c.org, c.bob, "/v3/knowledge/create", _kb(c, "kb-new", service_url=url), 400, SERVICE_URL_RULE)
    refused(c.org, c.bob, "/v3/knowledge/create", _kb(c, "kb-bob", service_url=url), 400, SERVICE_URL_RULE)
    refused(c.org, c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-bob", "service_url": url}, 400, SERVICE_URL_RULE)
    # The rule is the same for every caller: a team owner, a system admin, the gateway key.
    refused(c.org, c.alice, "/v3/knowledge/create", _kb(c, "kb-new", service_url=url), 400, SERVICE_URL_RULE)
    refused(c.org, c.org.admin, "/v3/knowledge/create", _kb(c, "kb-new", service_url=url), 400, SERVICE_URL_RULE)
    before = table_snapshot(c.org.gw)
    response = c.org.gw.client.post(
        "/v3/knowledge/create", json=_kb(c, "kb-new", service_url=url), headers=_gateway_headers(c)
    )
    assert response.status_code == 400 and response.json()["message"] == SERVICE_URL_RULE
    assert table_snapshot(c.org.gw) == before


@pytest.mark.parametrize(
    "url",
    [
        "https://good@ks.example:9000/v3",  # user info: the host is what follows the @
        "http://127.0.0.1:8420@evil.example/v3",
        "https://ks.example:9000\\@evil.example/v3",
        "https://ks.example:9000 /v3",
        'https://ks.example:9000/v3"',
        "https://ks.example:99999/v3",
    ],
)
def test_an_ambiguous_service_url_is_refused(c: Crew, url: str) -> None:
    message = "service_url: must be an http(s) URL with a plain host: no user@ part, spaces, quotes or backslashes"
    refused(c.org, c.bob, "/v3/knowledge/create", _kb(c, "kb-new", service_url=url), 400, message)


def test_service_urls_on_trusted_origins_are_accepted(c: Crew) -> None:
    for n, (url, stored) in enumerate(
        [
            (OWN_URL, OWN_URL),
            ("HTTP://127.0.0.1:8420/v3", OWN_URL),
            ("http://127.0.0.1:8420/other/v3", "http://127.0.0.1:8420/other/v3"),
            (f"{ALLOWED}/v3", f"{ALLOWED}/v3"),
            ("https://KS.example:9000/kb/v3", f"{ALLOWED}/kb/v3"),
            ("https://ks.example.:9000/v3", f"{ALLOWED}/v3"),
        ]
    ):
        assert c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, f"kb-{n}", service_url=url))["service_url"] == stored
    assert c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-0", "service_url": f"{ALLOWED}/v3"})
    assert rows(c.org, "SELECT COUNT(*) FROM knowledge_registry WHERE team_id = ?", c.team_id) == [(6,)]


# Each passes as this gateway's own origin, but its text could make a teammate reading the block take another host
# or path for the one the request goes to: it is stored, and shown, in its canonical form.
MISLEADING = [
    ("http://127.0.0.1:8420#@evil.example", "http://127.0.0.1:8420"),
    ("http://127.0.0.1:8420/v3#@evil.example/v3", OWN_URL),
    ("http://127.0.0.1:8420/evil.example/../v3", OWN_URL),
    ("http://127.0.0.1:8420/v3/../../admin/./x/..", "http://127.0.0.1:8420/admin/"),
    ("http://127.0.0.1:8420/x/%2E%2e/v3", OWN_URL),
    ("HTTP://127.0.0.1:8420/./v3/#top", "http://127.0.0.1:8420/v3/"),
]


@pytest.mark.parametrize(("url", "canonical"), MISLEADING)
def test_a_service_url_is_stored_and_shown_in_its_canonical_form(c: Crew, url: str, canonical: str) -> None:
    created = c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-odd", service_url=url))
    assert created["service_url"] == canonical
    stored = "SELECT service_url FROM knowledge_registry WHERE service_id = ? AND knowledge_id = 'kb-odd'"
    assert rows(c.org, stored, c.org.service) == [(canonical,)]
    assert c.org.ok(c.dave, "/v3/knowledge/get", {"knowledge_id": "kb-odd"})["service_url"] == canonical
    c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-odd", "service_url": OWN_URL})
    updated = c.org.ok(c.bob, "/v3/knowledge/update", {"knowledge_id": "kb-odd", "service_url": url})
    assert updated["service_url"] == canonical
    listed = c.org.ok(c.dave, "/v3/knowledge/list", {"team_id": c.team_id})["items"]
    assert [i["service_url"] for i in listed] == [canonical]


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("http://127.0.0.1:8420/v3?x=1", "must not have a query (agents append /tools/list to it)"),
        ("http://127.0.0.1:8420/v3?@evil.example", "must not have a query (agents append /tools/list to it)"),
        (
            "http://127.0.0.1:8420/@evil.example/v3",
            "must have no @ in its path (it only makes a reader take what follows for the host)",
        ),
        ("http://127.0.0.1:8420/v3%zz", "must write a % only as an escape of two hex digits (%2F)"),
    ],
)
def test_a_service_url_without_a_canonical_form_is_refused(c: Crew, url: str, rule: str) -> None:
    c.org.ok(c.bob, "/v3/knowledge/create", _kb(c, "kb-bob"))
    envelope = refused(c.org, c.bob, "/v3/knowledge/create", _kb(c, "kb-new", service_url=url), 400)
    assert envelope["message"] == f"service_url: {rule}"
    assert envelope["data"]["errors"] == [{"field": "service_url", "rule": rule}]
    update = {"knowledge_id": "kb-bob", "service_url": url}
    refused(c.org, c.bob, "/v3/knowledge/update", update, 400, f"service_url: {rule}")
    assert c.org.ok(c.bob, "/v3/knowledge/get", {"knowledge_id": "kb-bob"})["service_url"] == OWN_URL
