"""asset/*, agent-fixed-asset/* and acl/* through the real HTTP app (a live server, one service id per test).

Rules of the original (asset/*, agent-fixed-asset/*, acl/*, the permission-checker) and memhub's hardening:
asset/get and asset/list show only what the caller may read; bindability (team/agent: same team;
private: same owner and team; task/restricted: never) guards agent-fixed-asset/set; ACL grants are
the owner's, upserted by (asset, subject type, subject id, permission). Every refusal is checked
for its code, HTTP status, message and for leaving every table unchanged.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.meta.org import Member, Org, refused, table_snapshot
from tests.meta.shapes import ACL_FIELDS, ASSET_FIELDS, BINDING_FIELDS, DETAIL_ITEM_FIELDS, ISO_MS


@dataclass
class Team:
    """alice owns (administers) the team; bob and carol are members, rita a reviewer, otto an outsider."""

    org: Org
    team_id: str
    other_team: str  # otto's team; bob is a member there too
    alice: Member
    bob: Member
    carol: Member
    rita: Member
    otto: Member

    def asset(self, who: Member, asset_id: str, team_id: str | None = None, **fields: Any) -> dict[str, Any]:
        body = {
            "asset_id": asset_id,
            "team_id": team_id or self.team_id,
            "asset_type": "skill",
            "name": f"name of {asset_id}",
            "owner_user_id": who.user_id,
            "source_type": "manual",
            **fields,
        }
        return self.org.ok(who, "/v3/meta/asset/create", body)

    def ids(self, data: dict[str, Any]) -> list[str]:
        return [item["asset_id"] for item in data["items"]]


@pytest.fixture
def t(live: Gateway) -> Team:
    org = Org(live, service=f"svc-{uuid.uuid4().hex[:10]}")
    alice, bob, carol, rita, otto = org.users("alice", "bob", "carol", "rita", "otto")
    team_id = org.staffed_team(alice, "team", (bob, "member"), (carol, "member"), (rita, "reviewer"))
    other_team = org.staffed_team(otto, "other", (bob, "member"))
    return Team(org, team_id, other_team, alice, bob, carol, rita, otto)


# -- asset/create ------------------------------------------------------------------------------
def test_create_defaults_and_shape(t: Team) -> None:
    data = t.asset(t.bob, "a1")
    assert set(data) == ASSET_FIELDS
    assert data["asset_id"] == "a1" and data["team_id"] == t.team_id and data["owner_user_id"] == t.bob.user_id
    assert (data["visibility"], data["status"], data["version"], data["usage_count"]) == ("team", "draft", 1, 0)
    assert data["description"] is None and data["last_used_at"] is None and data["confidence"] is None
    assert data["metadata_json"] == "{}"
    assert ISO_MS.fullmatch(data["created_at"]) and data["created_at"] == data["updated_at"]
    full = t.asset(
        t.bob,
        "a2",
        asset_type="code_graph",
        description="d",
        source_ref="git@x",
        visibility="restricted",
        status="approved",
        confidence=0.5,
        expires_at="2030-01-01T00:00:00Z",
        content_ref="cos://x",
        metadata_json='{"k": 1}',
    )
    assert {k: full[k] for k in ("asset_type", "description", "source_ref", "visibility", "status")} == {
        "asset_type": "code_graph",
        "description": "d",
        "source_ref": "git@x",
        "visibility": "restricted",
        "status": "approved",
    }
    assert full["confidence"] == 0.5 and full["content_ref"] == "cos://x" and full["metadata_json"] == '{"k": 1}'
    assert t.org.ok(t.bob, "/v3/meta/asset/get", {"asset_id": "a2"}) == full


def test_create_refusals(t: Team) -> None:
    t.asset(t.bob, "a1")
    base = {
        "asset_id": "a-new",
        "team_id": t.team_id,
        "asset_type": "skill",
        "name": "n",
        "owner_user_id": t.otto.user_id,
        "source_type": "manual",
    }
    path = "/v3/meta/asset/create"
    refused(t.org, t.otto, path, base, 403, "permission_denied: not a team member")
    refused(t.org, t.bob, path, base, 403, "permission_denied: caller is not resource owner")
    # A system admin gets no bypass.
    refused(t.org, t.org.admin, path, {**base, "owner_user_id": t.org.admin.user_id}, 403, "permission_denied: …")
    mine = {**base, "owner_user_id": t.bob.user_id}
    refused(t.org, t.bob, path, {**mine, "team_id": "team-nope"}, 404, "team_not_found: team not found: team-nope")
    refused(t.org, t.bob, path, {**mine, "asset_id": "a1"}, 409, "duplicate_entry: asset already exists: a1")
    # Asset ids are unique in the instance, not per team.
    refused(
        t.org,
        t.bob,
        path,
        {**mine, "asset_id": "a1", "team_id": t.other_team},
        409,
        "duplicate_entry: asset already exists: a1",
    )
    chat = {**mine, "asset_id": f"chat_memory-{t.team_id}-agt-x"}
    refused(t.org, t.bob, path, chat, 400, "invalid_request: asset_id prefix 'chat_memory-' is reserved")
    for field, value in (("asset_type", "video"), ("visibility", "public"), ("status", "active"), ("confidence", 2)):
        envelope = refused(t.org, t.bob, path, {**mine, field: value}, 400)
        assert envelope["message"].startswith(f"{field}:"), envelope
    envelope = refused(t.org, t.bob, path, {"asset_id": "x", "team_id": t.team_id}, 400)
    for field in ("asset_type", "name", "owner_user_id", "source_type"):
        assert f"{field}: " in envelope["message"]


# -- asset/get, update, delete -------------------------------------------------------------------
def test_get_needs_read_permission(t: Team) -> None:
    t.asset(t.bob, "private", visibility="private")
    t.asset(t.bob, "restricted", visibility="restricted")
    t.asset(t.bob, "team")
    path = "/v3/meta/asset/get"
    for who, readable in (
        (t.bob, {"private", "restricted", "team"}),
        (t.alice, {"restricted", "team"}),  # team admin
        (t.carol, {"team"}),
        (t.rita, {"team"}),
        (t.otto, set()),
        (t.org.admin, set()),  # a system admin outside the team
    ):
        for asset_id in ("private", "restricted", "team"):
            if asset_id in readable:
                assert t.org.ok(who, path, {"asset_id": asset_id})["asset_id"] == asset_id
            else:
                refused(t.org, who, path, {"asset_id": asset_id}, 404, f"asset_not_found: not found: {asset_id}")


def test_update_is_the_owners(t: Team) -> None:
    created = t.asset(t.bob, "a1", description="old", confidence=0.2)
    changes = {
        "asset_id": "a1",
        "name": "renamed",
        "visibility": "agent",
        "status": "approved",
        "version": 7,
        "content_ref": "cos://new",
        "source_ref": "ref",
        "metadata_json": '{"a": 2}',
        "expires_at": "2031-05-06T07:08:09Z",
        # not updatable: ignored
        "owner_user_id": t.carol.user_id,
        "team_id": t.other_team,
        "asset_type": "llm_wiki",
        "usage_count": 99,
    }
    data = t.org.ok(t.bob, "/v3/meta/asset/update", changes)
    assert data["name"] == "renamed" and data["visibility"] == "agent" and data["status"] == "approved"
    assert data["version"] == 7  # set, not incremented
    assert (data["content_ref"], data["source_ref"], data["metadata_json"]) == ("cos://new", "ref", '{"a": 2}')
    assert (data["owner_user_id"], data["team_id"], data["asset_type"], data["usage_count"]) == (
        t.bob.user_id,
        t.team_id,
        "skill",
        0,
    )
    assert data["created_at"] == created["created_at"] and data["updated_at"] >= created["updated_at"]
    assert data["description"] == "old" and data["confidence"] == 0.2
    cleared = t.org.ok(t.bob, "/v3/meta/asset/update", {"asset_id": "a1", "description": None})
    assert cleared["description"] is None
    # An empty patch still moves updated_at and changes nothing else.
    same = t.org.ok(t.bob, "/v3/meta/asset/update", {"asset_id": "a1"})
    assert {k: v for k, v in same.items() if k != "updated_at"} == {
        k: v for k, v in cleared.items() if k != "updated_at"
    }
    path = "/v3/meta/asset/update"
    refused(
        t.org, t.alice, path, {"asset_id": "a1", "name": "x"}, 403, "permission_denied: caller is not resource owner"
    )
    refused(
        t.org, t.carol, path, {"asset_id": "a1", "name": "x"}, 403, "permission_denied: caller is not resource owner"
    )
    refused(t.org, t.bob, path, {"asset_id": "nope", "name": "x"}, 404, "asset_not_found: asset not found: nope")
    refused(t.org, t.bob, path, {"asset_id": "a1", "version": -1}, 400, "version: …")


def test_delete_is_the_owners_and_cascades(t: Team) -> None:
    t.asset(t.bob, "a1")
    t.asset(t.bob, "a2")
    t.asset(t.carol, "c1")
    agent = t.org.agent(t.bob, t.team_id, "helper")
    bindings = [{"asset_id": a, "asset_type": "skill", "created_by": t.bob.user_id} for a in ("a1", "a2", "c1")]
    t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/set", {"agent_id": agent, "bindings": bindings})
    grant = {
        "asset_id": "a1",
        "subject_type": "user",
        "subject_id": t.carol.user_id,
        "permission": "write",
        "granted_by": t.bob.user_id,
    }
    t.org.ok(t.bob, "/v3/meta/acl/grant", grant)
    # One foreign asset fails the whole request.
    refused(
        t.org,
        t.bob,
        "/v3/meta/asset/delete",
        {"asset_ids": ["a1", "c1"]},
        403,
        "permission_denied: caller is not resource owner",
    )
    refused(t.org, t.alice, "/v3/meta/asset/delete", {"asset_ids": ["a1"]}, 403, "permission_denied: …")
    refused(t.org, t.bob, "/v3/meta/asset/delete", {"asset_ids": []}, 400, "asset_ids: …")
    data = t.org.ok(t.bob, "/v3/meta/asset/delete", {"asset_ids": ["a1", "gone"]})
    # As in the original, an absent id counts as deleted.
    assert data == {"deleted_ids": ["a1", "gone"], "failed": []}
    refused(t.org, t.bob, "/v3/meta/asset/get", {"asset_id": "a1"}, 404, "asset_not_found: not found: a1")
    left = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent})
    assert sorted(b["asset_id"] for b in left["items"]) == ["a2", "c1"]
    con = t.org.gw.store._reader()
    assert con.execute("SELECT COUNT(*) FROM meta_asset_acl WHERE asset_id = 'a1'").fetchone()[0] == 0


# -- asset/list, list-accessible, touch-usage ---------------------------------------------------
def test_list_shows_members_what_they_may_read(t: Team) -> None:
    t.asset(t.bob, "b-private", visibility="private")
    t.asset(t.bob, "b-restricted", visibility="restricted", asset_type="llm_wiki")
    t.asset(t.bob, "b-team", status="approved")
    t.asset(t.carol, "c-task", visibility="task", asset_type="code_graph")
    t.asset(t.carol, "c-archived", status="archived")
    t.asset(t.bob, "elsewhere", team_id=t.other_team)
    grant = {
        "asset_id": "b-restricted",
        "subject_type": "user",
        "subject_id": t.rita.user_id,
        "permission": "read",
        "granted_by": t.bob.user_id,
    }
    t.org.ok(t.bob, "/v3/meta/acl/grant", grant)
    path = "/v3/meta/asset/list"

    def listed(who: Member, **body: Any) -> set[str]:
        data = t.org.ok(who, path, {"team_id": t.team_id, "limit": 100, **body})
        assert set(data) == {"items", "total", "limit", "offset"} and data["total"] == len(data["items"])
        assert all(set(a) == ASSET_FIELDS for a in data["items"])
        stamps = [a["created_at"] for a in data["items"]]
        assert stamps == sorted(stamps, reverse=True)  # newest first
        return {a["asset_id"] for a in data["items"] if not a["asset_id"].startswith("chat_memory-")}

    # Owners see their own (archived ones too); others what the permission algorithm lets them read.
    assert listed(t.bob) == {"b-private", "b-restricted", "b-team", "c-task"}
    assert listed(t.carol) == {"b-team", "c-task", "c-archived"}
    assert listed(t.alice) == {"b-restricted", "b-team", "c-task"}
    assert listed(t.rita) == {"b-restricted", "b-team", "c-task"}  # via the ACL entry
    assert listed(t.bob, asset_type="llm_wiki") == {"b-restricted"}
    assert listed(t.bob, visibility="task") == {"c-task"}
    assert listed(t.bob, status="approved") == {"b-team"}
    assert listed(t.alice, owner_user_id=t.carol.user_id) == {"c-task"}
    page = t.org.ok(t.bob, path, {"team_id": t.team_id, "asset_type": "skill", "limit": 1, "offset": 1})
    assert page["limit"] == 1 and page["offset"] == 1 and len(page["items"]) == 1
    assert page["total"] == len(listed(t.bob, asset_type="skill")) == 2
    refused(t.org, t.otto, path, {"team_id": t.team_id}, 403, "permission_denied: not a team member")
    refused(t.org, t.org.admin, path, {"team_id": t.team_id}, 403, "permission_denied: not a team member")
    refused(t.org, t.bob, path, {"team_id": t.team_id, "limit": 101}, 400, "limit: …")
    refused(t.org, t.bob, path, {}, 400, "team_id: …")


def test_list_accessible_filters(t: Team) -> None:
    t.asset(t.bob, "b-private", visibility="private")
    t.asset(t.bob, "b-agent", visibility="agent", asset_type="llm_wiki")
    t.asset(t.carol, "c-team", status="candidate")
    t.asset(t.carol, "c-task", visibility="task")
    t.asset(t.carol, "c-deprecated", status="deprecated")
    t.asset(t.carol, "c-failed", status="failed")
    t.asset(t.bob, "b-archived", status="archived")
    t.asset(t.bob, "b-other", team_id=t.other_team, asset_type="code_graph")
    path = "/v3/meta/asset/list-accessible"

    def accessible(who: Member, **body: Any) -> set[str]:
        data = t.org.ok(who, path, {"user_id": who.user_id, "limit": 100, **body})
        assert data["total"] == len(data["items"])
        return {a["asset_id"] for a in data["items"] if not a["asset_id"].startswith("chat_memory-")}

    # Across all of bob's teams; unusable statuses never offered, even to their owner.
    assert accessible(t.bob) == {"b-private", "b-agent", "c-team", "c-task", "b-other"}
    assert accessible(t.bob, team_id=t.team_id) == {"b-private", "b-agent", "c-team", "c-task"}
    assert accessible(t.bob, visibility="private") == {"b-private"}
    assert accessible(t.bob, visibility=["team", "task"]) == {"c-team", "c-task", "b-other"}
    assert accessible(t.bob, asset_type="llm_wiki") == {"b-agent"}
    assert accessible(t.bob, asset_type="code_graph", team_id=t.team_id) == set()
    assert accessible(t.bob, action="write") == {"b-private", "b-agent", "b-other"}  # his own only
    assert accessible(t.alice, action="write") == {"b-agent", "c-team", "c-task"}  # admin defaults
    assert accessible(t.alice, action="delete") == set()
    assert accessible(t.rita, action="read") == {"b-agent", "c-team", "c-task"}
    assert accessible(t.otto) == {"b-other"}  # a team asset of otto's own team
    assert accessible(t.otto, team_id=t.team_id) == set()  # not a member there
    data = t.org.ok(t.bob, path, {"user_key": t.bob.key, "team_id": t.team_id, "limit": 2})
    # b-private, b-agent, c-team, c-task and the chat memory of bob's default agent in the team
    assert data["limit"] == 2 and len(data["items"]) == 2 and data["total"] == 5
    refused(t.org, t.bob, path, {"user_id": t.bob.user_id, "action": "fly"}, 400, "action: …")
    refused(t.org, t.bob, path, {"user_key": "sk-mem-unknown"}, 404, "user_not_found: user not found for user_key")


def test_list_accessible_visibility_errors_name_the_field(t: Team) -> None:
    six = ["private", "team", "restricted", "agent", "task", "team"]
    for visibility in ([], six, "public", ["public"]):
        body = {"user_id": t.bob.user_id, "visibility": visibility}
        envelope = refused(t.org, t.bob, "/v3/meta/asset/list-accessible", body, 400)
        # The field is named as the client knows it (an index at most), not by the schema's union branches.
        fields = [e["field"] for e in envelope["data"]["errors"]]
        assert fields and all(re.fullmatch(r"visibility(\[\d+\]|\.\d+)?", f) for f in fields), envelope
        assert envelope["message"].startswith("visibility"), envelope


def test_touch_usage(t: Team) -> None:
    created = t.asset(t.bob, "a1")
    assert t.org.ok(t.bob, "/v3/meta/asset/touch-usage", {"asset_id": "a1"}) == {"ok": True}
    assert t.org.ok(t.bob, "/v3/meta/asset/touch-usage", {"asset_id": "a1"}) == {"ok": True}
    data = t.org.ok(t.bob, "/v3/meta/asset/get", {"asset_id": "a1"})
    assert data["usage_count"] == 2 and ISO_MS.fullmatch(data["last_used_at"])
    assert data["updated_at"] == created["updated_at"]  # a use is not an update
    path = "/v3/meta/asset/touch-usage"
    refused(t.org, t.alice, path, {"asset_id": "a1"}, 403, "permission_denied: caller is not resource owner")
    refused(t.org, t.carol, path, {"asset_id": "a1"}, 403, "permission_denied: caller is not resource owner")
    refused(t.org, t.bob, path, {"asset_id": "nope"}, 404, "asset_not_found: asset not found: nope")


# -- agent-fixed-asset/set -----------------------------------------------------------------------
def _binding(asset_id: str, who: Member, asset_type: str = "skill", **extra: Any) -> dict[str, Any]:
    return {"asset_id": asset_id, "asset_type": asset_type, "created_by": who.user_id, **extra}


def test_bindability(t: Team) -> None:
    agent = t.org.agent(t.bob, t.team_id, "helper")
    t.asset(t.bob, "b-team")
    t.asset(t.carol, "c-team")
    t.asset(t.bob, "b-agent", visibility="agent")
    t.asset(t.bob, "b-private", visibility="private")
    t.asset(t.carol, "c-private", visibility="private")
    t.asset(t.bob, "b-task", visibility="task")
    t.asset(t.bob, "b-restricted", visibility="restricted")
    t.asset(t.bob, "b-elsewhere-team", team_id=t.other_team)
    t.asset(t.bob, "b-elsewhere-private", team_id=t.other_team, visibility="private")
    path = "/v3/meta/agent-fixed-asset/set"
    ok = ["b-team", "c-team", "b-agent", "b-private"]
    assert t.org.ok(t.bob, path, {"agent_id": agent, "bindings": [_binding(a, t.bob) for a in ok]}) == {"ok": True}
    # Another owner's private asset does not exist for bob: the answer for an unknown id, not a 409.
    unreadable = {"agent_id": agent, "bindings": [_binding("b-team", t.bob), _binding("c-private", t.bob)]}
    refused(t.org, t.bob, path, unreadable, 404, "asset_not_found: asset not found: c-private")
    for asset_id, visibility in (
        ("b-task", "task"),
        ("b-restricted", "restricted"),
        ("b-elsewhere-team", "team"),  # another team
        ("b-elsewhere-private", "private"),
    ):
        body = {"agent_id": agent, "bindings": [_binding("b-team", t.bob), _binding(asset_id, t.bob)]}
        message = f"asset_not_bindable: asset {asset_id} (visibility={visibility}) cannot bind to agent {agent}"
        refused(t.org, t.bob, path, body, 409, message)
    listed = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent, "limit": 100})
    assert sorted(b["asset_id"] for b in listed["items"]) == sorted(ok)  # the failed sets changed nothing


def test_set_replaces_all_with_defaults_and_priority_order(t: Team) -> None:
    agent = t.org.agent(t.bob, t.team_id, "helper")
    chat = f"chat_memory-{t.team_id}-{agent}"
    before = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent})
    assert [b["asset_id"] for b in before["items"]] == [chat]  # agent/create bound its chat memory
    for name in ("x", "y", "z"):
        t.asset(t.bob, name)
    path = "/v3/meta/agent-fixed-asset/set"
    bindings = [
        _binding("x", t.bob, priority=10),
        _binding("y", t.bob, priority=90, injection_mode="direct"),
        _binding("z", t.bob),
        _binding(chat, t.bob, "chat_memory", priority=-5, injection_mode="reference"),
    ]
    t.org.ok(t.bob, path, {"agent_id": agent, "bindings": bindings})
    listed = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent})
    assert set(listed) == {"items", "total", "limit", "offset"} and listed["total"] == 4
    assert [b["asset_id"] for b in listed["items"]] == ["y", "z", "x", chat]  # priority DESC
    by_id = {b["asset_id"]: b for b in listed["items"]}
    assert all(set(b) == BINDING_FIELDS for b in listed["items"])
    assert (by_id["z"]["priority"], by_id["z"]["injection_mode"]) == (50, "summary")
    assert (by_id["y"]["priority"], by_id["y"]["injection_mode"]) == (90, "direct")
    assert by_id["x"]["agent_id"] == agent and by_id["x"]["created_by"] == t.bob.user_id
    page = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent, "limit": 2, "offset": 1})
    assert [b["asset_id"] for b in page["items"]] == ["z", "x"] and page["total"] == 4
    t.org.ok(t.bob, path, {"agent_id": agent, "bindings": [_binding("x", t.bob)]})
    listed = t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent})
    assert [b["asset_id"] for b in listed["items"]] == ["x"] and listed["items"][0]["priority"] == 50
    t.org.ok(t.bob, path, {"agent_id": agent, "bindings": []})
    assert t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/list", {"agent_id": agent})["total"] == 0


def test_set_refusals(t: Team) -> None:
    agent = t.org.agent(t.bob, t.team_id, "helper")
    t.asset(t.bob, "x")
    t.asset(t.carol, "c-team")
    path = "/v3/meta/agent-fixed-asset/set"
    body = {"agent_id": agent, "bindings": [_binding("x", t.bob)]}
    refused(t.org, t.carol, path, body, 403, "permission_denied: caller is not team admin")
    # To a non-member the agent does not exist: the answer for an unknown id.
    refused(t.org, t.otto, path, body, 404, f"agent_not_found: agent not found: {agent}")
    refused(t.org, t.bob, path, {**body, "agent_id": "agt-nope"}, 404, "agent_not_found: agent not found: agt-nope")
    missing = {"agent_id": agent, "bindings": [_binding("x", t.bob), _binding("nope", t.bob)]}
    refused(t.org, t.bob, path, missing, 404, "asset_not_found: asset not found: nope")
    twice = {"agent_id": agent, "bindings": [_binding("x", t.bob), _binding("x", t.bob)]}
    refused(t.org, t.bob, path, twice, 409, "duplicate_entry: …")
    wrong_type = {"agent_id": agent, "bindings": [_binding("x", t.bob, "llm_wiki")]}
    refused(t.org, t.bob, path, wrong_type, 400, "invalid_request: …")
    refused(t.org, t.bob, path, {"agent_id": agent}, 400, "bindings: …")
    bad_mode = {"agent_id": agent, "bindings": [_binding("x", t.bob, injection_mode="inline")]}
    envelope = refused(t.org, t.bob, path, bad_mode, 400)
    assert "injection_mode" in envelope["message"]
    # The team admin may set the bindings of a member's agent (digest variant A).
    assert t.org.ok(t.alice, path, {"agent_id": agent, "bindings": [_binding("c-team", t.alice)]}) == {"ok": True}


def test_fixed_asset_list_needs_membership(t: Team) -> None:
    agent = t.org.agent(t.bob, t.team_id, "helper")
    path = "/v3/meta/agent-fixed-asset/list"
    assert t.org.ok(t.carol, path, {"agent_id": agent})["total"] == 1
    # To a non-member the agent does not exist: the answer for an unknown id.
    unknown = f"agent_not_found: agent not found: {agent}"
    refused(t.org, t.otto, path, {"agent_id": agent}, 404, unknown)
    refused(t.org, t.org.admin, path, {"agent_id": agent}, 404, unknown)
    refused(t.org, t.otto, path, {"agent_id": "agt-nope"}, 404, "agent_not_found: agent not found: agt-nope")
    detail = "/v3/meta/agent-fixed-asset/list-with-detail"
    refused(t.org, t.otto, detail, {"agent_id": agent}, 404, unknown)
    refused(t.org, t.otto, detail, {"agent_id": agent, "touch_usage": True}, 404, unknown)
    assert t.org.ok(t.carol, detail, {"agent_id": agent})["total"] == 1


# -- list-with-detail ---------------------------------------------------------------------------
def test_list_with_detail(t: Team) -> None:
    agent = t.org.agent(t.bob, t.team_id, "helper", visibility="agent")
    chat = f"chat_memory-{t.team_id}-{agent}"
    t.asset(t.bob, "skill-a", description="first")
    t.asset(t.bob, "wiki-b", asset_type="llm_wiki")
    t.asset(t.bob, "skill-c")
    t.asset(t.bob, "graph-d", asset_type="code_graph")
    bindings = [
        _binding("skill-a", t.bob, priority=40),
        _binding("wiki-b", t.bob, "llm_wiki", priority=30),
        _binding("skill-c", t.bob, priority=20),
        _binding("graph-d", t.bob, "code_graph", priority=10),
        _binding(chat, t.bob, "chat_memory", priority=5),
    ]
    t.org.ok(t.bob, "/v3/meta/agent-fixed-asset/set", {"agent_id": agent, "bindings": bindings})
    # Later changes: one asset becomes unbindable (restricted), one deprecated.
    t.org.ok(t.bob, "/v3/meta/asset/update", {"asset_id": "skill-c", "visibility": "restricted"})
    t.org.ok(t.bob, "/v3/meta/asset/update", {"asset_id": "graph-d", "status": "deprecated"})
    path = "/v3/meta/agent-fixed-asset/list-with-detail"
    data = t.org.ok(t.carol, path, {"agent_id": agent})
    assert set(data) == {"agent", "items", "total", "limit", "offset"}
    assert data["agent"] == {
        "agent_id": agent,
        "team_id": t.team_id,
        "owner_user_id": t.bob.user_id,
        "prompt": None,
        "visibility": "agent",
        "status": "active",
    }
    assert all(set(i) == DETAIL_ITEM_FIELDS for i in data["items"])
    assert [i["asset_id"] for i in data["items"]] == ["skill-a", "wiki-b", "skill-c", chat]  # deprecated skipped
    assert data["total"] == 5  # bindings, before skipping
    first = data["items"][0]
    assert (first["description"], first["injection_mode"], first["priority"]) == ("first", "summary", 40)
    filtered = t.org.ok(t.carol, path, {"agent_id": agent, "apply_visibility_filter": True})
    assert [i["asset_id"] for i in filtered["items"]] == ["skill-a", "wiki-b", chat]
    typed = t.org.ok(t.carol, path, {"agent_id": agent, "asset_types": ["llm_wiki", "chat_memory"]})
    assert [i["asset_id"] for i in typed["items"]] == ["wiki-b", chat] and typed["total"] == 2
    everything = t.org.ok(t.carol, path, {"agent_id": agent, "asset_types": []})
    assert everything["total"] == 5
    page = t.org.ok(t.carol, path, {"agent_id": agent, "limit": 2, "offset": 1})
    assert [i["asset_id"] for i in page["items"]] == ["wiki-b", "skill-c"] and page["total"] == 5
    # Nothing was counted as used so far.
    assert t.org.ok(t.bob, "/v3/meta/asset/get", {"asset_id": "skill-a"})["usage_count"] == 0
    touched = t.org.ok(
        t.carol, path, {"agent_id": agent, "touch_usage": True, "apply_visibility_filter": True, "limit": 2}
    )
    assert [i["asset_id"] for i in touched["items"]] == ["skill-a", "wiki-b"]
    usage = {
        a: t.org.ok(t.bob, "/v3/meta/asset/get", {"asset_id": a})
        for a in ("skill-a", "wiki-b", "skill-c", "graph-d", chat)
    }
    assert {a: u["usage_count"] for a, u in usage.items()} == {
        "skill-a": 1,
        "wiki-b": 1,
        "skill-c": 0,
        "graph-d": 0,
        chat: 0,
    }
    assert ISO_MS.fullmatch(usage["skill-a"]["last_used_at"]) and usage["skill-c"]["last_used_at"] is None
    refused(t.org, t.bob, path, {"agent_id": "agt-nope"}, 404, "agent_not_found: …")
    refused(t.org, t.bob, path, {"agent_id": agent, "asset_types": ["video"]}, 400)


# -- summary-by-agents -----------------------------------------------------------------------------
def test_summary_by_agents(t: Team) -> None:
    a1 = t.org.agent(t.bob, t.team_id, "one")
    a2 = t.org.agent(t.carol, t.team_id, "two")
    foreign = t.org.agent(t.otto, t.other_team, "foreign")  # bob is a member of otto's team
    stranger_team = t.org.team(t.rita, "rita's")
    hidden = t.org.agent(t.rita, stranger_team, "hidden")  # in a team bob is not in
    t.asset(t.bob, "s1")
    t.asset(t.bob, "s2")
    t.asset(t.bob, "w1", asset_type="llm_wiki")
    t.asset(t.carol, "g1", asset_type="code_graph")
    t.org.ok(
        t.bob,
        "/v3/meta/agent-fixed-asset/set",
        {"agent_id": a1, "bindings": [_binding("s1", t.bob), _binding("s2", t.bob), _binding("w1", t.bob, "llm_wiki")]},
    )
    t.org.ok(
        t.carol,
        "/v3/meta/agent-fixed-asset/set",
        {"agent_id": a2, "bindings": [_binding("s1", t.carol), _binding("g1", t.carol, "code_graph")]},
    )
    path = "/v3/meta/agent-fixed-asset/summary-by-agents"
    data = t.org.ok(t.bob, path, {"agent_ids": [a2, "agt-nope", a1, a2, foreign, hidden]})
    assert data["total"] == 5 == len(data["items"])
    assert [i["agent_id"] for i in data["items"]] == [a2, "agt-nope", a1, foreign, hidden]  # request order, deduped
    by_id = {i["agent_id"]: i for i in data["items"]}
    zero = {"skill": 0, "llm_wiki": 0, "code_graph": 0, "chat_memory": 0}
    assert by_id[a1] == {"agent_id": a1, "counts": {**zero, "skill": 2, "llm_wiki": 1}, "total": 3}
    assert by_id[a2] == {"agent_id": a2, "counts": {**zero, "skill": 1, "code_graph": 1}, "total": 2}
    assert by_id["agt-nope"] == {"agent_id": "agt-nope", "counts": zero, "total": 0}
    assert by_id[foreign] == {"agent_id": foreign, "counts": {**zero, "chat_memory": 1}, "total": 1}
    assert by_id[hidden]["total"] == 0  # an agent of a team bob is not in is not disclosed
    filtered = t.org.ok(t.bob, path, {"agent_ids": [a1, a2], "asset_id": "s1"})
    assert [i["counts"]["skill"] for i in filtered["items"]] == [1, 1]
    assert [i["total"] for i in filtered["items"]] == [1, 1]
    refused(t.org, t.bob, path, {"agent_ids": []}, 400, "agent_ids: …")
    refused(t.org, t.bob, path, {"agent_ids": [f"agt-{i}" for i in range(101)]}, 400, "agent_ids: …")


# -- ACL ----------------------------------------------------------------------------------------
def test_acl_grant_upsert_and_refusals(t: Team) -> None:
    t.asset(t.bob, "a1", visibility="restricted")
    agent = t.org.agent(t.carol, t.team_id, "c-agent")
    path = "/v3/meta/acl/grant"
    body = {
        "asset_id": "a1",
        "subject_type": "user",
        "subject_id": t.carol.user_id,
        "permission": "read",
        "granted_by": t.bob.user_id,
    }
    first = t.org.ok(t.bob, path, body)
    assert set(first) == ACL_FIELDS
    assert (first["effect"], first["granted_by"], first["asset_id"]) == ("allow", t.bob.user_id, "a1")
    assert ISO_MS.fullmatch(first["created_at"]) and first["created_at"] == first["updated_at"]
    # Same (asset, subject, permission): the entry is updated in place.
    second = t.org.ok(t.bob, path, {**body, "effect": "deny"})
    assert second["id"] == first["id"] and second["effect"] == "deny"
    assert second["created_at"] == first["created_at"] and second["updated_at"] >= first["updated_at"]
    # granted_by_key names the granter by key.
    third = t.org.ok(t.bob, path, {**{k: v for k, v in body.items() if k != "granted_by"}, "granted_by_key": t.bob.key})
    assert third["id"] == first["id"] and third["effect"] == "allow" and third["granted_by"] == t.bob.user_id
    role = t.org.ok(t.bob, path, {**body, "subject_type": "team_role", "subject_id": "reviewer"})
    by_agent = t.org.ok(t.bob, path, {**body, "subject_type": "agent", "subject_id": agent, "permission": "use"})
    assert len({first["id"], role["id"], by_agent["id"]}) == 3
    listed = t.org.ok(t.bob, "/v3/meta/acl/list", {"asset_id": "a1"})
    assert listed["total"] == 3

    refused(
        t.org,
        t.bob,
        path,
        {**body, "granted_by": t.carol.user_id},
        403,
        "permission_denied: granted_by must match caller",
    )
    refused(
        t.org,
        t.alice,
        path,
        {**body, "granted_by": t.alice.user_id},
        403,
        "permission_denied: caller is not resource owner",
    )
    refused(
        t.org,
        t.carol,
        path,
        {**body, "granted_by": t.carol.user_id},
        403,
        "permission_denied: caller is not resource owner",
    )
    refused(t.org, t.bob, path, {**body, "asset_id": "nope"}, 404, "asset_not_found: asset not found: nope")
    refused(t.org, t.bob, path, {**body, "subject_id": "usr-nope"}, 404, "user_not_found: not found: usr-nope")
    refused(
        t.org,
        t.bob,
        path,
        {**body, "subject_type": "agent", "subject_id": "agt-nope"},
        404,
        "agent_not_found: not found: agt-nope",
    )
    no_granter = {k: v for k, v in body.items() if k != "granted_by"}
    refused(t.org, t.bob, path, no_granter, 400, "granted_by: granted_by or granted_by_key is required")
    refused(t.org, t.bob, path, {**body, "subject_type": "group"}, 400, "subject_type: …")
    refused(t.org, t.bob, path, {**body, "permission": "own"}, 400, "permission: …")
    refused(t.org, t.bob, path, {**body, "effect": "maybe"}, 400, "effect: …")


def test_acl_revoke(t: Team) -> None:
    t.asset(t.bob, "a1")
    grant = {
        "asset_id": "a1",
        "subject_type": "user",
        "subject_id": t.carol.user_id,
        "permission": "write",
        "granted_by": t.bob.user_id,
    }
    acl = t.org.ok(t.bob, "/v3/meta/acl/grant", grant)
    path = "/v3/meta/acl/revoke"
    refused(t.org, t.carol, path, {"id": acl["id"]}, 403, "permission_denied: caller is not resource owner")
    refused(t.org, t.alice, path, {"id": acl["id"]}, 403, "permission_denied: caller is not resource owner")
    refused(t.org, t.bob, path, {"id": "acl-nope"}, 404, "acl_not_found: acl not found: acl-nope")
    refused(t.org, t.bob, path, {}, 400, "id: …")
    assert t.org.ok(t.bob, path, {"id": acl["id"]}) == {"ok": True}
    assert t.org.ok(t.bob, "/v3/meta/acl/list", {"asset_id": "a1"})["items"] == []
    check = {"user_id": t.carol.user_id, "asset_id": "a1", "action": "write"}
    assert t.org.ok(t.carol, "/v3/meta/acl/check", check) == {"allowed": False, "reason": "no_permission"}
    refused(t.org, t.bob, path, {"id": acl["id"]}, 404, f"acl_not_found: acl not found: {acl['id']}")


def test_acl_list_owner_or_team_admin(t: Team) -> None:
    t.asset(t.bob, "a1", visibility="restricted")
    ids = []
    for permission in ("read", "write", "use"):
        grant = {
            "asset_id": "a1",
            "subject_type": "user",
            "subject_id": t.carol.user_id,
            "permission": permission,
            "granted_by": t.bob.user_id,
        }
        ids.append(t.org.ok(t.bob, "/v3/meta/acl/grant", grant)["id"])
    path = "/v3/meta/acl/list"
    for who in (t.bob, t.alice):
        data = t.org.ok(who, path, {"asset_id": "a1"})
        assert set(data) == {"items", "total", "limit", "offset"} and data["total"] == 3
        assert all(set(e) == ACL_FIELDS for e in data["items"])
        assert sorted(e["id"] for e in data["items"]) == sorted(ids)
        stamps = [e["created_at"] for e in data["items"]]
        assert stamps == sorted(stamps, reverse=True)
    page = t.org.ok(t.bob, path, {"asset_id": "a1", "limit": 1, "offset": 2})
    assert len(page["items"]) == 1 and page["total"] == 3
    # Carol may read the asset (an ACL entry), so she learns she may not list its ACL; to those who may not
    # read it the asset does not exist.
    refused(t.org, t.carol, path, {"asset_id": "a1"}, 403, "permission_denied: caller is not team admin")
    refused(t.org, t.rita, path, {"asset_id": "a1"}, 404, "asset_not_found: asset not found: a1")
    refused(t.org, t.otto, path, {"asset_id": "a1"}, 404, "asset_not_found: asset not found: a1")
    refused(t.org, t.bob, path, {"asset_id": "nope"}, 404, "asset_not_found: asset not found: nope")


def test_acl_check_and_deny_entries(t: Team) -> None:
    t.asset(t.bob, "a1")
    path = "/v3/meta/acl/check"
    deny = {
        "asset_id": "a1",
        "subject_type": "team_role",
        "subject_id": "member",
        "permission": "read",
        "effect": "deny",
        "granted_by": t.bob.user_id,
    }
    t.org.ok(t.bob, "/v3/meta/acl/grant", deny)
    # Deny entries are stored but never evaluated: the member still reads by role default.
    check = {"user_id": t.carol.user_id, "asset_id": "a1", "action": "read"}
    assert t.org.ok(t.carol, path, check) == {"allowed": True, "reason": "role_default:member"}
    assert t.org.ok(t.alice, path, check) == {"allowed": True, "reason": "role_default:member"}  # team admin asks
    assert t.org.ok(t.org.admin, path, check) == {"allowed": True, "reason": "role_default:member"}
    refused(t.org, t.rita, path, check, 403, "permission_denied: cannot check another user's access")
    snapshot = table_snapshot(t.org.gw)
    assert t.org.ok(t.carol, path, {**check, "action": "delete"}) == {"allowed": False, "reason": "no_permission"}
    assert table_snapshot(t.org.gw) == snapshot  # a check writes nothing


def test_an_agent_acl_applies_only_through_an_agent_the_user_may_use(t: Team) -> None:
    t.asset(t.alice, "r1", visibility="restricted", status="approved")
    private = t.org.agent(t.bob, t.team_id, "bobs-private", visibility="private")
    grant = {
        "asset_id": "r1",
        "subject_type": "agent",
        "subject_id": private,
        "permission": "read",
        "granted_by": t.alice.user_id,
    }
    acl_id = t.org.ok(t.alice, "/v3/meta/acl/grant", grant)["id"]
    check = {"asset_id": "r1", "action": "read", "agent_id": private}
    # bob acts through his own agent: the agent's entry applies.
    assert t.org.ok(t.bob, "/v3/meta/acl/check", {**check, "user_id": t.bob.user_id}) == {
        "allowed": True,
        "reason": f"acl:{acl_id}",
    }
    accessible = t.org.ok(t.bob, "/v3/meta/asset/list-accessible", {"user_id": t.bob.user_id, "agent_id": private})
    assert "r1" in t.ids(accessible)
    # carol names bob's private agent, which she cannot use: the entry does not apply to her.
    assert t.org.ok(t.carol, "/v3/meta/acl/check", {**check, "user_id": t.carol.user_id})["allowed"] is False
    accessible = t.org.ok(t.carol, "/v3/meta/asset/list-accessible", {"user_id": t.carol.user_id, "agent_id": private})
    assert "r1" not in t.ids(accessible)
