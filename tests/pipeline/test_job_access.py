"""pipeline/jobs, status and replay with user keys: each caller sees and replays only its own scopes' jobs.

alice and bob talk to agent AT of team A, carol to agent CB of team B; every L1 job of the second
round is dead-lettered. A user key sees the L1 jobs of its own (team, user, agent, task) scope and the
L2/L3 jobs of its (team, agent) profile; the gateway key and the system admin see the whole tenant.
A job outside the caller's scopes is not found, and a replay naming one changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from memhub.pipeline.stages import Stages
from tests.conftest import build_gateway
from tests.meta.org import Member, Org
from tests.pipeline.test_flow import FAST, Failing

ALL_STATES = ["pending", "running", "done", "dead"]


@dataclass
class Jobs:
    org: Org
    alice: Member
    bob: Member
    carol: Member
    team_a: str
    team_b: str
    at: str
    cb: str

    def scope(self, who: Member) -> dict[str, str]:
        """The isolation `who` talks under."""
        return (
            {"team_id": self.team_b, "agent_id": self.cb}
            if who is self.carol
            else {"team_id": self.team_a, "agent_id": self.at}
        )

    def say(self, who: Member, text: str) -> None:
        body = {**self.scope(who), "session_id": "s1", "messages": [{"role": "user", "content": text}]}
        self.org.ok(who, "/v3/conversation/add", body)

    def post(self, who: Member | None, route: str, body: dict[str, Any]) -> Any:
        ids = self.scope(who) if who is not None and who is not self.org.admin else {}
        return self.org.call(who, f"/v3/pipeline/{route}", {**ids, **body})

    def ok(self, who: Member | None, route: str, body: dict[str, Any]) -> Any:
        envelope = self.post(who, route, body).json()
        assert envelope["code"] == 0, envelope
        return envelope["data"]

    def jobs(self, who: Member | None, states: list[str] = ALL_STATES) -> list[dict[str, Any]]:
        return self.ok(who, "jobs", {"states": states, "limit": 500})["items"]

    def owns(self, who: Member, job: dict[str, Any]) -> bool:
        """Whether the job belongs to `who`'s L0/L1 scope (L1) or (team, agent, user) profile (L2/L3)."""
        scope, mine = job["scope"], self.scope(who)
        same_agent = (scope["team_id"], scope["agent_id"]) == (mine["team_id"], mine["agent_id"])
        return same_agent and scope["user_id"] == who.user_id


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Jobs]:
    settings = {**FAST, "pipeline_max_attempts": 1, "pipeline_every_n_rounds": 1, "pipeline_warmup": False}
    gw = build_gateway(tmp_path / "data", **settings)
    gw.pipeline.config = gw.pipeline.runner.config = replace(gw.pipeline.config, backoff_ms=0)
    org = Org(gw)
    alice, bob, carol = org.users("alice", "bob", "carol")
    team_a = org.staffed_team(alice, "A", (bob, "member"))
    team_b = org.team(carol, "B")
    jobs = Jobs(org, alice, bob, carol, team_a, team_b, org.agent(alice, team_a, "at"), org.agent(carol, team_b, "cb"))
    for who in (alice, bob, carol):
        jobs.say(who, "I prefer green tea over coffee.")
    gw.pipeline.drain()  # L1, L2 and L3 of each user's profile, done
    stages = gw.pipeline.runner.stages
    failing = Failing(stages.extractor, times=1_000)
    gw.pipeline.runner.stages = Stages(failing, stages.deduplicator, stages.scenes, stages.persona, stages.generator)
    for who in (alice, bob, carol):
        jobs.say(who, "I live in Berlin with my cat.")
    gw.pipeline.drain()  # each second L1 job fails once and is dead-lettered
    yield jobs
    gw.close()


def test_a_user_key_lists_only_the_jobs_of_its_own_scopes(t: Jobs) -> None:
    every = t.jobs(None)
    assert {j["kind"] for j in every} == {"l1", "l2", "l3"} and sum(j["state"] == "dead" for j in every) == 3
    for who in (t.alice, t.bob, t.carol):
        mine = t.jobs(who)
        assert mine == [j for j in every if t.owns(who, j)]
        assert {j["kind"] for j in mine} == {"l1", "l2", "l3"} and len(mine) < len(every)
    assert t.jobs(t.org.admin) == every  # the system admin sees the whole tenant
    alice_dead = t.jobs(t.alice, ["dead"])
    assert len(alice_dead) == 1 and alice_dead[0]["scope"]["user_id"] == t.alice.user_id


def test_status_counts_only_the_callers_jobs_and_sessions(t: Jobs) -> None:
    everything = t.ok(None, "status", {})
    assert (everything["l1"]["dead"], everything["waiting_sessions"]) == (3, 3)
    assert "the model is down" in everything["worker"]["last_error"]
    mine = t.ok(t.alice, "status", {})
    assert (mine["l1"]["dead"], mine["waiting_sessions"]) == (1, 1)
    assert mine["worker"]["last_error"] is None  # the worker's error may be any tenant's
    assert t.ok(t.org.admin, "status", {})["l1"]["dead"] == 3


def test_replaying_a_job_the_caller_may_not_see_is_not_found_and_changes_nothing(t: Jobs) -> None:
    dead = {j["scope"]["user_id"]: j["job_id"] for j in t.jobs(None, ["dead"])}
    alices, bobs = dead[t.alice.user_id], dead[t.bob.user_id]
    refused = t.post(t.carol, "replay", {"job_ids": [alices]}).json()
    assert (refused["code"], refused["message"]) == (404, f"job_ids[0]: job not found: {alices}")
    refused = t.post(t.alice, "replay", {"job_ids": [alices, bobs]}).json()
    assert (refused["code"], refused["message"], refused["data"]) == (
        404,
        f"job_ids[1]: job not found: {bobs}",
        {"missing_ids": [bobs]},
    )
    assert sorted(j["job_id"] for j in t.jobs(None, ["dead"])) == sorted(dead.values())  # still all dead
    assert t.ok(t.alice, "replay", {"job_ids": [alices]}) == {"replayed": 1}
    assert sorted(j["job_id"] for j in t.jobs(None, ["dead"])) == sorted([bobs, dead[t.carol.user_id]])
    unknown = t.post(None, "replay", {"job_ids": [10**9]}).json()
    assert (unknown["code"], unknown["message"]) == (404, f"job_ids[0]: job not found: {10**9}")


@pytest.mark.parametrize("job_id", [2**63, 2**70, -1, 0])
def test_replay_refuses_ids_outside_sqlites_integer_range(t: Jobs, job_id: int) -> None:
    response = t.post(None, "replay", {"job_ids": [1, job_id]})
    envelope = response.json()
    rule = "must be >= 1" if job_id < 1 else "must be <= 9223372036854775807"
    assert (response.status_code, envelope["message"]) == (400, f"job_ids[1]: {rule}")
    assert len(t.jobs(None, ["dead"])) == 3
