"""Fixtures of the proxy's session-side tests: a real gateway (tests/conftest.py build_gateway) with users, teams
and agents made through its management API."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memhub.runtime import Hub
from tests.conftest import Gateway, build_gateway
from tests.meta.org import Member, Org


@dataclass
class Crew:
    """Team A (alice owns it and its team agent `at`; bob is a member with his own default agent); team B (carol
    owns it and agent `cb`; she is also a member of A); dave belongs to no team."""

    gw: Gateway
    org: Org
    alice: Member
    bob: Member
    carol: Member
    dave: Member
    team_a: str
    team_b: str
    at: str
    cb: str
    bob_default: str
    carol_default: str
    task_a: str

    @property
    def hub(self) -> Hub:
        return self.gw.client.app.state.hub  # type: ignore[attr-defined,no-any-return]

    @property
    def service(self) -> str:
        return self.org.service


def make_crew(gw: Gateway) -> Crew:
    """The crew over a fresh gateway's instance."""
    org = Org(gw)
    alice, bob, carol, dave = org.users("alice", "bob", "carol", "dave")
    team_a = org.staffed_team(alice, "A", (bob, "member"), (carol, "member"))
    team_b = org.team(carol, "B")
    at = org.agent(alice, team_a, "at", "team")
    cb = org.agent(carol, team_b, "cb", "team")
    task = org.ok(alice, "/v3/meta/task/create", {"team_id": team_a, "creator_user_id": alice.user_id, "title": "t"})
    return Crew(
        gw,
        org,
        alice,
        bob,
        carol,
        dave,
        team_a,
        team_b,
        at,
        cb,
        org.default_agent(team_a, bob),
        org.default_agent(team_a, carol),
        task["task_id"],
    )


@pytest.fixture
def gw(tmp_path: Path) -> Iterator[Gateway]:
    """A gateway of its own (in-process HTTP stack over a real SQLite file); its pipeline never runs by itself."""
    gateway = build_gateway(tmp_path / "data")
    yield gateway
    gateway.close()


@pytest.fixture
def crew(gw: Gateway) -> Crew:
    """The crew of users, teams and agents on the test's gateway."""
    return make_crew(gw)
