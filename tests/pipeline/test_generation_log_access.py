"""Who reads which memory-generation-log records, through the real app with user keys and a real pipeline run.

The tenant of tests/pipeline/test_memory_prompt_access.py: alice owns team A (erin is one of its admins,
bob a plain member, agent AT), carol owns team B (agent CB), root is the system admin. alice and bob talk
to AT, carol to CB, and bob also to his private default agent of team A; the pipeline (the fake model)
then extracts, writes scenes and a persona for each, and logs every generation.

A plain member sees the L1 generations of the request's own (team, user, agent, task) scope and the
L2/L3 generations of its (team, agent) profile; a team admin also sees every generation of the teams
they administer through the agents they may use; the gateway key and the system admin see the tenant.
A record the caller may not see answers 404 exactly like an unknown id.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.meta.org import Member
from tests.pipeline.fake_llm import FakeChat
from tests.pipeline.test_llm_flow import ScriptedModel, llm_gateway
from tests.pipeline.test_memory_prompt_access import Tenant, make_tenant

NOT_FOUND = "MEMORY_GENERATION_LOG_NOT_FOUND"
Record = dict[str, Any]


@dataclass
class Logs:
    t: Tenant
    private: str  # bob's private default agent of team A
    every: list[Record]  # every record, newest first, as the gateway key lists them

    def iso(self, who: Member, agent: str | None = None) -> dict[str, str]:
        """The isolation headers `who` talks under (through `agent` when given)."""
        team, default = (self.t.team_b, self.t.cb) if who is self.t.carol else (self.t.team_a, self.t.at)
        return {"x-tdai-team-id": team, "x-tdai-agent-id": agent or default}

    def call(self, who: Member | None, route: str, body: dict[str, Any], agent: str | None = None) -> Any:
        extra = self.iso(who, agent) if who is not None else {}
        headers = self.t.org.headers(who, extra)
        return self.t.org.gw.client.post(f"/v3/memory-generation-log/{route}", json=body, headers=headers).json()

    def listed(self, who: Member | None, body: dict[str, Any] | None = None, agent: str | None = None) -> list[Record]:
        envelope = self.call(who, "list", {"limit": 100, **(body or {})}, agent)
        assert envelope["code"] == 0, envelope
        assert "next_cursor" not in envelope["data"]
        return envelope["data"]["items"]

    def get(self, who: Member | None, body: dict[str, Any], agent: str | None = None) -> Record | str:
        """The record, or the message of a 404."""
        envelope = self.call(who, "get", body, agent)
        if envelope["code"] == 404:
            return envelope["message"]
        assert envelope["code"] == 0, envelope
        return envelope["data"]

    def of(self, team: str, agent: str, user: Member | None = None, layers: str = "l1 l2 l3") -> list[Record]:
        """Every record of (team, agent) in these layers (of `user` only, when given), newest first."""
        return [
            r
            for r in self.every
            if (r["team_id"], r["agent_id"]) == (team, agent)
            and r["layer"] in layers.split()
            and (user is None or r["user_id"] == user.user_id)
        ]

    def l1(self, team: str, agent: str, user: Member) -> Record:
        (record,) = [r for r in self.of(team, agent, user, "l1")]
        return record


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[Logs]:
    with FakeChat() as fake:
        fake.script = ScriptedModel()
        gw = llm_gateway(tmp_path / "data", fake)
        try:
            t = make_tenant(gw)
            private = t.org.default_agent(t.team_a, t.bob)
            talks = [(t.alice, t.team_a, t.at), (t.bob, t.team_a, t.at), (t.carol, t.team_b, t.cb)]
            for who, team, agent in [*talks, (t.bob, t.team_a, private)]:
                content = f"{who.username} drinks green tea every morning"
                body = {"team_id": team, "agent_id": agent, "session_id": "s1"}
                t.org.ok(who, "/v3/conversation/add", {**body, "messages": [{"role": "user", "content": content}]})
            gw.pipeline.drain()
            every = t.org.ok(None, "/v3/memory-generation-log/list", {"limit": 100})["items"]
            # One L1 run per scope, one L2 and one L3 run per (team, agent, user) profile.
            assert sorted(r["layer"] for r in every) == ["l1"] * 4 + ["l2"] * 4 + ["l3"] * 4
            yield Logs(t, private, every)
        finally:
            gw.close()


def test_a_member_lists_only_the_generations_of_its_own_scope_and_profile(logs: Logs) -> None:
    t = logs.t
    bobs = logs.of(t.team_a, t.at, t.bob)
    assert [r["layer"] for r in bobs] == ["l3", "l2", "l1"]
    assert logs.listed(t.bob) == bobs  # not alice's extraction, nor anything of team B or of bob's private agent
    assert logs.listed(t.bob, {"team_id": t.team_a, "agent_id": t.at}) == bobs  # named in the body: the same
    assert logs.listed(t.bob, {"layer": "l1"}) == [logs.l1(t.team_a, t.at, t.bob)]
    assert logs.listed(t.bob, agent=logs.private) == logs.of(t.team_a, logs.private)
    refused = logs.call(t.alice, "list", {}, agent=logs.private)  # not an agent alice may use
    assert (refused["code"], refused["message"]) == (403, "agent_id: not an agent this user may use")
    assert logs.listed(t.carol) == logs.of(t.team_b, t.cb)
    # Paging walks the same narrowed list.
    first = logs.call(t.bob, "list", {"limit": 2})["data"]
    rest = logs.call(t.bob, "list", {"limit": 2, "cursor": first["next_cursor"]})["data"]
    assert first["items"] + rest["items"] == bobs and "next_cursor" not in rest


def test_a_member_cannot_get_another_members_generation_by_log_or_by_memory(logs: Logs) -> None:
    t = logs.t
    alices = logs.l1(t.team_a, t.at, t.alice)
    (memory,) = alices["output_refs"]
    unknown = logs.get(t.bob, {"log_id": "mgl-unknown"})
    assert unknown == NOT_FOUND
    assert logs.get(t.bob, {"log_id": alices["log_id"]}) == unknown
    assert logs.get(t.bob, {"memory_id": memory["record_id"], "layer": "l1"}) == unknown
    assert logs.get(t.carol, {"log_id": alices["log_id"]}) == unknown
    carols_scene = logs.of(t.team_b, t.cb, layers="l2")[0]
    assert logs.get(t.bob, {"log_id": carols_scene["log_id"]}) == unknown
    # The query-string form answers the same.
    query, headers = {"log_id": alices["log_id"]}, t.org.headers(t.bob, logs.iso(t.bob))
    response = t.org.gw.client.get("/v3/memory-generation-log/get", params=query, headers=headers)
    assert (response.status_code, response.json()["message"]) == (404, NOT_FOUND)
    # Their own records, and their profile's, they do get.
    bobs = logs.l1(t.team_a, t.at, t.bob)
    assert logs.get(t.bob, {"log_id": bobs["log_id"]}) == bobs
    assert logs.get(t.alice, {"log_id": alices["log_id"]}) == alices
    scene = logs.of(t.team_a, t.at, t.bob, "l2")[0]
    assert logs.get(t.bob, {"memory_id": scene["output_refs"][0]["record_id"], "layer": "l2"}) == scene
    # A teammate's profile of the same agent is theirs alone.
    for record in logs.of(t.team_a, t.at, t.alice, "l2 l3"):
        assert logs.get(t.bob, {"log_id": record["log_id"]}) == unknown


def test_a_team_admin_sees_the_teams_generations_but_not_another_teams_nor_a_members_private_agent(
    logs: Logs,
) -> None:
    t = logs.t
    team_a = logs.of(t.team_a, t.at)
    assert len(team_a) == 6  # alice's and bob's extraction, and each one's scene and persona
    for admin in (t.erin, t.alice):
        assert logs.listed(admin) == team_a
        assert logs.listed(admin, {"team_id": t.team_a}) == team_a
        bobs = logs.l1(t.team_a, t.at, t.bob)
        assert logs.get(admin, {"log_id": bobs["log_id"]}) == bobs
        (private,) = logs.of(t.team_a, logs.private, layers="l1")
        assert logs.get(admin, {"log_id": private["log_id"]}) == NOT_FOUND
        for record in logs.of(t.team_b, t.cb):
            assert logs.get(admin, {"log_id": record["log_id"]}) == NOT_FOUND
    assert logs.listed(t.carol) == logs.of(t.team_b, t.cb)
    for record in team_a:
        assert logs.get(t.carol, {"log_id": record["log_id"]}) == NOT_FOUND
    # The gateway key and the system admin see the whole tenant, and get any record.
    assert logs.listed(t.root) == logs.every
    for record in logs.every:
        assert logs.get(None, {"log_id": record["log_id"]}) == record
        assert logs.get(t.root, {"log_id": record["log_id"]}) == record
