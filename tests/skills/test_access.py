"""Skills as meta assets, and what a user key may read and write (member, non-member, ACL grant, private).

alice owns team A with a team-visible agent AT and a private agent AP; bob is a member, dave is in no team.
Everything goes through the real app: skills over /v3/skill/*, assets and ACLs over /v3/meta/*.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org, rows
from tests.skills.helpers import skill_md


@dataclass
class Team:
    org: Org
    alice: Member
    bob: Member
    dave: Member
    team: str
    at: str
    ap: str

    def call(self, who: Member | None, route: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.org.call(who, f"/v3/skill/{route}", body)
        return {"status": response.status_code, **response.json()}

    def ok(self, who: Member | None, route: str, body: dict[str, Any]) -> Any:
        envelope = self.call(who, route, body)
        assert (envelope["status"], envelope["code"]) == (200, 0), envelope
        return envelope["data"]

    def scope(self, agent: str | None = None) -> dict[str, str]:
        return {"team_id": self.team, **({"agent_id": agent} if agent else {})}


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Team]:
    gw: Gateway = build_gateway(tmp_path / "data", pipeline_enabled=False)
    org = Org(gw)
    alice, bob, dave = org.users("alice", "bob", "dave")
    team = org.staffed_team(alice, "A", (bob, "member"))
    yield Team(
        org, alice, bob, dave, team, org.agent(alice, team, "at", "team"), org.agent(alice, team, "ap", "private")
    )
    gw.close()


def _create(t: Team, who: Member | None, agent: str, name: str = "deploy-app") -> str:
    body = {**t.scope(agent), "name": name, "content": skill_md(name)}
    return t.ok(who, "create", body)["skill_id"]


def test_create_registers_a_private_asset_bound_to_the_owner_agent(t: Team) -> None:
    sid = _create(t, t.alice, t.at)
    asset = t.org.ok(t.alice, "/v3/meta/asset/get", {"asset_id": sid})
    assert {k: asset[k] for k in ("asset_id", "asset_type", "team_id", "owner_user_id", "visibility", "name")} == {
        "asset_id": sid,
        "asset_type": "skill",
        "team_id": t.team,
        "owner_user_id": t.alice.user_id,
        "visibility": "private",
        "name": "deploy-app",
    }
    bindings = t.org.ok(t.alice, "/v3/meta/agent-fixed-asset/list", {"agent_id": t.at})["items"]
    (bound,) = [b for b in bindings if b["asset_id"] == sid]
    assert (bound["asset_type"], bound["injection_mode"], bound["priority"]) == ("skill", "reference", 50)


def test_the_gateway_key_registers_for_the_agents_owner_and_checks_its_team(t: Team) -> None:
    sid = _create(t, None, t.at)
    assert t.org.ok(t.alice, "/v3/meta/asset/get", {"asset_id": sid})["owner_user_id"] == t.alice.user_id
    other_team = t.org.team(t.bob, "B")
    mismatch = t.call(
        None, "create", {"team_id": other_team, "agent_id": t.at, "name": "x1", "content": skill_md("x1")}
    )
    assert (mismatch["status"], mismatch["code"]) == (200, 40302)
    assert mismatch["message"] == f"SKILL_TEAM_MISMATCH: agent {t.at} belongs to team {t.team}, not {other_team}"
    # An agent the meta store does not know gets no asset (the original's behaviour).
    loose = _create(t, None, "agent-elsewhere")
    assert t.org.call(t.alice, "/v3/meta/asset/get", {"asset_id": loose}).json()["code"] != 0


def test_delete_removes_the_asset_its_bindings_and_acl(t: Team) -> None:
    sid = _create(t, t.alice, t.at)
    t.org.ok(t.alice, "/v3/meta/asset/update", {"asset_id": sid, "visibility": "restricted"})
    grant = {"asset_id": sid, "subject_type": "user", "subject_id": t.bob.user_id, "permission": "read"}
    t.org.ok(t.alice, "/v3/meta/acl/grant", {**grant, "granted_by": t.alice.user_id})
    t.ok(t.alice, "delete", {**t.scope(t.at), "skill_id": sid, "expected_version": 1})
    assert t.org.call(t.alice, "/v3/meta/asset/get", {"asset_id": sid}).json()["code"] != 0
    bindings = t.org.ok(t.alice, "/v3/meta/agent-fixed-asset/list", {"agent_id": t.at})["items"]
    assert sid not in {b["asset_id"] for b in bindings}
    assert rows(t.org, "SELECT COUNT(*) FROM meta_asset_acl WHERE asset_id = ?", sid) == [(0,)]


def test_a_private_skill_is_the_owners_alone_until_shared(t: Team) -> None:
    sid = _create(t, t.alice, t.at)
    read = {**t.scope(), "skill_id": sid}
    assert t.ok(t.alice, "get", read)["skill_id"] == sid
    assert t.call(t.bob, "get", read)["code"] == 40401
    assert t.ok(t.bob, "list", t.scope())["total"] == 0
    assert t.ok(t.alice, "list", t.scope())["total"] == 1
    # Shared with the team: every member reads it.
    t.org.ok(t.alice, "/v3/meta/asset/update", {"asset_id": sid, "visibility": "team"})
    assert t.ok(t.bob, "get", read)["skill_id"] == sid
    assert [i["skill_id"] for i in t.ok(t.bob, "list", t.scope())["items"]] == [sid]
    # Restricted: only an ACL grant opens it.
    t.org.ok(t.alice, "/v3/meta/asset/update", {"asset_id": sid, "visibility": "restricted"})
    assert t.call(t.bob, "get", read)["code"] == 40401
    grant = {"asset_id": sid, "subject_type": "user", "subject_id": t.bob.user_id, "permission": "read"}
    t.org.ok(t.alice, "/v3/meta/acl/grant", {**grant, "granted_by": t.alice.user_id})
    assert t.ok(t.bob, "get", read)["skill_id"] == sid
    assert t.ok(t.bob, "export", read)["name"] == "deploy-app"
    assert t.ok(t.bob, "list", t.scope())["total"] == 1


def test_writes_go_through_the_owner_agent(t: Team) -> None:
    sid = _create(t, t.alice, t.at)
    t.org.ok(t.alice, "/v3/meta/asset/update", {"asset_id": sid, "visibility": "team"})
    update = {"skill_id": sid, "expected_version": 1, "content": skill_md(description="bob's")}
    # bob may use the team-visible owner agent, so he may write through it.
    assert t.ok(t.bob, "update", {**t.scope(t.at), **update})["version"] == 2
    bob_agent = t.org.default_agent(t.team, t.bob)
    refused = t.call(t.bob, "update", {**t.scope(bob_agent), **{**update, "expected_version": 2}})
    assert (refused["status"], refused["code"]) == (200, 40301)
    # A write names the agent it acts through.
    no_agent = t.call(t.bob, "update", {**t.scope(), **update})
    assert (no_agent["status"], no_agent["message"]) == (
        403,
        "agent_id: is required with a user key to write (the skill's owner agent)",
    )


def test_user_key_refusals_name_the_field(t: Team) -> None:
    sid = _create(t, t.alice, t.at)
    cases = [
        (t.dave, {**t.scope(), "skill_id": sid}, "team_id: not a team this user is an active member of"),
        (t.bob, {"skill_id": sid}, "team_id: not a team this user is an active member of"),
        (t.bob, {**t.scope(t.ap), "skill_id": sid}, "agent_id: not an agent this user may use"),
        (
            t.bob,
            {**t.scope(), "user_id": t.alice.user_id, "skill_id": sid},
            "user_id: a user key acts only as its own user",
        ),
        (t.bob, {**t.scope("agt-nope"), "skill_id": sid}, f"agent_id: not an agent of team {t.team}"),
    ]
    for who, body, message in cases:
        envelope = t.call(who, "get", body)
        assert (envelope["status"], envelope["code"], envelope["message"]) == (403, 403, message), envelope
    dave_create = t.call(t.dave, "create", {**t.scope(t.at), "name": "x1", "content": skill_md("x1")})
    assert dave_create["status"] == 403
    assert t.ok(t.alice, "list", t.scope())["total"] == 1
