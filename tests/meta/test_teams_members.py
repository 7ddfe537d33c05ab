"""Teams and team members on /v3/meta (the original's team/* and team-member/* routes).

memhub hardening asserted here: team/get answers `team_not_found` to non-members, team/list of
another user is refused unless system admin, a new member gets a private `default-agent-<username>`,
team/delete takes its assets' bindings and ACL entries with it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.meta.org import Member, Org, refused, rows
from tests.meta.shapes import ISO_MS, MEMBER_FIELDS, NOT_MEMBER, NOT_OWNER, NOT_TEAM_ADMIN, TEAM_FIELDS, TEAM_ID, UUID


@dataclass
class Crew:
    """alice owns team T; dave is a team admin, bob a member, rita a reviewer; carol is in no team of alice."""

    org: Org
    team: str
    alice: Member
    bob: Member
    carol: Member
    dave: Member
    rita: Member


@pytest.fixture
def crew(org: Org) -> Crew:
    alice, bob, carol, dave, rita = org.users("alice", "bob", "carol", "dave", "rita")
    team = org.staffed_team(alice, "T", (dave, "admin"), (bob, "member"), (rita, "reviewer"))
    return Crew(org, team, alice, bob, carol, dave, rita)


def agents_named(org: Org, team_id: str, name: str) -> list[tuple[Any, ...]]:
    return rows(
        org, "SELECT agent_id, owner_user_id, visibility FROM meta_agents WHERE team_id = ? AND name = ?", team_id, name
    )


# -- team/create ----------------------------------------------------------------------------------
def test_create_team_shape_and_the_owner_becomes_its_admin(org: Org) -> None:
    alice = org.user("alice")
    team = org.ok(alice, "/v3/meta/team/create", {"name": "Core", "owner_user_id": alice.user_id})
    assert set(team) == TEAM_FIELDS
    assert TEAM_ID.fullmatch(team["team_id"])
    assert (team["name"], team["owner_user_id"], team["status"], team["description"], team["metadata_json"]) == (
        "Core",
        alice.user_id,
        "active",
        None,
        "{}",
    )
    assert ISO_MS.fullmatch(team["created_at"]) and team["created_at"] == team["updated_at"]
    member = org.ok(alice, "/v3/meta/team-member/get", {"team_id": team["team_id"], "user_id": alice.user_id})
    assert (member["role"], member["status"], member["username"]) == ("admin", "active", "alice")
    full = org.ok(
        alice,
        "/v3/meta/team/create",
        {
            "name": "Full",
            "owner_user_id": alice.user_id,
            "description": "d",
            "status": "archived",
            "metadata_json": '{"a": 1}',
        },
    )
    assert (full["description"], full["status"], full["metadata_json"]) == ("d", "archived", '{"a": 1}')


def test_create_team_for_someone_else_is_refused_even_for_the_system_admin(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    body = {"name": "theirs", "owner_user_id": bob.user_id}
    refused(org, alice, "/v3/meta/team/create", body, 403, NOT_OWNER)
    refused(org, org.admin, "/v3/meta/team/create", body, 403, NOT_OWNER)


def test_team_quota(make_org: Callable[..., Org]) -> None:
    org = make_org("data", max_teams_per_instance=2)  # default-team is the first
    alice = org.user("alice")
    second = org.team(alice, "second")
    message = "team_limit_exceeded: team limit 2 reached for instance svc-a (current: 2)"
    refused(org, alice, "/v3/meta/team/create", {"name": "third", "owner_user_id": alice.user_id}, 409, message)
    refused(org, org.admin, "/v3/meta/team/create", {"name": "third", "owner_user_id": org.admin.user_id}, 409, message)
    org.ok(alice, "/v3/meta/team/delete", {"team_ids": [second]})
    org.team(alice, "third")


# -- team/get, update ----------------------------------------------------------------------------
def test_get_team_is_for_members_only(crew: Crew) -> None:
    org = crew.org
    for who in (crew.alice, crew.dave, crew.bob, crew.rita):
        assert org.ok(who, "/v3/meta/team/get", {"team_id": crew.team})["team_id"] == crew.team
    refused(
        org, crew.carol, "/v3/meta/team/get", {"team_id": crew.team}, 404, f"team_not_found: not found: {crew.team}"
    )
    refused(
        org,
        crew.carol,
        "/v3/meta/team/get",
        {"team_id": "team-nothing000"},
        404,
        "team_not_found: not found: team-nothing000",
    )


def test_update_team_by_owner_or_team_admin(crew: Crew) -> None:
    org = crew.org
    before = org.ok(crew.alice, "/v3/meta/team/get", {"team_id": crew.team})
    changed = org.ok(
        crew.alice,
        "/v3/meta/team/update",
        {
            "team_id": crew.team,
            "name": "Renamed",
            "description": "desc",
            "metadata_json": '{"x":1}',
            "owner_user_id": crew.bob.user_id,  # the owner is immutable: ignored
        },
    )
    assert (changed["name"], changed["description"], changed["metadata_json"]) == ("Renamed", "desc", '{"x":1}')
    assert changed["owner_user_id"] == crew.alice.user_id
    assert changed["created_at"] == before["created_at"] and changed["updated_at"] >= before["updated_at"]
    by_admin = org.ok(crew.dave, "/v3/meta/team/update", {"team_id": crew.team, "status": "archived"})
    assert (by_admin["status"], by_admin["name"]) == ("archived", "Renamed")
    assert org.ok(crew.bob, "/v3/meta/team/get", {"team_id": crew.team}) == by_admin
    for who in (crew.bob, crew.rita):
        refused(org, who, "/v3/meta/team/update", {"team_id": crew.team, "name": "mine"}, 403, NOT_TEAM_ADMIN)
    refused(
        org,
        crew.carol,
        "/v3/meta/team/update",
        {"team_id": "team-nothing000", "name": "x"},
        404,
        "team_not_found: team not found: team-nothing000",
    )


def test_outsiders_cannot_tell_a_team_exists_through_update_or_delete(crew: Crew) -> None:
    """No existence leak: to a non-member, a real team answers exactly like a missing one."""
    org = crew.org
    refused(
        org,
        crew.carol,
        "/v3/meta/team/update",
        {"team_id": crew.team, "name": "x"},
        404,
        f"team_not_found: team not found: {crew.team}",
    )
    refused(
        org,
        crew.carol,
        "/v3/meta/team/delete",
        {"team_ids": [crew.team]},
        404,
        f"team_not_found: team not found: {crew.team}",
    )


# -- team/delete ---------------------------------------------------------------------------------
def test_delete_team_rules_and_all_or_nothing(crew: Crew) -> None:
    org = crew.org
    other = org.team(crew.carol, "C")
    for who, message in ((crew.bob, NOT_TEAM_ADMIN), (crew.rita, NOT_TEAM_ADMIN)):
        refused(org, who, "/v3/meta/team/delete", {"team_ids": [crew.team]}, 403, message)
    # One missing or foreign team fails the whole request.
    refused(
        org,
        crew.alice,
        "/v3/meta/team/delete",
        {"team_ids": [crew.team, "team-nothing000"]},
        404,
        "team_not_found: team not found: team-nothing000",
    )
    org.join(other, crew.carol, crew.alice)  # alice is a plain member of carol's team
    refused(org, crew.alice, "/v3/meta/team/delete", {"team_ids": [crew.team, other]}, 403, NOT_TEAM_ADMIN)
    # A team admin may delete; duplicates are folded.
    assert org.ok(crew.dave, "/v3/meta/team/delete", {"team_ids": [crew.team, crew.team]}) == {
        "deleted_ids": [crew.team],
        "failed": [],
    }


def test_delete_team_leaves_nothing_behind(crew: Crew) -> None:
    org = crew.org
    alice, bob = crew.alice, crew.bob
    agent = org.agent(alice, crew.team, "helper")
    bob_default = org.default_agent(crew.team, bob)
    task = org.ok(
        alice,
        "/v3/meta/task/create",
        {"team_id": crew.team, "creator_user_id": alice.user_id, "title": "t", "linked_agents": [{"agent_id": agent}]},
    )["task_id"]
    org.ok(
        bob,
        "/v3/meta/participation-log/append",
        {"team_id": crew.team, "task_id": task, "agent_id": bob_default, "user_id": bob.user_id},
    )
    asset = "doc-of-team-t"
    org.ok(
        alice,
        "/v3/meta/asset/create",
        {
            "asset_id": asset,
            "team_id": crew.team,
            "asset_type": "skill",
            "name": "doc",
            "owner_user_id": alice.user_id,
            "source_type": "manual",
        },
    )
    org.ok(
        alice,
        "/v3/meta/acl/grant",
        {
            "asset_id": asset,
            "subject_type": "user",
            "subject_id": bob.user_id,
            "permission": "write",
            "granted_by": alice.user_id,
        },
    )
    org.ok(
        alice,
        "/v3/meta/agent-fixed-asset/set",
        {"agent_id": agent, "bindings": [{"asset_id": asset, "asset_type": "skill", "created_by": alice.user_id}]},
    )
    # A team in another part of the instance is untouched.
    keep = org.team(crew.carol, "keep")
    keep_agent = org.agent(crew.carol, keep, "keeper")
    untouched = {
        t: rows(org, f"SELECT * FROM {t} WHERE team_id = ?", keep)
        for t in ("meta_teams", "meta_agents", "meta_team_members", "meta_assets")
    }

    org.ok(alice, "/v3/meta/team/delete", {"team_ids": [crew.team]})

    agents = [agent, bob_default]
    assert rows(org, "SELECT * FROM meta_teams WHERE team_id = ?", crew.team) == []
    assert rows(org, "SELECT * FROM meta_team_members WHERE team_id = ?", crew.team) == []
    assert rows(org, "SELECT * FROM meta_agents WHERE team_id = ?", crew.team) == []
    assert rows(org, "SELECT * FROM meta_tasks WHERE team_id = ?", crew.team) == []
    assert rows(org, "SELECT * FROM meta_task_agents WHERE task_id = ?", task) == []
    assert rows(org, "SELECT * FROM meta_assets WHERE team_id = ?", crew.team) == []
    for a in agents:
        assert rows(org, "SELECT * FROM meta_agent_fixed_assets WHERE agent_id = ?", a) == []
    assert rows(org, "SELECT * FROM meta_agent_fixed_assets WHERE asset_id = ?", asset) == []
    assert rows(org, "SELECT * FROM meta_asset_acl WHERE asset_id = ?", asset) == []
    for t, before in untouched.items():
        assert rows(org, f"SELECT * FROM {t} WHERE team_id = ?", keep) == before
    assert org.ok(crew.carol, "/v3/meta/agent/get", {"agent_id": keep_agent})["agent_id"] == keep_agent

    # Later requests with the old ids reach nothing.
    refused(org, alice, "/v3/meta/team/get", {"team_id": crew.team}, 404, f"team_not_found: not found: {crew.team}")
    refused(org, alice, "/v3/meta/team-member/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    for a in agents:
        refused(org, alice, "/v3/meta/agent/get", {"agent_id": a}, 404, f"agent_not_found: not found: {a}")
    refused(
        org, bob, "/v3/meta/agent/get", {"agent_id": bob_default}, 404, f"agent_not_found: not found: {bob_default}"
    )
    refused(org, alice, "/v3/meta/task/get", {"task_id": task}, 404, f"task_not_found: not found: {task}")
    refused(org, alice, "/v3/meta/asset/get", {"asset_id": asset}, 404, f"asset_not_found: not found: {asset}")
    refused(
        org,
        alice,
        "/v3/meta/agent/create",
        {"team_id": crew.team, "owner_user_id": alice.user_id, "name": "again"},
        404,
        f"team_not_found: team not found: {crew.team}",
    )
    refused(
        org,
        alice,
        "/v3/meta/team-member/add",
        {"team_id": crew.team, "user_id": bob.user_id},
        403,
        NOT_MEMBER,
    )
    refused(org, bob, "/v3/meta/participation-log/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    assert crew.team not in {
        t["team_id"] for t in org.ok(alice, "/v3/meta/team/list", {"user_id": alice.user_id})["items"]
    }


# -- team/list -----------------------------------------------------------------------------------
def test_list_teams_of_a_user(crew: Crew) -> None:
    org = crew.org
    time.sleep(0.002)  # distinct created_at (milliseconds) for the newest-first order
    second = org.team(crew.bob, "B2")
    page = org.ok(crew.bob, "/v3/meta/team/list", {"user_id": crew.bob.user_id})
    assert (page["total"], page["limit"], page["offset"]) == (2, 20, 0)
    assert [t["team_id"] for t in page["items"]] == [second, crew.team]  # newest first
    assert all(set(t) == TEAM_FIELDS for t in page["items"])
    assert org.ok(crew.bob, "/v3/meta/team/list", {"user_key": crew.bob.key}) == page
    named = org.ok(crew.bob, "/v3/meta/team/list", {"user_id": crew.bob.user_id, "name": "T"})
    assert [t["team_id"] for t in named["items"]] == [crew.team] and named["total"] == 1
    paged = org.ok(crew.bob, "/v3/meta/team/list", {"user_id": crew.bob.user_id, "limit": 1, "offset": 1})
    assert [t["team_id"] for t in paged["items"]] == [crew.team] and paged["total"] == 2
    assert org.ok(crew.carol, "/v3/meta/team/list", {"user_id": crew.carol.user_id})["items"] == []
    # The system admin may look at anyone's teams.
    assert org.ok(org.admin, "/v3/meta/team/list", {"user_id": crew.bob.user_id}) == page


def test_list_teams_of_another_user_is_refused(crew: Crew) -> None:
    org = crew.org
    message = "permission_denied: cannot list another user's teams"
    refused(org, crew.carol, "/v3/meta/team/list", {"user_id": crew.bob.user_id}, 403, message)
    refused(org, crew.alice, "/v3/meta/team/list", {"user_id": crew.bob.user_id}, 403, message)  # even their team owner
    refused(org, crew.carol, "/v3/meta/team/list", {"user_key": crew.bob.key}, 403, message)
    refused(
        org,
        crew.carol,
        "/v3/meta/team/list",
        {"user_key": "sk-mem-" + "q" * 32},
        404,
        "user_not_found: user not found for user_key",
    )


def test_list_teams_counts_active_memberships_only(crew: Crew) -> None:
    org = crew.org
    org.ok(
        crew.alice, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": crew.bob.user_id, "status": "removed"}
    )
    assert org.ok(crew.bob, "/v3/meta/team/list", {"user_id": crew.bob.user_id})["items"] == []


# -- team-member/add -----------------------------------------------------------------------------
def test_add_member_returns_the_row_and_creates_a_private_default_agent(org: Org) -> None:
    alice, bob = org.user("alice"), org.user("bob")
    team = org.team(alice, "T")
    assert agents_named(org, team, "default-agent-alice") == []  # the owner gets none on team/create
    row = org.ok(alice, "/v3/meta/team-member/add", {"team_id": team, "user_id": bob.user_id})
    assert set(row) == MEMBER_FIELDS and UUID.fullmatch(row["id"])
    assert (row["team_id"], row["user_id"], row["role"], row["status"]) == (team, bob.user_id, "member", "active")
    assert ISO_MS.fullmatch(row["joined_at"])
    ((agent_id, owner, visibility),) = agents_named(org, team, "default-agent-bob")
    assert (owner, visibility) == (bob.user_id, "private")
    assert org.ok(bob, "/v3/meta/agent/get", {"agent_id": agent_id})["owner_user_id"] == bob.user_id
    # Its chat_memory asset, bound to it.
    asset = f"chat_memory-{team}-{agent_id}"
    assert rows(org, "SELECT asset_type, owner_user_id, visibility FROM meta_assets WHERE asset_id = ?", asset) == [
        ("chat_memory", bob.user_id, "private")
    ]
    assert rows(org, "SELECT agent_id FROM meta_agent_fixed_assets WHERE asset_id = ?", asset) == [(agent_id,)]
    # Private: not even the team owner sees it.
    refused(org, alice, "/v3/meta/agent/get", {"agent_id": agent_id}, 404, f"agent_not_found: not found: {agent_id}")


def test_add_member_refusals(crew: Crew) -> None:
    org = crew.org
    path = "/v3/meta/team-member/add"
    newbie = org.user("newbie")
    body = {"team_id": crew.team, "user_id": newbie.user_id}
    refused(org, crew.bob, path, body, 403, NOT_TEAM_ADMIN)
    refused(org, crew.rita, path, body, 403, NOT_TEAM_ADMIN)
    refused(org, crew.carol, path, body, 403, NOT_MEMBER)
    refused(
        org,
        crew.dave,
        path,
        {"team_id": crew.team, "user_id": crew.dave.user_id, "role": "member"},
        403,
        "permission_denied: cannot add yourself as a team member",
    )
    for role in ("member", "reviewer"):
        refused(
            org,
            crew.dave,
            path,
            {"team_id": crew.team, "user_id": crew.alice.user_id, "role": role},
            403,
            "permission_denied: cannot demote team owner",
        )
    refused(
        org,
        crew.alice,
        path,
        {"team_id": crew.team, "user_id": crew.bob.user_id},
        409,
        f"member_already_exists: member already exists: {crew.team}/{crew.bob.user_id}",
    )
    refused(
        org,
        crew.alice,
        path,
        {"team_id": crew.team, "user_id": crew.dave.user_id, "role": "admin"},
        409,
        f"member_already_exists: member already exists: {crew.team}/{crew.dave.user_id}",
    )
    refused(
        org,
        crew.alice,
        path,
        {"team_id": crew.team, "user_id": "usr-nobody0000"},
        404,
        "user_not_found: not found: usr-nobody0000",
    )


def test_changing_a_role_keeps_the_row_and_makes_no_second_default_agent(crew: Crew) -> None:
    org = crew.org
    before = org.ok(crew.alice, "/v3/meta/team-member/get", {"team_id": crew.team, "user_id": crew.bob.user_id})
    row = org.ok(
        crew.dave, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": crew.bob.user_id, "role": "reviewer"}
    )
    assert (row["id"], row["joined_at"], row["role"]) == (before["id"], before["joined_at"], "reviewer")
    assert len(agents_named(org, crew.team, "default-agent-bob")) == 1
    # The owner may be (re)added as admin only: that is no change, hence a conflict.
    refused(
        org,
        crew.dave,
        "/v3/meta/team-member/add",
        {"team_id": crew.team, "user_id": crew.alice.user_id, "role": "admin"},
        409,
        f"member_already_exists: member already exists: {crew.team}/{crew.alice.user_id}",
    )


def test_a_removed_member_loses_access_and_can_be_added_again(crew: Crew) -> None:
    org, bob = crew.org, crew.bob
    default = org.default_agent(crew.team, bob)
    assert org.ok(crew.dave, "/v3/meta/team-member/remove", {"team_id": crew.team, "user_id": bob.user_id}) == {
        "ok": True
    }
    refused(org, bob, "/v3/meta/team/get", {"team_id": crew.team}, 404, f"team_not_found: not found: {crew.team}")
    refused(org, bob, "/v3/meta/team-member/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    refused(org, bob, "/v3/meta/agent/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    refused(org, bob, "/v3/meta/user/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    refused(
        org,
        bob,
        "/v3/meta/task/create",
        {"team_id": crew.team, "creator_user_id": bob.user_id, "title": "x"},
        403,
        NOT_MEMBER,
    )
    refused(
        org,
        crew.alice,
        "/v3/meta/team-member/get",
        {"team_id": crew.team, "user_id": bob.user_id},
        404,
        f"member_not_found: member not found: {crew.team}/{bob.user_id}",
    )
    # Re-adding works; the default agent is not created twice.
    row = org.ok(crew.alice, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": bob.user_id})
    assert (row["status"], row["role"]) == ("active", "member")
    assert [a[0] for a in agents_named(org, crew.team, "default-agent-bob")] == [default]
    assert org.ok(bob, "/v3/meta/team/get", {"team_id": crew.team})["team_id"] == crew.team


def test_a_member_set_to_removed_loses_access(crew: Crew) -> None:
    org, bob = crew.org, crew.bob
    row = org.ok(
        crew.alice, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": bob.user_id, "status": "removed"}
    )
    assert row["status"] == "removed"
    refused(org, bob, "/v3/meta/team/get", {"team_id": crew.team}, 404, f"team_not_found: not found: {crew.team}")
    refused(org, bob, "/v3/meta/team-member/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    refused(org, bob, "/v3/meta/team-member/get", {"team_id": crew.team, "user_id": bob.user_id}, 403, NOT_MEMBER)
    refused(org, bob, "/v3/meta/participation-log/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    listed = org.ok(crew.alice, "/v3/meta/team-member/list", {"team_id": crew.team})["items"]
    assert bob.user_id not in {m["user_id"] for m in listed}
    got = org.ok(crew.alice, "/v3/meta/team-member/get", {"team_id": crew.team, "user_id": bob.user_id})
    assert (got["status"], got["username"]) == ("removed", "bob")
    # Reactivated.
    org.ok(crew.alice, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": bob.user_id, "status": "active"})
    assert org.ok(bob, "/v3/meta/team/get", {"team_id": crew.team})["team_id"] == crew.team
    assert len(agents_named(org, crew.team, "default-agent-bob")) == 1


def test_a_member_added_as_removed_gets_no_default_agent(crew: Crew) -> None:
    org = crew.org
    newbie = org.user("newbie")
    org.ok(
        crew.alice, "/v3/meta/team-member/add", {"team_id": crew.team, "user_id": newbie.user_id, "status": "removed"}
    )
    assert agents_named(org, crew.team, "default-agent-newbie") == []


# -- team-member/remove --------------------------------------------------------------------------
def test_remove_member_rules(crew: Crew) -> None:
    org = crew.org
    path = "/v3/meta/team-member/remove"
    refused(
        org,
        crew.dave,
        path,
        {"team_id": crew.team, "user_id": crew.alice.user_id},
        403,
        "permission_denied: cannot remove team owner",
    )
    refused(
        org,
        crew.alice,
        path,
        {"team_id": crew.team, "user_id": crew.alice.user_id},
        403,
        "permission_denied: cannot remove team owner",
    )
    refused(org, crew.bob, path, {"team_id": crew.team, "user_id": crew.rita.user_id}, 403, NOT_TEAM_ADMIN)
    refused(org, crew.carol, path, {"team_id": crew.team, "user_id": crew.rita.user_id}, 403, NOT_MEMBER)
    refused(
        org,
        crew.alice,
        path,
        {"team_id": crew.team, "user_id": "usr-nobody0000"},
        404,
        "user_not_found: not found: usr-nobody0000",
    )
    # Removing someone who is not a member is not an error.
    assert org.ok(crew.alice, path, {"team_id": crew.team, "user_id": crew.carol.user_id}) == {"ok": True}
    assert org.ok(crew.dave, path, {"team_id": crew.team, "user_id": crew.rita.user_id}) == {"ok": True}
    listed = org.ok(crew.alice, "/v3/meta/team-member/list", {"team_id": crew.team})["items"]
    assert {m["user_id"] for m in listed} == {crew.alice.user_id, crew.dave.user_id, crew.bob.user_id}


def test_the_owner_cannot_be_removed_through_member_add_either(crew: Crew) -> None:
    """team-member/add with status "removed" is a removal: the owner stays an active admin."""
    org = crew.org
    refused(
        org,
        crew.dave,
        "/v3/meta/team-member/add",
        {"team_id": crew.team, "user_id": crew.alice.user_id, "role": "admin", "status": "removed"},
        403,
        "permission_denied: cannot remove team owner",
    )
    assert org.ok(crew.alice, "/v3/meta/team/get", {"team_id": crew.team})["team_id"] == crew.team


# -- team-member/list, get -----------------------------------------------------------------------
def test_list_and_get_members_with_usernames(crew: Crew) -> None:
    org = crew.org
    page = org.ok(crew.bob, "/v3/meta/team-member/list", {"team_id": crew.team})
    assert (page["total"], page["limit"], page["offset"]) == (4, 20, 0)
    assert {(m["username"], m["role"]) for m in page["items"]} == {
        ("alice", "admin"),
        ("dave", "admin"),
        ("bob", "member"),
        ("rita", "reviewer"),
    }
    assert all(set(m) == MEMBER_FIELDS | {"username"} and m["status"] == "active" for m in page["items"])
    joined = [m["joined_at"] for m in page["items"]]
    assert joined == sorted(joined, reverse=True)  # newest first
    one = org.ok(crew.bob, "/v3/meta/team-member/list", {"team_id": crew.team, "limit": 1, "offset": 3})
    assert len(one["items"]) == 1 and one["total"] == 4
    got = org.ok(crew.rita, "/v3/meta/team-member/get", {"team_id": crew.team, "user_id": crew.dave.user_id})
    assert (got["username"], got["role"], got["user_id"]) == ("dave", "admin", crew.dave.user_id)
    refused(org, crew.carol, "/v3/meta/team-member/list", {"team_id": crew.team}, 403, NOT_MEMBER)
    refused(
        org,
        crew.carol,
        "/v3/meta/team-member/get",
        {"team_id": crew.team, "user_id": crew.bob.user_id},
        403,
        NOT_MEMBER,
    )
    refused(
        org,
        crew.bob,
        "/v3/meta/team-member/get",
        {"team_id": crew.team, "user_id": crew.carol.user_id},
        404,
        f"member_not_found: member not found: {crew.team}/{crew.carol.user_id}",
    )
