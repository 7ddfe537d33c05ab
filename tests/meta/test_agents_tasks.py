"""Agents, tasks, task-agent links and the participation log on /v3/meta (the original's agent/*,
task/*, task-agent/* and participation-log/* routes).

memhub hardening asserted here: agent/get and task/get answer `<kind>_not_found` to callers who may
not see the entity; agent/list and task/list show only what the caller may see; every agent has its
`chat_memory-{team}-{agent}` asset, removed when the agent is deleted or archived.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from tests.meta.org import Member, Org, refused, rows
from tests.meta.shapes import (
    AGENT_FIELDS,
    AGENT_ID,
    ISO_MS,
    LOG_FIELDS,
    NOT_MEMBER,
    NOT_OWNER,
    NOT_TEAM_ADMIN,
    TASK_FIELDS,
    TASK_ID,
    UUID,
)


@dataclass
class Crew:
    """alice owns team T (dave admin, bob member); carol owns team C and is in no team of alice."""

    org: Org
    team: str
    other_team: str
    alice: Member
    bob: Member
    carol: Member
    dave: Member


@pytest.fixture
def crew(org: Org) -> Crew:
    alice, bob, carol, dave = org.users("alice", "bob", "carol", "dave")
    team = org.staffed_team(alice, "T", (dave, "admin"), (bob, "member"))
    return Crew(org, team, org.team(carol, "C"), alice, bob, carol, dave)


def memory_asset(org: Org, team_id: str, agent_id: str) -> list[tuple[Any, ...]]:
    """The agent's chat_memory asset row (type, owner, visibility) and the agents bound to it."""
    asset_id = f"chat_memory-{team_id}-{agent_id}"
    asset = rows(org, "SELECT asset_type, owner_user_id, visibility FROM meta_assets WHERE asset_id = ?", asset_id)
    bound = rows(org, "SELECT agent_id FROM meta_agent_fixed_assets WHERE asset_id = ?", asset_id)
    return asset + bound


def listed(org: Org, who: Member, body: dict[str, Any], path: str = "/v3/meta/agent/list") -> set[str]:
    page = org.ok(who, path, body)
    key = "agent_id" if "agent" in path else "task_id"
    found = {item[key] for item in page["items"]}
    assert page["total"] == len(found) == len(page["items"]), page
    return found


def task(org: Org, who: Member, team_id: str, **extra: Any) -> str:
    body = {"team_id": team_id, "creator_user_id": who.user_id, "title": "task", **extra}
    return org.ok(who, "/v3/meta/task/create", body)["task_id"]


# -- agent/create --------------------------------------------------------------------------------
def test_create_agent_shape_and_its_chat_memory_asset(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    agent = org.ok(
        alice, "/v3/meta/agent/create", {"team_id": crew.team, "owner_user_id": alice.user_id, "name": "helper"}
    )
    assert set(agent) == AGENT_FIELDS and AGENT_ID.fullmatch(agent["agent_id"])
    assert (agent["team_id"], agent["owner_user_id"], agent["name"]) == (crew.team, alice.user_id, "helper")
    assert (agent["visibility"], agent["status"], agent["metadata_json"]) == ("team", "active", "{}")
    assert (agent["description"], agent["prompt"]) == (None, None)
    assert ISO_MS.fullmatch(agent["created_at"]) and agent["created_at"] == agent["updated_at"]
    assert memory_asset(org, crew.team, agent["agent_id"]) == [
        ("chat_memory", alice.user_id, "private"),
        (agent["agent_id"],),
    ]
    full = org.ok(
        alice,
        "/v3/meta/agent/create",
        {
            "team_id": crew.team,
            "owner_user_id": alice.user_id,
            "name": "full",
            "description": "d",
            "prompt": "p",
            "visibility": "restricted",
            "status": "inactive",
            "metadata_json": '{"k": true}',
        },
    )
    assert (full["description"], full["prompt"], full["visibility"], full["status"], full["metadata_json"]) == (
        "d",
        "p",
        "restricted",
        "inactive",
        '{"k": true}',
    )


def test_create_agent_rules(crew: Crew) -> None:
    org = crew.org
    path = "/v3/meta/agent/create"
    refused(
        org, crew.carol, path, {"team_id": crew.team, "owner_user_id": crew.carol.user_id, "name": "x"}, 403, NOT_MEMBER
    )
    refused(
        org,
        crew.alice,
        path,
        {"team_id": "team-nothing000", "owner_user_id": crew.alice.user_id, "name": "x"},
        404,
        "team_not_found: team not found: team-nothing000",
    )
    refused(
        org, crew.bob, path, {"team_id": crew.team, "owner_user_id": crew.alice.user_id, "name": "x"}, 403, NOT_OWNER
    )
    refused(
        org,
        crew.dave,
        path,
        {"team_id": crew.team, "owner_user_id": crew.carol.user_id, "name": "x"},
        403,
        "permission_denied: owner is not a team member",
    )
    # A team admin may create an agent for a member of the team.
    made = org.ok(crew.dave, path, {"team_id": crew.team, "owner_user_id": crew.bob.user_id, "name": "for-bob"})
    assert made["owner_user_id"] == crew.bob.user_id
    assert memory_asset(org, crew.team, made["agent_id"])[0] == ("chat_memory", crew.bob.user_id, "private")


# -- visibility: agent/get and agent/list --------------------------------------------------------------
def test_agent_visibility(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    private = org.agent(alice, crew.team, "p", visibility="private")
    team = org.agent(alice, crew.team, "t", visibility="team")
    restricted = org.agent(alice, crew.team, "r", visibility="restricted")
    bob_default = org.default_agent(crew.team, crew.bob)
    dave_default = org.default_agent(crew.team, crew.dave)
    mine = {private, team, restricted}
    expected = {
        "alice": mine,
        "dave": {team, restricted, dave_default},
        "bob": {team, bob_default},
    }
    for who in (alice, crew.dave, crew.bob):
        for agent in expected[who.username]:
            assert org.ok(who, "/v3/meta/agent/get", {"agent_id": agent})["agent_id"] == agent
        hidden = (mine | {bob_default, dave_default}) - expected[who.username]
        for agent in hidden:
            refused(org, who, "/v3/meta/agent/get", {"agent_id": agent}, 404, f"agent_not_found: not found: {agent}")
        assert listed(org, who, {"team_id": crew.team}) == expected[who.username]
        assert listed(org, who, {"owner_user_id": alice.user_id}) == expected[who.username] & mine
        assert listed(org, who, {"owner_user_key": alice.key}) == expected[who.username] & mine
    for agent in mine:
        refused(org, crew.carol, "/v3/meta/agent/get", {"agent_id": agent}, 404, f"agent_not_found: not found: {agent}")
    refused(org, crew.carol, "/v3/meta/agent/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    assert listed(org, crew.carol, {"owner_user_id": alice.user_id}) == set()
    refused(
        org,
        crew.carol,
        "/v3/meta/agent/get",
        {"agent_id": "agt-nothing000"},
        404,
        "agent_not_found: not found: agt-nothing000",
    )


def test_agent_list_filters_and_paging(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    one = org.agent(alice, crew.team, "one")
    time.sleep(0.002)  # distinct created_at (milliseconds) for the newest-first order
    two = org.agent(alice, crew.team, "two")
    org.ok(alice, "/v3/meta/agent/archive", {"agent_id": two})
    assert listed(org, alice, {"team_id": crew.team, "name": "one"}) == {one}
    assert listed(org, alice, {"team_id": crew.team, "status": "inactive"}) == {two}
    assert listed(org, alice, {"team_id": crew.team, "owner_user_id": alice.user_id}) == {one, two}
    page = org.ok(alice, "/v3/meta/agent/list", {"team_id": crew.team, "owner_user_id": alice.user_id, "limit": 1})
    assert (len(page["items"]), page["total"], page["limit"], page["offset"]) == (1, 2, 1, 0)
    assert page["items"][0]["agent_id"] == two  # newest first
    rest = org.ok(alice, "/v3/meta/agent/list", {"team_id": crew.team, "owner_user_id": alice.user_id, "offset": 1})
    assert [a["agent_id"] for a in rest["items"]] == [one]
    refused(
        org,
        alice,
        "/v3/meta/agent/list",
        {"owner_user_key": "sk-mem-" + "n" * 32},
        404,
        "user_not_found: user not found for user_key",
    )


# -- agent/update, delete, archive ---------------------------------------------------------------
def test_update_agent_by_its_owner_only(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    agent = org.agent(alice, crew.team, "a")
    before = org.ok(alice, "/v3/meta/agent/get", {"agent_id": agent})
    changed = org.ok(
        alice,
        "/v3/meta/agent/update",
        {
            "agent_id": agent,
            "name": "renamed",
            "prompt": "be brief",
            "visibility": "private",
            "metadata_json": "[]",
            "owner_user_id": crew.bob.user_id,  # ignored
            "team_id": crew.other_team,  # ignored
        },
    )
    assert (changed["name"], changed["prompt"], changed["visibility"], changed["metadata_json"]) == (
        "renamed",
        "be brief",
        "private",
        "[]",
    )
    assert (changed["owner_user_id"], changed["team_id"], changed["created_at"]) == (
        alice.user_id,
        crew.team,
        before["created_at"],
    )
    assert changed["updated_at"] >= before["updated_at"]
    # Now private: to a team admin the agent does not exist, exactly as agent/get says.
    hidden = f"agent_not_found: agent not found: {agent}"
    refused(org, crew.dave, "/v3/meta/agent/update", {"agent_id": agent, "name": "x"}, 404, hidden)
    visible = org.agent(alice, crew.team, "v")
    refused(org, crew.dave, "/v3/meta/agent/update", {"agent_id": visible, "name": "x"}, 403, NOT_OWNER)
    refused(org, crew.bob, "/v3/meta/agent/update", {"agent_id": visible, "name": "x"}, 403, NOT_OWNER)
    refused(
        org,
        alice,
        "/v3/meta/agent/update",
        {"agent_id": "agt-nothing000", "name": "x"},
        404,
        "agent_not_found: agent not found: agt-nothing000",
    )


def test_delete_agents_all_or_nothing_and_what_goes_with_them(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    a1, a2 = org.agent(alice, crew.team, "a1"), org.agent(alice, crew.team, "a2")
    bobs = org.agent(crew.bob, crew.team, "b")
    t = task(org, alice, crew.team, linked_agents=[{"agent_id": a1}, {"agent_id": bobs}])
    refused(
        org,
        alice,
        "/v3/meta/agent/delete",
        {"agent_ids": [a1, "agt-nothing000"]},
        404,
        "agent_not_found: agent not found: agt-nothing000",
    )
    refused(org, alice, "/v3/meta/agent/delete", {"agent_ids": [a1, bobs]}, 403, NOT_OWNER)
    refused(org, crew.dave, "/v3/meta/agent/delete", {"agent_ids": [a2]}, 403, NOT_OWNER)  # team admins neither
    assert org.ok(alice, "/v3/meta/agent/delete", {"agent_ids": [a1, a2, a1]}) == {
        "deleted_ids": [a1, a2],
        "failed": [],
    }
    for agent in (a1, a2):
        assert memory_asset(org, crew.team, agent) == []
        assert rows(org, "SELECT * FROM meta_agent_fixed_assets WHERE agent_id = ?", agent) == []
        assert rows(org, "SELECT * FROM meta_task_agents WHERE agent_id = ?", agent) == []
        refused(org, alice, "/v3/meta/agent/get", {"agent_id": agent}, 404, f"agent_not_found: not found: {agent}")
        refused(
            org,
            alice,
            "/v3/meta/agent/delete",
            {"agent_ids": [agent]},
            404,
            f"agent_not_found: agent not found: {agent}",
        )
    assert [link["agent_id"] for link in org.ok(alice, "/v3/meta/task-agent/list", {"task_id": t})["items"]] == [bobs]
    assert memory_asset(org, crew.team, bobs)[0] == ("chat_memory", crew.bob.user_id, "private")
    refused(
        org,
        alice,
        "/v3/meta/task-agent/link",
        {"task_id": t, "agent_id": a1},
        404,
        f"agent_not_found: agent not found: {a1}",
    )


def test_archive_agent(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    agent = org.agent(alice, crew.team, "a")
    refused(org, crew.dave, "/v3/meta/agent/archive", {"agent_id": agent}, 403, NOT_OWNER)
    refused(
        org,
        alice,
        "/v3/meta/agent/archive",
        {"agent_id": "agt-nothing000"},
        404,
        "agent_not_found: agent not found: agt-nothing000",
    )
    archived = org.ok(alice, "/v3/meta/agent/archive", {"agent_id": agent})
    assert (archived["agent_id"], archived["status"]) == (agent, "inactive")
    assert memory_asset(org, crew.team, agent) == []
    assert org.ok(crew.bob, "/v3/meta/agent/get", {"agent_id": agent})["status"] == "inactive"


def test_outsiders_cannot_tell_an_agent_exists_through_mutations(crew: Crew) -> None:
    """No existence leak: to a caller who cannot see an agent, it answers like a missing one."""
    org = crew.org
    agent = org.agent(crew.alice, crew.team, "a")
    refused(
        org,
        crew.carol,
        "/v3/meta/agent/update",
        {"agent_id": agent, "name": "x"},
        404,
        f"agent_not_found: agent not found: {agent}",
    )
    refused(
        org,
        crew.carol,
        "/v3/meta/agent/archive",
        {"agent_id": agent},
        404,
        f"agent_not_found: agent not found: {agent}",
    )
    refused(
        org,
        crew.carol,
        "/v3/meta/agent/delete",
        {"agent_ids": [agent]},
        404,
        f"agent_not_found: agent not found: {agent}",
    )


# -- tasks ---------------------------------------------------------------------------------------
def test_create_task_shape_and_linked_agents(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    a1, a2 = org.agent(alice, crew.team, "a1"), org.agent(crew.bob, crew.team, "b")
    made = org.ok(
        alice,
        "/v3/meta/task/create",
        {
            "team_id": crew.team,
            "creator_user_id": alice.user_id,
            "title": "Ship it",
            "linked_agents": [{"agent_id": a1, "role_in_task": "lead"}, {"agent_id": a2}],
        },
    )
    assert set(made) == TASK_FIELDS and TASK_ID.fullmatch(made["task_id"])
    assert (made["title"], made["team_id"], made["creator_user_id"]) == ("Ship it", crew.team, alice.user_id)
    assert (made["source_type"], made["status"], made["auto_assign_floating_assets"]) == ("manual", "running", False)
    assert (made["description"], made["source_url"], made["risk_level"], made["metadata_json"]) == (
        None,
        None,
        None,
        "{}",
    )
    links = org.ok(crew.bob, "/v3/meta/task-agent/list", {"task_id": made["task_id"]})
    assert links["total"] == 2
    assert {(x["agent_id"], x["role_in_task"], x["status"]) for x in links["items"]} == {
        (a1, "lead", "active"),
        (a2, None, "active"),
    }
    assert all(UUID.fullmatch(x["id"]) and x["task_id"] == made["task_id"] for x in links["items"])
    full = org.ok(
        alice,
        "/v3/meta/task/create",
        {
            "team_id": crew.team,
            "creator_user_id": alice.user_id,
            "title": "all",
            "source_type": "github",
            "source_url": "https://example.com/1",
            "status": "completed",
            "auto_assign_floating_assets": True,
            "risk_level": "high",
            "metadata_json": '{"a":1}',
        },
    )
    assert (full["source_type"], full["status"], full["auto_assign_floating_assets"], full["risk_level"]) == (
        "github",
        "completed",
        True,
        "high",
    )


def test_create_task_refusals(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    mine = org.agent(alice, crew.team, "mine")
    foreign = org.agent(crew.carol, crew.other_team, "foreign")
    path = "/v3/meta/task/create"
    base = {"team_id": crew.team, "creator_user_id": alice.user_id, "title": "t"}
    refused(
        org,
        alice,
        path,
        {**base, "linked_agents": [{"agent_id": mine}, {"agent_id": foreign}]},
        404,
        f"agent_not_found: agent not found: {foreign}",  # alice may not see it: as if it did not exist
    )
    refused(
        org,
        alice,
        path,
        {**base, "linked_agents": [{"agent_id": mine}, {"agent_id": mine, "role_in_task": "again"}]},
        409,
        f"duplicate_entry: agent linked twice: {mine}",
    )
    refused(
        org,
        alice,
        path,
        {**base, "linked_agents": [{"agent_id": "agt-nothing000"}]},
        404,
        "agent_not_found: agent not found: agt-nothing000",
    )
    refused(org, crew.bob, path, base, 403, NOT_OWNER)
    refused(org, crew.carol, path, {**base, "creator_user_id": crew.carol.user_id}, 403, NOT_MEMBER)
    refused(
        org, alice, path, {**base, "team_id": "team-nothing000"}, 404, "team_not_found: team not found: team-nothing000"
    )
    # Once alice may see the foreign agent, linking it to a task of another team is a plain mismatch.
    org.join(crew.other_team, crew.carol, alice)
    refused(
        org,
        alice,
        path,
        {**base, "linked_agents": [{"agent_id": foreign}]},
        403,
        f"agent_team_mismatch: agent {foreign} not in team {crew.team}",
    )


def test_get_task_is_for_members_of_its_team(crew: Crew) -> None:
    org = crew.org
    t = task(org, crew.alice, crew.team)
    for who in (crew.alice, crew.bob, crew.dave):
        got = org.ok(who, "/v3/meta/task/get", {"task_id": t})
        assert set(got) == TASK_FIELDS and got["task_id"] == t
    refused(org, crew.carol, "/v3/meta/task/get", {"task_id": t}, 404, f"task_not_found: not found: {t}")
    refused(
        org,
        crew.carol,
        "/v3/meta/task/get",
        {"task_id": "task-nothing000"},
        404,
        "task_not_found: not found: task-nothing000",
    )


def test_update_archive_delete_task_by_its_creator_only(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    t = task(org, alice, crew.team)
    agent = org.agent(alice, crew.team, "a")
    org.ok(alice, "/v3/meta/task-agent/link", {"task_id": t, "agent_id": agent})
    for who in (crew.dave, crew.bob):
        refused(org, who, "/v3/meta/task/update", {"task_id": t, "title": "x"}, 403, NOT_OWNER)
        refused(org, who, "/v3/meta/task/archive", {"task_id": t}, 403, NOT_OWNER)
        refused(org, who, "/v3/meta/task/delete", {"task_ids": [t]}, 403, NOT_OWNER)
    changed = org.ok(
        alice,
        "/v3/meta/task/update",
        {
            "task_id": t,
            "title": "new",
            "auto_assign_floating_assets": True,
            "risk_level": "low",
            "creator_user_id": crew.bob.user_id,  # ignored
        },
    )
    assert (changed["title"], changed["auto_assign_floating_assets"], changed["risk_level"]) == ("new", True, "low")
    assert changed["creator_user_id"] == alice.user_id
    archived = org.ok(alice, "/v3/meta/task/archive", {"task_id": t})
    assert (archived["status"], archived["title"]) == ("completed", "new")
    reopened = org.ok(alice, "/v3/meta/task/update", {"task_id": t, "status": "running"})
    assert reopened["status"] == "running"
    other = task(org, crew.bob, crew.team)
    refused(org, alice, "/v3/meta/task/delete", {"task_ids": [t, other]}, 403, NOT_OWNER)
    refused(
        org,
        alice,
        "/v3/meta/task/delete",
        {"task_ids": [t, "task-nothing000"]},
        404,
        "task_not_found: task not found: task-nothing000",
    )
    assert org.ok(alice, "/v3/meta/task/delete", {"task_ids": [t]}) == {"deleted_ids": [t], "failed": []}
    assert rows(org, "SELECT * FROM meta_task_agents WHERE task_id = ?", t) == []
    refused(org, alice, "/v3/meta/task/get", {"task_id": t}, 404, f"task_not_found: not found: {t}")
    refused(
        org, alice, "/v3/meta/task/update", {"task_id": t, "title": "x"}, 404, f"task_not_found: task not found: {t}"
    )


def test_outsiders_cannot_tell_a_task_exists_through_mutations(crew: Crew) -> None:
    """No existence leak: to a non-member of its team, a task answers like a missing one."""
    org = crew.org
    t = task(org, crew.alice, crew.team)
    message = f"task_not_found: task not found: {t}"
    refused(org, crew.carol, "/v3/meta/task/update", {"task_id": t, "title": "x"}, 404, message)
    refused(org, crew.carol, "/v3/meta/task/archive", {"task_id": t}, 404, message)
    refused(org, crew.carol, "/v3/meta/task/delete", {"task_ids": [t]}, 404, message)


def test_list_tasks_shows_only_the_callers_teams(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    t1 = task(org, alice, crew.team)
    t2 = task(org, crew.bob, crew.team, status="completed")
    org.join(crew.other_team, crew.carol, alice)
    time.sleep(0.002)  # distinct created_at (milliseconds) for the newest-first order
    t3 = task(org, alice, crew.other_team)
    c1 = task(org, crew.carol, crew.other_team)
    path = "/v3/meta/task/list"
    assert listed(org, crew.bob, {"team_id": crew.team}, path) == {t1, t2}
    assert listed(org, crew.bob, {"team_id": crew.team, "status": "completed"}, path) == {t2}
    assert listed(org, crew.bob, {"team_id": crew.team, "creator_user_id": alice.user_id}, path) == {t1}
    # By creator: only tasks in teams the caller belongs to.
    assert listed(org, alice, {"creator_user_id": alice.user_id}, path) == {t1, t3}
    assert listed(org, crew.bob, {"creator_user_id": alice.user_id}, path) == {t1}
    assert listed(org, crew.bob, {"creator_user_key": alice.key}, path) == {t1}
    assert listed(org, crew.carol, {"creator_user_id": alice.user_id}, path) == {t3}
    assert listed(org, crew.carol, {"team_id": crew.other_team}, path) == {t3, c1}
    refused(org, crew.carol, path, {"team_id": crew.team}, 403, NOT_MEMBER)
    page = org.ok(alice, path, {"creator_user_id": alice.user_id, "limit": 1, "offset": 1})
    assert (len(page["items"]), page["total"], page["limit"], page["offset"]) == (1, 2, 1, 1)
    assert page["items"][0]["task_id"] == t1  # newest first: t3, then t1


# -- task-agent ------------------------------------------------------------------------------------
def test_link_unlink_and_list_task_agents(crew: Crew) -> None:
    org, alice = crew.org, crew.alice
    t = task(org, alice, crew.team)
    agent = org.agent(crew.bob, crew.team, "b")
    foreign = org.agent(crew.carol, crew.other_team, "f")
    link = org.ok(alice, "/v3/meta/task-agent/link", {"task_id": t, "agent_id": agent, "role_in_task": "coder"})
    assert {k: link[k] for k in ("task_id", "agent_id", "role_in_task", "status")} == {
        "task_id": t,
        "agent_id": agent,
        "role_in_task": "coder",
        "status": "active",
    }
    assert UUID.fullmatch(link["id"]) and ISO_MS.fullmatch(link["created_at"])
    # Linking again updates the role of the same row.
    again = org.ok(alice, "/v3/meta/task-agent/link", {"task_id": t, "agent_id": agent, "role_in_task": "reviewer"})
    assert (again["id"], again["role_in_task"]) == (link["id"], "reviewer")
    page = org.ok(crew.bob, "/v3/meta/task-agent/list", {"task_id": t})
    assert (page["total"], [x["role_in_task"] for x in page["items"]]) == (1, ["reviewer"])
    refused(
        org,
        alice,
        "/v3/meta/task-agent/link",
        {"task_id": t, "agent_id": foreign},
        404,
        f"agent_not_found: agent not found: {foreign}",  # alice may not see it: as if it did not exist
    )
    refused(org, crew.dave, "/v3/meta/task-agent/link", {"task_id": t, "agent_id": agent}, 403, NOT_OWNER)
    refused(
        org,
        alice,
        "/v3/meta/task-agent/link",
        {"task_id": "task-nothing000", "agent_id": agent},
        404,
        "task_not_found: task not found: task-nothing000",
    )
    refused(org, crew.carol, "/v3/meta/task-agent/list", {"task_id": t}, 404, f"task_not_found: not found: {t}")
    refused(org, crew.dave, "/v3/meta/task-agent/unlink", {"task_id": t, "agent_id": agent}, 403, NOT_OWNER)
    refused(
        org,
        alice,
        "/v3/meta/task-agent/unlink",
        {"task_id": t, "agent_id": "agt-nothing000"},
        404,
        "agent_not_found: not found: agt-nothing000",
    )
    assert org.ok(alice, "/v3/meta/task-agent/unlink", {"task_id": t, "agent_id": agent}) == {"ok": True}
    assert org.ok(crew.bob, "/v3/meta/task-agent/list", {"task_id": t})["items"] == []
    # Unlinking what is not linked is no error.
    assert org.ok(alice, "/v3/meta/task-agent/unlink", {"task_id": t, "agent_id": agent}) == {"ok": True}


# -- participation log -----------------------------------------------------------------------------
def test_append_participation_rules(crew: Crew) -> None:
    org, alice, bob = crew.org, crew.alice, crew.bob
    t = task(org, alice, crew.team)
    agent = org.default_agent(crew.team, bob)
    path = "/v3/meta/participation-log/append"
    base = {"team_id": crew.team, "task_id": t, "agent_id": agent}
    entry = org.ok(bob, path, {**base, "user_id": bob.user_id})
    assert set(entry) == LOG_FIELDS and UUID.fullmatch(entry["id"])
    assert (entry["user_id"], entry["source"], entry["metadata_json"]) == (bob.user_id, "unknown", "{}")
    assert ISO_MS.fullmatch(entry["created_at"]) and entry["created_at"] == entry["updated_at"]
    given = org.ok(
        bob,
        path,
        {
            **base,
            "user_id": bob.user_id,
            "created_at": "2030-01-01T00:00:00.000Z",
            "source": "cli",
            "metadata_json": "{}",
        },
    )
    assert (given["created_at"], given["updated_at"], given["source"]) == (
        "2030-01-01T00:00:00.000Z",
        "2030-01-01T00:00:00.000Z",
        "cli",
    )
    # A team admin logs others; a member only themself.
    assert org.ok(crew.dave, path, {**base, "user_id": bob.user_id})["user_id"] == bob.user_id
    refused(org, bob, path, {**base, "user_id": alice.user_id}, 403, NOT_TEAM_ADMIN)
    refused(org, crew.carol, path, {**base, "user_id": crew.carol.user_id}, 403, NOT_MEMBER)
    refused(
        org,
        alice,
        path,
        {**base, "user_id": crew.carol.user_id},
        404,
        f"member_not_found: member not found: {crew.team}/{crew.carol.user_id}",
    )
    foreign_task = task(org, crew.carol, crew.other_team)
    refused(
        org,
        alice,
        path,
        {**base, "task_id": foreign_task, "user_id": alice.user_id},
        403,
        f"permission_denied: task {foreign_task} not in team {crew.team}",
    )
    refused(
        org,
        alice,
        path,
        {**base, "task_id": "task-nothing000", "user_id": alice.user_id},
        404,
        "task_not_found: task not found: task-nothing000",
    )
    refused(
        org,
        alice,
        path,
        {**base, "agent_id": "agt-nothing000", "user_id": alice.user_id},
        404,
        "agent_not_found: agent not found: agt-nothing000",
    )
    # Another team's agent, or a member's private agent, answers exactly like an unknown one.
    foreign_agent = org.agent(crew.carol, crew.other_team, "theirs")
    private = org.agent(bob, crew.team, "bobs-own", visibility="private")
    for other in (foreign_agent, private):
        refused(
            org,
            alice,
            path,
            {**base, "agent_id": other, "user_id": alice.user_id},
            404,
            f"agent_not_found: agent not found: {other}",
        )
    # The member whose private agent it is may log through it, and a team admin may log them through it.
    assert org.ok(bob, path, {**base, "agent_id": private, "user_id": bob.user_id})["agent_id"] == private
    assert org.ok(crew.dave, path, {**base, "agent_id": private, "user_id": bob.user_id})["agent_id"] == private


def test_list_participation_window_filters_and_dedupe(crew: Crew) -> None:
    org, alice, bob = crew.org, crew.alice, crew.bob
    t1, t2 = task(org, alice, crew.team), task(org, alice, crew.team)
    agent = org.agent(alice, crew.team, "a")
    path = "/v3/meta/participation-log/append"

    def log(who: Member, at: str, task_id: str = t1) -> str:
        body = {"team_id": crew.team, "task_id": task_id, "agent_id": agent, "user_id": who.user_id, "created_at": at}
        return org.ok(who, path, body)["id"]

    b0 = log(bob, "2030-01-01T00:00:00.000Z")
    b1 = log(bob, "2030-01-01T01:00:00.000Z")
    b2 = log(bob, "2030-01-01T02:00:00.000Z", t2)
    a1 = log(alice, "2030-01-01T01:30:00.000Z")
    lst = "/v3/meta/participation-log/list"

    def ids(body: dict[str, Any]) -> list[str]:
        page = org.ok(crew.dave, lst, {"team_id": crew.team, **body})
        assert page["total"] == len(page["items"]) or body.get("limit"), page
        return [e["id"] for e in page["items"]]

    assert ids({}) == [b2, a1, b1, b0]  # newest first
    window = {"created_after": "2030-01-01T01:00:00.000Z", "created_before": "2030-01-01T02:00:00.000Z"}
    assert ids(window) == [b2, a1, b1]  # both ends inclusive
    assert ids({"created_after": "2030-01-01T01:00:00.001Z"}) == [b2, a1]
    assert ids({"created_before": "2030-01-01T00:59:59.999Z"}) == [b0]
    assert ids({"user_id": bob.user_id}) == [b2, b1, b0]
    assert ids({"task_id": t2}) == [b2]
    assert ids({"agent_id": agent, "user_id": alice.user_id}) == [a1]
    deduped = org.ok(bob, lst, {"team_id": crew.team, "dedupe": True})
    assert ([e["id"] for e in deduped["items"]], deduped["total"]) == ([b2, a1], 2)
    assert ids({"dedupe": True, "created_before": "2030-01-01T01:45:00.000Z"}) == [a1, b1]
    page = org.ok(bob, lst, {"team_id": crew.team, "limit": 2, "offset": 1})
    assert ([e["id"] for e in page["items"]], page["total"], page["limit"], page["offset"]) == ([a1, b1], 4, 2, 1)
    refused(org, crew.carol, lst, {"team_id": crew.team}, 403, NOT_MEMBER)


def test_participation_window_compares_instants_not_text(crew: Crew) -> None:
    """An instant written with an offset is filtered and ordered by the moment it names."""
    org, bob = crew.org, crew.bob
    t = task(org, crew.alice, crew.team)
    agent = org.default_agent(crew.team, bob)
    base = {"team_id": crew.team, "task_id": t, "agent_id": agent, "user_id": bob.user_id}
    # 10:00 at +08:00 is 02:00Z: earlier than 05:00Z although it sorts later as text.
    early = org.ok(bob, "/v3/meta/participation-log/append", {**base, "created_at": "2030-01-01T10:00:00+08:00"})["id"]
    late = org.ok(bob, "/v3/meta/participation-log/append", {**base, "created_at": "2030-01-01T05:00:00.000Z"})["id"]
    lst = "/v3/meta/participation-log/list"
    page = org.ok(bob, lst, {"team_id": crew.team, "created_after": "2030-01-01T03:00:00.000Z"})
    assert [e["id"] for e in page["items"]] == [late]
    assert [e["id"] for e in org.ok(bob, lst, {"team_id": crew.team})["items"]] == [late, early]
    newest = org.ok(bob, lst, {"team_id": crew.team, "dedupe": True})["items"]
    assert [e["id"] for e in newest] == [late]
