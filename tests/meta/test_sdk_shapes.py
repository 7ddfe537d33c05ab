"""memhub.sdk's MetadataClient against a live server (uvicorn on a socket): request shapes and responses.

The bodies must be exactly those of the TencentDB Python SDK (fixed bodies, `_body`
None-stripping, `pagination` merged into list bodies, `revoke_acl(acl_id)` → `{"id": …}`); a recording
transport captures what went on the wire. One realistic scenario calls every one of the 59 methods
(54 meta + 5 knowledge) at least once and checks the response fields the SDK's callers read.
"""

from __future__ import annotations

from typing import Any

import pytest

from memhub.sdk import AsyncMetadataClient, MetadataClient, ParamError, TDAMError
from tests.conftest import Gateway
from tests.meta.metadata_client import Recorder
from tests.meta.shapes import (
    ACL_FIELDS,
    AGENT_FIELDS,
    ASSET_FIELDS,
    BINDING_FIELDS,
    DETAIL_ITEM_FIELDS,
    ISO_MS,
    KEY_FIELDS,
    KNOWLEDGE_FIELDS,
    LOG_FIELDS,
    MEMBER_FIELDS,
    TASK_AGENT_FIELDS,
    TASK_FIELDS,
    TEAM_FIELDS,
    USER_FIELDS,
)

PAGE = {"items", "total", "limit", "offset"}
CREATED_USER = {"user_id", "user_type", "created_at", "default_user_key"}
BATCH = {"deleted_ids", "failed"}
OK = {"ok": True}
SERVICE = "svc-sdk"


def has(data: Any, keys: set[str]) -> None:
    """The fields a caller reads are all there (extra fields are allowed)."""
    assert isinstance(data, dict), data
    missing = keys - set(data)
    assert not missing, (missing, data)


def page_of(data: Any, keys: set[str]) -> list[dict[str, Any]]:
    has(data, PAGE)
    assert isinstance(data["total"], int) and data["total"] >= len(data["items"])
    for item in data["items"]:
        has(item, keys)
    return data["items"]


class Recorded(MetadataClient):
    """The SDK's MetadataClient over a recording transport; `sent` is every (path, body) that went out."""

    def __init__(self, endpoint: str, api_key: str, service_id: str | None, *, user_key: str | None = None) -> None:
        self.recorder = Recorder()
        super().__init__(endpoint, api_key, service_id, user_key=user_key, transport=self.recorder)

    @property
    def sent(self) -> list[tuple[str, Any]]:
        return self.recorder.calls


def _client(gw: Gateway, user_key: str | None) -> Recorded:
    assert gw.key is not None
    return Recorded(str(gw.client.base_url), gw.key, SERVICE, user_key=user_key)


def test_client_guards() -> None:
    with pytest.raises(ParamError, match="service_id must be provided"):
        Recorded("http://127.0.0.1:9", "k", None)
    with pytest.raises(ParamError, match="api_key must be provided"):
        Recorded("http://127.0.0.1:9", "", "svc")
    client = Recorded("http://127.0.0.1:9", "k", "svc")
    with pytest.raises(ParamError, match="request payload must be a dict"):
        client.create_user("alice")  # type: ignore[arg-type]
    with pytest.raises(ParamError, match="list_teams requires one of user_id, user_key"):
        client.list_teams({"name": "x"})
    with pytest.raises(ParamError, match="list_tasks requires one of team_id, creator_user_id, creator_user_key"):
        client.list_tasks({"creator_user_id": "  "})
    assert client.sent == []


def test_every_sdk_method_against_a_live_server(live: Gateway) -> None:
    boot = live.client.post(
        "/v3/internal/meta/user/init-admin",
        json={"username": "root"},
        headers={"authorization": f"Bearer {live.key}", "x-tdai-service-id": SERVICE},
    ).json()["data"]
    admin = _client(live, boot["user_key"])
    anonymous = _client(live, None)
    clients = [admin, anonymous]

    # -- auth, quota, users ---------------------------------------------------------------------
    verified = anonymous.verify_auth(boot["user_key"])
    assert verified["valid"] is True
    has(verified["user"], USER_FIELDS)
    assert verified["user"]["user_type"] == "system_admin"
    assert anonymous.verify_auth("sk-mem-nope") == {"valid": False, "user": None}
    assert admin.get_instance_quota() == {"max_users_per_instance": 500, "max_teams_per_instance": 100}
    assert admin.sent[-1] == ("/v3/meta/instance-quota/get", {})

    created = {}
    for name in ("alice", "bob", "carol"):
        data = admin.create_user({"username": name, "email": None, "display_name": None})
        has(data, CREATED_USER)
        assert data["user_type"] == "normal" and data["default_user_key"].startswith("sk-mem-")
        created[name] = data
    assert admin.sent[-1] == ("/v3/meta/user/create", {"username": "carol"})  # None-stripped
    alice_id, bob_id, carol_id = (created[n]["user_id"] for n in ("alice", "bob", "carol"))
    alice = _client(live, created["alice"]["default_user_key"])
    bob = _client(live, created["bob"]["default_user_key"])
    carol = _client(live, created["carol"]["default_user_key"])
    clients += [alice, bob, carol]

    got = admin.get_user(alice_id)
    has(got, USER_FIELDS)
    assert (got["user_id"], got["username"]) == (alice_id, "alice")
    assert admin.sent[-1] == ("/v3/meta/user/get", {"user_id": alice_id})
    assert alice.get_user({"user_key": created["alice"]["default_user_key"], "user_id": None})["user_id"] == alice_id
    users = page_of(admin.list_users(), USER_FIELDS)
    assert {u["user_id"] for u in users} >= {alice_id, bob_id, carol_id}
    assert admin.sent[-1] == ("/v3/meta/user/list", {})

    # -- user keys -------------------------------------------------------------------------------
    key = alice.create_user_key({"user_id": None, "name": "laptop", "expires_at": None})
    has(key, KEY_FIELDS | {"key_value"})
    assert alice.sent[-1] == ("/v3/meta/user-key/create", {"name": "laptop"})
    assert key["key_value"].startswith("sk-mem-") and key["key_prefix"].startswith("sk-mem-****")
    assert key["key_prefix"].endswith(key["key_value"][-4:]) and key["is_default"] is False
    keys = page_of(alice.list_user_keys(alice_id, pagination={"limit": 5, "offset": 0}), KEY_FIELDS)
    assert alice.sent[-1] == ("/v3/meta/user-key/list", {"user_id": alice_id, "limit": 5, "offset": 0})
    assert len(keys) == 2 and all("key_value" not in k for k in keys)
    has(alice.get_user_key(key["key_id"]), KEY_FIELDS)
    renamed = alice.update_user_key({"key_id": key["key_id"], "name": "desk", "expires_at": "2031-01-01T00:00:00Z"})
    has(renamed, KEY_FIELDS)
    assert (renamed["name"], renamed["expires_at"]) == ("desk", "2031-01-01T00:00:00Z")
    assert alice.revoke_user_key(key["key_id"]) == OK
    assert alice.sent[-1] == ("/v3/meta/user-key/revoke", {"key_id": key["key_id"]})

    # -- teams and members --------------------------------------------------------------------------
    team = alice.create_team({"name": "core", "owner_user_id": alice_id, "description": None})
    has(team, TEAM_FIELDS)
    assert alice.sent[-1] == ("/v3/meta/team/create", {"name": "core", "owner_user_id": alice_id})
    team_id = team["team_id"]
    spare = alice.create_team({"name": "spare", "owner_user_id": alice_id})["team_id"]
    assert alice.get_team(team_id) == team
    updated = alice.update_team({"team_id": team_id, "description": "the core team", "status": None})
    has(updated, TEAM_FIELDS)
    assert updated["description"] == "the core team"
    teams = page_of(alice.list_teams(alice_id, pagination={"limit": 5}), TEAM_FIELDS)
    assert alice.sent[-1] == ("/v3/meta/team/list", {"user_id": alice_id, "limit": 5})
    assert {t["team_id"] for t in teams} == {team_id, spare}
    by_key = page_of(alice.list_teams({"user_key": created["alice"]["default_user_key"], "name": "core"}), TEAM_FIELDS)
    assert [t["team_id"] for t in by_key] == [team_id]
    for user_id, role in ((bob_id, "member"), (carol_id, "reviewer")):
        member = alice.add_team_member({"team_id": team_id, "user_id": user_id, "role": role, "status": None})
        has(member, MEMBER_FIELDS)
        assert (member["team_id"], member["user_id"], member["role"], member["status"]) == (
            team_id,
            user_id,
            role,
            "active",
        )
    assert alice.sent[-1] == (
        "/v3/meta/team-member/add",
        {"team_id": team_id, "user_id": carol_id, "role": "reviewer"},
    )
    view = bob.get_team_member(team_id, bob_id)
    has(view, MEMBER_FIELDS | {"username"})
    assert view["username"] == "bob"
    members = page_of(bob.list_team_members(team_id, pagination={"limit": 10}), MEMBER_FIELDS | {"username"})
    assert {m["user_id"] for m in members} == {alice_id, bob_id, carol_id}
    assert bob.sent[-1] == ("/v3/meta/team-member/list", {"team_id": team_id, "limit": 10})
    users = page_of(admin.list_users(team_id, pagination={"limit": 10}), USER_FIELDS)
    assert {u["user_id"] for u in users} == {alice_id, bob_id, carol_id}
    assert admin.sent[-1] == ("/v3/meta/user/list", {"team_id": team_id, "limit": 10})

    # -- agents ----------------------------------------------------------------------------------------
    agent = alice.create_agent(
        {"team_id": team_id, "owner_user_id": alice_id, "name": "coder", "visibility": "team", "prompt": None}
    )
    has(agent, AGENT_FIELDS)
    assert "prompt" not in alice.sent[-1][1]
    agent_id = agent["agent_id"]
    assert bob.get_agent(agent_id) == agent
    agent = alice.update_agent({"agent_id": agent_id, "prompt": "be terse", "description": None})
    has(agent, AGENT_FIELDS)
    assert agent["prompt"] == "be terse"
    helper_id = alice.create_agent({"team_id": team_id, "owner_user_id": alice_id, "name": "helper"})["agent_id"]
    doomed_id = alice.create_agent({"team_id": team_id, "owner_user_id": alice_id, "name": "doomed"})["agent_id"]
    listed = page_of(bob.list_agents({"team_id": team_id, "status": None}), AGENT_FIELDS)
    assert {agent_id, helper_id, doomed_id} <= {a["agent_id"] for a in listed}
    mine = page_of(alice.list_agents({"owner_user_key": created["alice"]["default_user_key"]}), AGENT_FIELDS)
    assert {agent_id, helper_id, doomed_id} <= {a["agent_id"] for a in mine}
    archived = alice.archive_agent(helper_id)
    has(archived, AGENT_FIELDS)
    assert archived["status"] == "inactive"
    deleted = alice.delete_agents([doomed_id])
    has(deleted, BATCH)
    assert deleted == {"deleted_ids": [doomed_id], "failed": []}

    # -- tasks -----------------------------------------------------------------------------------------
    task = alice.create_task(
        {
            "team_id": team_id,
            "creator_user_id": alice_id,
            "title": "ship it",
            "linked_agents": [{"agent_id": agent_id, "role_in_task": "lead"}],
            "risk_level": None,
        }
    )
    has(task, TASK_FIELDS)
    assert task["status"] == "running" and task["auto_assign_floating_assets"] is False
    task_id = task["task_id"]
    assert bob.get_task(task_id) == task
    task = alice.update_task({"task_id": task_id, "auto_assign_floating_assets": True, "source_url": None})
    has(task, TASK_FIELDS)
    assert task["auto_assign_floating_assets"] is True
    tasks = page_of(bob.list_tasks(team_id, status="running", pagination={"limit": 10}), TASK_FIELDS)
    assert bob.sent[-1] == ("/v3/meta/task/list", {"team_id": team_id, "status": "running", "limit": 10})
    assert [t["task_id"] for t in tasks] == [task_id]
    page_of(alice.list_tasks(team_id), TASK_FIELDS)
    assert alice.sent[-1] == ("/v3/meta/task/list", {"team_id": team_id})  # status None stripped
    assert [t["task_id"] for t in page_of(alice.list_tasks({"creator_user_id": alice_id}), TASK_FIELDS)] == [task_id]
    link = alice.link_task_agent(task_id, helper_id)
    has(link, TASK_AGENT_FIELDS)
    assert alice.sent[-1] == ("/v3/meta/task-agent/link", {"task_id": task_id, "agent_id": helper_id})
    links = page_of(bob.list_task_agents(task_id, pagination={"limit": 10}), TASK_AGENT_FIELDS)
    assert {(x["agent_id"], x["role_in_task"]) for x in links} == {(agent_id, "lead"), (helper_id, None)}
    assert alice.unlink_task_agent(task_id, helper_id) == OK
    log = bob.append_participation_log(
        {
            "team_id": team_id,
            "task_id": task_id,
            "agent_id": agent_id,
            "user_id": bob_id,
            "source": "sdk",
            "created_at": None,
        }
    )
    has(log, LOG_FIELDS)
    assert ISO_MS.fullmatch(log["created_at"])
    logs = page_of(bob.list_participation_logs({"team_id": team_id, "task_id": task_id, "dedupe": True}), LOG_FIELDS)
    assert [x["user_id"] for x in logs] == [bob_id]
    closed = alice.archive_task(task_id)
    has(closed, TASK_FIELDS)
    assert closed["status"] == "completed"
    spare_task = alice.create_task({"team_id": team_id, "creator_user_id": alice_id, "title": "spare"})["task_id"]
    assert alice.delete_tasks([spare_task]) == {"deleted_ids": [spare_task], "failed": []}

    # -- assets, bindings, ACL -----------------------------------------------------------------------------
    asset = alice.create_asset(
        {
            "asset_id": "skill-review",
            "team_id": team_id,
            "asset_type": "skill",
            "name": "review",
            "owner_user_id": alice_id,
            "source_type": "manual",
            "visibility": "team",
            "description": None,
        }
    )
    has(asset, ASSET_FIELDS)
    assert bob.get_asset("skill-review") == asset
    asset = alice.update_asset({"asset_id": "skill-review", "status": "approved", "confidence": None})
    has(asset, ASSET_FIELDS)
    assert asset["status"] == "approved"
    alice.create_asset(
        {
            "asset_id": "wiki-doomed",
            "team_id": team_id,
            "asset_type": "llm_wiki",
            "name": "doomed",
            "owner_user_id": alice_id,
            "source_type": "manual",
        }
    )
    assets = page_of(bob.list_assets({"team_id": team_id, "asset_type": None}), ASSET_FIELDS)
    assert {"skill-review", "wiki-doomed"} <= {a["asset_id"] for a in assets}
    accessible = page_of(
        bob.list_accessible_assets({"user_id": bob_id, "team_id": team_id, "visibility": ["team", "agent"]}),
        ASSET_FIELDS,
    )
    assert {a["asset_id"] for a in accessible} == {"skill-review", "wiki-doomed"}
    assert alice.touch_asset_usage("skill-review") == OK
    bindings = [
        {
            "asset_id": "skill-review",
            "asset_type": "skill",
            "injection_mode": None,
            "priority": None,
            "created_by": alice_id,
        }
    ]
    assert alice.set_agent_fixed_assets(agent_id, bindings) == OK
    assert alice.sent[-1] == ("/v3/meta/agent-fixed-asset/set", {"agent_id": agent_id, "bindings": bindings})
    bound = page_of(bob.list_agent_fixed_assets(agent_id, pagination={"limit": 10}), BINDING_FIELDS)
    assert [(b["asset_id"], b["injection_mode"], b["priority"]) for b in bound] == [("skill-review", "summary", 50)]
    detail = bob.list_agent_fixed_assets_with_detail(
        {"agent_id": agent_id, "apply_visibility_filter": True, "touch_usage": True, "asset_types": None}
    )
    has(detail, {"agent", "items", "total", "limit", "offset"})
    has(detail["agent"], {"agent_id", "team_id", "owner_user_id", "prompt", "visibility", "status"})
    assert [i["asset_id"] for i in detail["items"]] == ["skill-review"]
    has(detail["items"][0], DETAIL_ITEM_FIELDS)
    assert alice.get_asset("skill-review")["usage_count"] == 2  # touch-usage + list-with-detail
    summary = bob.summarize_agent_fixed_assets_by_agents({"agent_ids": [agent_id, helper_id], "asset_id": None})
    has(summary, {"items", "total"})
    assert summary["items"][0] == {
        "agent_id": agent_id,
        "counts": {"skill": 1, "llm_wiki": 0, "code_graph": 0, "chat_memory": 0},
        "total": 1,
    }
    acl = alice.grant_acl(
        {
            "asset_id": "skill-review",
            "subject_type": "user",
            "subject_id": bob_id,
            "permission": "delete",
            "effect": None,
            "granted_by": alice_id,
        }
    )
    has(acl, ACL_FIELDS)
    assert acl["effect"] == "allow"
    entries = page_of(alice.list_acl("skill-review", pagination={"limit": 10}), ACL_FIELDS)
    assert [e["id"] for e in entries] == [acl["id"]]
    verdict = alice.check_acl({"user_id": bob_id, "asset_id": "skill-review", "action": "delete", "agent_id": None})
    assert verdict == {"allowed": True, "reason": f"acl:{acl['id']}"}
    assert alice.revoke_acl(acl["id"]) == OK
    assert alice.sent[-1] == ("/v3/meta/acl/revoke", {"id": acl["id"]})
    assert bob.check_acl(
        {"user_key": created["bob"]["default_user_key"], "asset_id": "skill-review", "action": "delete"}
    ) == {
        "allowed": False,
        "reason": "no_permission",
    }
    assert alice.delete_assets(["wiki-doomed"]) == {"deleted_ids": ["wiki-doomed"], "failed": []}

    # -- config ----------------------------------------------------------------------------------------
    config = bob.get_user_config({"user_id": bob_id, "module": "asset_type", "param_name": None})
    has(config, {"user_id", "module", "module_description", "items"})
    for item in config["items"]:
        has(item, {"module", "param_name", "param_key", "description", "effective_value"})
    assert bob.set_user_config({"user_id": bob_id, "module": "asset_type", "params": {"skill.enabled": "0"}}) == OK
    skill = bob.get_user_config({"user_id": bob_id, "module": "asset_type", "param_name": "skill.enabled"})
    assert [i["effective_value"] for i in skill["items"]] == ["0"]

    # -- knowledge -------------------------------------------------------------------------------------
    entry = bob.create_knowledge(
        {
            "knowledge_id": "kb-handbook",
            "type": "wiki",
            "service_url": "http://127.0.0.1:8420/v3",  # the gateway's own (default) public URL
            "name": "handbook",
            "summary": None,
            "team_id": team_id,
            "user_id": bob_id,
            "repo_url": None,
        }
    )
    has(entry, KNOWLEDGE_FIELDS)
    assert "summary" not in bob.sent[-1][1]
    assert bob.get_knowledge("kb-handbook") == entry
    assert bob.sent[-1] == ("/v3/knowledge/get", {"knowledge_id": "kb-handbook"})
    assert bob.get_knowledge("kb-handbook", team_id) == entry
    changed = bob.update_knowledge({"knowledge_id": "kb-handbook", "team_id": team_id, "summary": "how we work"})
    has(changed, KNOWLEDGE_FIELDS)
    assert changed["summary"] == "how we work"
    listed_kb = bob.list_knowledge({"team_id": team_id, "type": "wiki", "pagination": {"limit": 10}})
    assert set(listed_kb) == {"items", "total"} and [k["knowledge_id"] for k in listed_kb["items"]] == ["kb-handbook"]
    assert bob.delete_knowledge(["kb-handbook", "kb-missing"]) == {
        "deleted_ids": ["kb-handbook"],
        "failed": [{"id": "kb-missing", "reason": "not_found"}],
    }
    assert bob.sent[-1] == ("/v3/knowledge/delete", {"knowledge_ids": ["kb-handbook", "kb-missing"]})

    # -- removals --------------------------------------------------------------------------------------
    assert alice.remove_team_member(team_id, carol_id) == OK
    assert alice.delete_teams([spare]) == {"deleted_ids": [spare], "failed": []}
    assert admin.delete_users([carol_id]) == {"deleted_ids": [carol_id], "failed": []}

    # -- errors surface as TDAMError with the envelope's code, message and request id -----------------------
    with pytest.raises(TDAMError) as caught:
        bob.get_team("team-nope")
    assert caught.value.code == 404 and caught.value.message == "team_not_found: not found: team-nope"
    assert caught.value.request_id.startswith("req-")
    with pytest.raises(TDAMError) as caught:
        bob.create_user({"username": "mallory"})
    assert (
        caught.value.code == 403 and caught.value.message == "permission_denied: user management requires system admin"
    )
    with pytest.raises(TDAMError) as caught:
        carol.get_team(team_id)  # carol was deleted: her key is dead
    assert caught.value.code == 401 and caught.value.message == "unauthorized: invalid_user_key"

    # Every one of the SDK's 59 methods was replayed.
    routes = {path for client in clients for path, _ in client.sent}
    expected = set(ROUTES.values())
    assert len(expected) == 59
    assert expected <= routes, expected - routes
    for client in clients:
        client.close()


def test_the_sdk_has_exactly_the_59_methods_sync_and_async() -> None:
    """Both clients expose every method of the route table (tests/sdk checks each posts to its route)."""
    for cls in (MetadataClient, AsyncMetadataClient):
        calls = {name for name in dir(cls) if not name.startswith("_") and name != "close"}
        assert calls == set(ROUTES), calls ^ set(ROUTES)


# The route each of the SDK's 59 methods posts to (metadata_client.py of the original).
ROUTES = {
    "create_user": "/v3/meta/user/create",
    "get_user": "/v3/meta/user/get",
    "delete_users": "/v3/meta/user/delete",
    "list_users": "/v3/meta/user/list",
    "create_user_key": "/v3/meta/user-key/create",
    "list_user_keys": "/v3/meta/user-key/list",
    "get_user_key": "/v3/meta/user-key/get",
    "revoke_user_key": "/v3/meta/user-key/revoke",
    "update_user_key": "/v3/meta/user-key/update",
    "create_team": "/v3/meta/team/create",
    "get_team": "/v3/meta/team/get",
    "update_team": "/v3/meta/team/update",
    "delete_teams": "/v3/meta/team/delete",
    "list_teams": "/v3/meta/team/list",
    "add_team_member": "/v3/meta/team-member/add",
    "remove_team_member": "/v3/meta/team-member/remove",
    "list_team_members": "/v3/meta/team-member/list",
    "get_team_member": "/v3/meta/team-member/get",
    "create_agent": "/v3/meta/agent/create",
    "get_agent": "/v3/meta/agent/get",
    "update_agent": "/v3/meta/agent/update",
    "delete_agents": "/v3/meta/agent/delete",
    "list_agents": "/v3/meta/agent/list",
    "archive_agent": "/v3/meta/agent/archive",
    "create_task": "/v3/meta/task/create",
    "get_task": "/v3/meta/task/get",
    "update_task": "/v3/meta/task/update",
    "delete_tasks": "/v3/meta/task/delete",
    "list_tasks": "/v3/meta/task/list",
    "archive_task": "/v3/meta/task/archive",
    "link_task_agent": "/v3/meta/task-agent/link",
    "unlink_task_agent": "/v3/meta/task-agent/unlink",
    "list_task_agents": "/v3/meta/task-agent/list",
    "append_participation_log": "/v3/meta/participation-log/append",
    "list_participation_logs": "/v3/meta/participation-log/list",
    "create_asset": "/v3/meta/asset/create",
    "get_asset": "/v3/meta/asset/get",
    "update_asset": "/v3/meta/asset/update",
    "delete_assets": "/v3/meta/asset/delete",
    "list_assets": "/v3/meta/asset/list",
    "list_accessible_assets": "/v3/meta/asset/list-accessible",
    "touch_asset_usage": "/v3/meta/asset/touch-usage",
    "set_agent_fixed_assets": "/v3/meta/agent-fixed-asset/set",
    "list_agent_fixed_assets": "/v3/meta/agent-fixed-asset/list",
    "list_agent_fixed_assets_with_detail": "/v3/meta/agent-fixed-asset/list-with-detail",
    "summarize_agent_fixed_assets_by_agents": "/v3/meta/agent-fixed-asset/summary-by-agents",
    "grant_acl": "/v3/meta/acl/grant",
    "revoke_acl": "/v3/meta/acl/revoke",
    "list_acl": "/v3/meta/acl/list",
    "check_acl": "/v3/meta/acl/check",
    "verify_auth": "/v3/meta/auth/verify",
    "get_instance_quota": "/v3/meta/instance-quota/get",
    "get_user_config": "/v3/meta/config/user/get",
    "set_user_config": "/v3/meta/config/user/set",
    "create_knowledge": "/v3/knowledge/create",
    "get_knowledge": "/v3/knowledge/get",
    "update_knowledge": "/v3/knowledge/update",
    "delete_knowledge": "/v3/knowledge/delete",
    "list_knowledge": "/v3/knowledge/list",
}
assert len(ROUTES) == 59 and sum(r.startswith("/v3/meta/") for r in ROUTES.values()) == 54
