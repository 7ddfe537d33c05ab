"""Data-plane authorization with user keys (the original trusts whatever ids a request names;
memhub checks them), over a live server.

A request carrying a user key (`x-tdai-user-key` with the gateway Bearer, or the user key as the
Bearer) must name a team its user is an active member of, an agent of that team the user may see
(owner; members for team/agent/task visibility; admins for restricted; the owner only for private),
its own user (a missing user_id defaults to it; a system admin may act as another user) and, if
any, a task of that team. Otherwise: 403 naming the field, and nothing is read or written. A bad
key is 401 `unauthorized: invalid_user_key`. The gateway key alone keeps the original behaviour,
unless `data_plane_auth="user_key"` (401 `unauthorized: missing_user_key`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.meta.org import Member, Org, lapse_key, rows, table_snapshot

HELLO = [{"role": "user", "content": "hello from the owner about paris"}]


@dataclass
class Tenant:
    """alice owns team A (agents: team-visible AT, private AP, restricted AR); bob is a member, erin an
    admin; carol owns team B (agent CB, task TB); dave is in no team. Alice's data sits behind AT and AP."""

    org: Org
    alice: Member
    bob: Member
    erin: Member
    carol: Member
    dave: Member
    team_a: str
    team_b: str
    at: str
    ap: str
    ar: str
    cb: str
    task_a: str
    task_b: str
    atomic_at: str = ""  # alice's L1 memory through AT
    atomic_ap: str = ""
    revoked_key: str = ""
    expired_key: str = ""
    foreign_key: str = ""  # a valid key of another service id
    deleted_key: str = ""  # the key of a deleted user (once a member of team A)
    erin_default: str = ""  # erin's private default agent in team A
    bob_default: str = ""

    def headers(self, key: str | None, *, bearer: str | None = None, extra: dict[str, str] | None = None) -> dict:
        h = {"authorization": f"Bearer {bearer or self.org.gw.key}", "x-tdai-service-id": self.org.service}
        if key is not None:
            h["x-tdai-user-key"] = key
        h.update(extra or {})
        return h

    def post(self, path: str, body: dict[str, Any], key: str | None, **kwargs: Any) -> Any:
        return self.org.gw.client.post(path, json=body, headers=self.headers(key, **kwargs))

    def ok(self, path: str, body: dict[str, Any], key: str | None, **kwargs: Any) -> Any:
        response = self.post(path, body, key, **kwargs)
        envelope = response.json()
        assert response.status_code == 200 and envelope["code"] == 0, (path, envelope)
        return envelope.get("data")


def _tenant(gw: Gateway) -> Tenant:
    org = Org(gw, service=f"svc-{uuid.uuid4().hex[:10]}")
    alice, bob, erin, carol, dave = org.users("alice", "bob", "erin", "carol", "dave")
    team_a = org.staffed_team(alice, "A", (bob, "member"), (erin, "admin"))
    team_b = org.team(carol, "B")
    at = org.agent(alice, team_a, "at", "team")
    ap = org.agent(alice, team_a, "ap", "private")
    ar = org.agent(alice, team_a, "ar", "restricted")
    cb = org.agent(carol, team_b, "cb", "team")
    task_a = org.ok(alice, "/v3/meta/task/create", {"team_id": team_a, "creator_user_id": alice.user_id, "title": "a"})
    task_b = org.ok(carol, "/v3/meta/task/create", {"team_id": team_b, "creator_user_id": carol.user_id, "title": "b"})
    t = Tenant(org, alice, bob, erin, carol, dave, team_a, team_b, at, ap, ar, cb, task_a["task_id"], task_b["task_id"])
    for agent in (at, ap):
        scope = {"team_id": team_a, "agent_id": agent}
        t.ok("/v3/conversation/add", {**scope, "session_id": "s1", "messages": HELLO}, alice.key)
        memory = t.ok("/v3/atomic/add", {**scope, "content": "alice likes paris", "type": "persona"}, alice.key)
        if agent == at:
            t.atomic_at = memory["id"]
        else:
            t.atomic_ap = memory["id"]
        t.ok("/v3/scenario/create", {**scope, "path": "notes/a.md", "content": "alice's scene"}, alice.key)
        t.ok("/v3/core/write", {**scope, "content": "alice's persona"}, alice.key)
    second = org.ok(bob, "/v3/meta/user-key/create", {"name": "to revoke"})
    org.ok(bob, "/v3/meta/user-key/revoke", {"key_id": second["key_id"]})
    t.revoked_key = second["key_value"]
    lapsing = org.ok(bob, "/v3/meta/user-key/create", {"expires_at": "2999-01-01T00:00:00Z"})
    lapse_key(org, lapsing["key_id"])
    t.expired_key = lapsing["key_value"]
    elsewhere = Org(gw, service=f"svc-{uuid.uuid4().hex[:10]}")
    t.foreign_key = elsewhere.user("bob").key
    zed = org.user("zed")
    org.join(team_a, alice, zed)
    org.ok(org.admin, "/v3/meta/user/delete", {"user_ids": [zed.user_id]})
    t.deleted_key = zed.key
    t.erin_default = org.default_agent(team_a, erin)
    t.bob_default = org.default_agent(team_a, bob)
    return t


@pytest.fixture(scope="module")
def shared(live: Gateway) -> Tenant:
    """One tenant for the refusal matrix: refusals change nothing, which each test proves."""
    return _tenant(live)


@pytest.fixture
def fresh(live: Gateway) -> Tenant:
    """A tenant of its own, for tests that write."""
    return _tenant(live)


# -- the routes -----------------------------------------------------------------------------------
ROUTES: dict[str, Callable[[Tenant], dict[str, Any]]] = {
    "conversation/add": lambda t: {"session_id": "s1", "messages": [{"role": "user", "content": "intruder"}]},
    "conversation/query": lambda t: {},
    "conversation/search": lambda t: {"query": "paris"},
    "conversation/delete": lambda t: {"session_ids": ["s1"]},
    "conversation/count": lambda t: {},
    "atomic/add": lambda t: {"content": "planted", "type": "instruction"},
    "atomic/query": lambda t: {},
    "atomic/search": lambda t: {"query": "paris"},
    "atomic/count": lambda t: {},
    "atomic/update": lambda t: {"id": t.atomic_at, "content": "overwritten"},
    "atomic/delete": lambda t: {"ids": [t.atomic_at, t.atomic_ap]},
    "scenario/ls": lambda t: {},
    "scenario/count": lambda t: {},
    "scenario/read": lambda t: {"path": "notes/a.md"},
    "scenario/write": lambda t: {"path": "notes/a.md", "content": "overwritten"},
    "scenario/create": lambda t: {"path": "notes/b.md", "content": "planted"},
    "scenario/rm": lambda t: {"path": "notes/a.md"},
    "core/read": lambda t: {},
    "core/write": lambda t: {"content": "overwritten"},
    "core/count": lambda t: {},
    "recall": lambda t: {"query": "paris"},
}


@dataclass(frozen=True)
class Case:
    """Who calls with which ids, and the refusal expected."""

    key: Callable[[Tenant], str]
    ids: Callable[[Tenant], dict[str, str]]
    status: int
    field: str | None  # the isolation field named by a 403
    message: Callable[[Tenant], str]
    header_ids: bool = False  # send the ids as x-tdai-*-id headers instead of in the body
    bearer_only: bool = False  # the user key as the Bearer, no gateway key


NOT_MEMBER = "team_id: not a team this user is an active member of"
NOT_USABLE = "agent_id: not an agent this user may use"
INVALID_KEY = "unauthorized: invalid_user_key"


def _outsider(who: str, **flags: bool) -> Case:
    """Tenant member `who`, not in team A, names team A and its team-visible agent AT."""
    return Case(lambda t: getattr(t, who).key, _at_a, 403, "team_id", lambda t: NOT_MEMBER, **flags)


def _unusable(who: str, agent: str) -> Case:
    """Tenant member `who` of team A names the team's agent `agent` (a Tenant field) they may not use."""

    def ids(t: Tenant) -> dict[str, str]:
        return {"team_id": t.team_a, "agent_id": getattr(t, agent)}

    return Case(lambda t: getattr(t, who).key, ids, 403, "agent_id", lambda t: NOT_USABLE)


def _bad_key(key: str, **flags: bool) -> Case:
    """The Tenant's unusable key `key` names team A and AT."""
    return Case(lambda t: getattr(t, key), _at_a, 401, None, lambda t: INVALID_KEY, **flags)


def _at_a(t: Tenant) -> dict[str, str]:
    return {"team_id": t.team_a, "agent_id": t.at}


CASES: dict[str, Case] = {
    "outsider": _outsider("dave"),
    "outsider_bearer_only": _outsider("dave", bearer_only=True),
    "member_of_another_team": _outsider("carol"),
    "another_team_by_headers": _outsider("carol", header_ids=True),
    "own_team_foreign_agent": Case(
        lambda t: t.carol.key,
        lambda t: {"team_id": t.team_b, "agent_id": t.at},
        403,
        "agent_id",
        lambda t: f"agent_id: not an agent of team {t.team_b}",
    ),
    "no_team": Case(lambda t: t.bob.key, lambda t: {"agent_id": t.at}, 403, "team_id", lambda t: NOT_MEMBER),
    "unknown_agent": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a, "agent_id": "agt-nope"},
        403,
        "agent_id",
        lambda t: f"agent_id: not an agent of team {t.team_a}",
    ),
    "no_agent": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a},
        403,
        "agent_id",
        lambda t: f"agent_id: not an agent of team {t.team_a}",
    ),
    "another_members_private_agent": _unusable("bob", "ap"),
    "another_members_default_agent": _unusable("bob", "erin_default"),
    "admins_private_agent": _unusable("erin", "ap"),
    "restricted_agent_as_member": _unusable("bob", "ar"),
    "someone_elses_user_id": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a, "agent_id": t.at, "user_id": t.alice.user_id},
        403,
        "user_id",
        lambda t: "user_id: a user key acts only as its own user",
    ),
    "someone_elses_user_id_by_header": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a, "agent_id": t.at, "user_id": t.alice.user_id},
        403,
        "user_id",
        lambda t: "user_id: a user key acts only as its own user",
        header_ids=True,
    ),
    "task_of_another_team": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a, "agent_id": t.at, "task_id": t.task_b},
        403,
        "task_id",
        lambda t: f"task_id: not a task of team {t.team_a}",
    ),
    "unknown_task": Case(
        lambda t: t.bob.key,
        lambda t: {"team_id": t.team_a, "agent_id": t.at, "task_id": "task-nope"},
        403,
        "task_id",
        lambda t: f"task_id: not a task of team {t.team_a}",
    ),
    "revoked_key": _bad_key("revoked_key"),
    "expired_key": _bad_key("expired_key"),
    "key_of_another_service": _bad_key("foreign_key"),
    "deleted_users_key": _bad_key("deleted_key"),
    "expired_key_as_bearer": _bad_key("expired_key", bearer_only=True),
}


def _send(t: Tenant, route: str, case: Case, routes: dict[str, Callable[[Tenant], dict[str, Any]]] = ROUTES) -> Any:
    ids = case.ids(t)
    body = routes[route](t)
    extra: dict[str, str] = {}
    if case.header_ids:
        extra = {f"x-tdai-{name.replace('_', '-')}": value for name, value in ids.items()}
    else:
        body = {**ids, **body}
    key = case.key(t)
    if case.bearer_only:
        headers = {"authorization": f"Bearer {key}", "x-tdai-service-id": t.org.service}
        return t.org.gw.client.post(f"/v3/{route}", json=body, headers=headers)
    return t.post(f"/v3/{route}", body, key, extra=extra)


@pytest.mark.parametrize("case_name", list(CASES))
@pytest.mark.parametrize("route", list(ROUTES))
def test_refused_and_nothing_changes(shared: Tenant, route: str, case_name: str) -> None:
    case = CASES[case_name]
    before = table_snapshot(shared.org.gw)
    response = _send(shared, route, case)
    envelope = response.json()
    assert response.status_code == case.status, (route, case_name, envelope)
    assert envelope["code"] == case.status
    assert envelope["message"] == case.message(shared), (route, case_name, envelope)
    assert envelope["request_id"].startswith("req-")
    if case.field is not None:
        assert envelope["data"] == {"errors": [{"field": case.field, "rule": envelope["message"].split(": ", 1)[1]}]}
    else:
        assert "data" not in envelope or envelope["data"] in (None, {})
    assert table_snapshot(shared.org.gw) == before, (route, case_name, "stored state changed")


# The skill routes read their ids from the body only, and refuse an agent_id without a team_id as a body
# error (40001): the cases about header ids and a missing team or agent are not theirs.
SKILL = "skl-000000000000"
SKILL_ROUTES: dict[str, Callable[[Tenant], dict[str, Any]]] = {
    "skill/create": lambda t: {"name": "planted", "content": "---\nname: planted\ndescription: d\n---\nx"},
    "skill/update": lambda t: {"skill_id": SKILL, "expected_version": 1, "content": "x"},
    "skill/patch": lambda t: {"skill_id": SKILL, "expected_version": 1, "old_string": "a", "new_string": "b"},
    "skill/delete": lambda t: {"skill_id": SKILL, "expected_version": 1},
    "skill/publish": lambda t: {"skill_id": SKILL, "expected_version": 1},
    "skill/get": lambda t: {"skill_id": SKILL},
    "skill/list": lambda t: {},
    "skill/versions": lambda t: {"skill_id": SKILL},
    "skill/files/write": lambda t: {
        "skill_id": SKILL,
        "expected_version": 1,
        "files": [{"path": "a", "content": "", "encoding": "utf-8"}],
    },
    "skill/files/remove": lambda t: {"skill_id": SKILL, "expected_version": 1, "paths": ["a"]},
    "skill/files/read": lambda t: {"skill_id": SKILL, "path": "a"},
    "skill/export": lambda t: {"skill_id": SKILL},
}
SKILL_CASES = [
    name
    for name, case in CASES.items()
    if not case.header_ids and name not in {"no_team", "no_agent", "someone_elses_user_id_by_header"}
]


@pytest.mark.parametrize("case_name", SKILL_CASES)
@pytest.mark.parametrize("route", list(SKILL_ROUTES))
def test_skill_routes_refused_and_nothing_changes(shared: Tenant, route: str, case_name: str) -> None:
    case = CASES[case_name]
    before = table_snapshot(shared.org.gw), rows(shared.org, "SELECT * FROM skill_versions")
    response = _send(shared, route, case, SKILL_ROUTES)
    envelope = response.json()
    assert response.status_code == case.status, (route, case_name, envelope)
    assert (envelope["code"], envelope["message"]) == (case.status, case.message(shared)), (route, case_name)
    assert (table_snapshot(shared.org.gw), rows(shared.org, "SELECT * FROM skill_versions")) == before


def test_the_owners_data_is_untouched(shared: Tenant) -> None:
    """After the refusal matrix: alice still finds all her data through both agents."""
    t = shared
    for agent, memory_id in ((t.at, t.atomic_at), (t.ap, t.atomic_ap)):
        scope = {"team_id": t.team_a, "agent_id": agent}
        messages = t.ok("/v3/conversation/query", scope, t.alice.key)["messages"]
        assert [m["content"] for m in messages] == [HELLO[0]["content"]]
        items = t.ok("/v3/atomic/query", scope, t.alice.key)["items"]
        assert [(i["id"], i["content"]) for i in items] == [(memory_id, "alice likes paris")]
        assert t.ok("/v3/scenario/read", {**scope, "path": "notes/a.md"}, t.alice.key)["content"].endswith(
            "alice's scene\n"
        )
        assert [e["path"] for e in t.ok("/v3/scenario/ls", scope, t.alice.key)["entries"]] == ["notes/", "notes/a.md"]
        assert "alice's persona" in t.ok("/v3/core/read", scope, t.alice.key)["content"]
        recalled = t.ok("/v3/recall", {**scope, "query": "paris"}, t.alice.key)
        assert [m["content"] for m in recalled["memories"]] == ["alice likes paris", HELLO[0]["content"]]
        assert recalled["persona"] == "alice's persona"
        assert recalled["scenes"] == [{"path": "notes/a.md", "summary": None}]


# -- who may pass -----------------------------------------------------------------------------------
def test_member_through_a_team_visible_agent(fresh: Tenant) -> None:
    t = fresh
    scope = {"team_id": t.team_a, "agent_id": t.at}
    added = t.ok("/v3/conversation/add", {**scope, "messages": [{"role": "user", "content": "bob here"}]}, t.bob.key)
    assert added["total_count"] == 1
    # Without user_id the key's user is meant: bob's own L0/L1, not alice's.
    mine = t.ok("/v3/conversation/query", scope, t.bob.key)["messages"]
    assert [(m["content"], m["user_id"]) for m in mine] == [("bob here", t.bob.user_id)]
    assert t.ok("/v3/conversation/count", {**scope, "user_id": t.bob.user_id}, t.bob.key) == {"total": 1}
    memory = t.ok("/v3/atomic/add", {**scope, "content": "bob likes rome", "type": "persona"}, t.bob.key)
    assert memory["user_id"] == t.bob.user_id
    assert [i["id"] for i in t.ok("/v3/atomic/query", scope, t.bob.key)["items"]] == [memory["id"]]
    # L2/L3 are per user too: through the same team agent bob reads and writes his own profile, never alice's.
    assert t.ok("/v3/scenario/read", {**scope, "path": "notes/a.md"}, t.bob.key)["content"] is None
    assert t.ok("/v3/scenario/ls", scope, t.bob.key) == {"entries": [], "total": 0}
    assert t.ok("/v3/core/read", scope, t.bob.key)["content"] is None
    t.ok("/v3/scenario/create", {**scope, "path": "notes/a.md", "content": "bob's scene"}, t.bob.key)
    t.ok("/v3/core/write", {**scope, "content": "bob's persona"}, t.bob.key)
    assert t.ok("/v3/scenario/read", {**scope, "path": "notes/a.md"}, t.bob.key)["content"].endswith("bob's scene\n")
    assert t.ok("/v3/scenario/read", {**scope, "path": "notes/a.md"}, t.alice.key)["content"].endswith(
        "alice's scene\n"
    )
    assert "alice's persona" in t.ok("/v3/core/read", scope, t.alice.key)["content"]
    # Recall reads what the layers let bob read: his own memory, turn, persona and scene only.
    recalled = t.ok("/v3/recall", {**scope, "query": "paris rome bob"}, t.bob.key)
    assert sorted(m["content"] for m in recalled["memories"]) == ["bob here", "bob likes rome"]
    assert recalled["persona"] == "bob's persona"
    # A task of the team is fine; so is the admin through the restricted agent.
    t.ok("/v3/conversation/count", {**scope, "task_id": t.task_a}, t.bob.key)
    assert t.ok("/v3/core/count", {"team_id": t.team_a, "agent_id": t.ar}, t.erin.key) == {"total": 0}
    t.ok("/v3/core/count", {"team_id": t.team_a, "agent_id": t.ar}, t.alice.key)
    # Bob's own private default agent is his to use.
    own = {"team_id": t.team_a, "agent_id": t.bob_default}
    t.ok("/v3/core/write", {**own, "content": "bob's persona"}, t.bob.key)
    assert "bob's persona" in t.ok("/v3/core/read", own, t.bob.key)["content"]
    # Bob's writes did not touch alice's L0/L1.
    alice = t.ok("/v3/conversation/query", scope, t.alice.key)["messages"]
    assert [m["content"] for m in alice] == [HELLO[0]["content"]]


def test_owner_through_a_private_agent(fresh: Tenant) -> None:
    t = fresh
    scope = {"team_id": t.team_a, "agent_id": t.ap}
    data = t.ok("/v3/atomic/update", {**scope, "id": t.atomic_ap, "content": "alice likes lyon"}, t.alice.key)
    assert data["version"] == "v1"
    assert t.ok("/v3/scenario/write", {**scope, "path": "notes/a.md", "content": "new"}, t.alice.key)["version"] >= 1
    assert t.ok("/v3/conversation/delete", {**scope, "session_ids": ["s1"]}, t.alice.key) == {"deleted_count": 1}
    assert t.ok("/v3/atomic/delete", {**scope, "ids": [t.atomic_ap]}, t.alice.key) == {"deleted_count": 1}
    # The same data through the team-visible agent is still there.
    assert t.ok("/v3/atomic/count", {"team_id": t.team_a, "agent_id": t.at}, t.alice.key) == {"total": 1}


def test_system_admin_may_act_as_another_user(fresh: Tenant) -> None:
    t = fresh
    admin = t.org.admin
    t.org.join(t.team_a, t.alice, admin)  # a member, so that only the user rule is in question
    scope = {"team_id": t.team_a, "agent_id": t.at}
    t.ok("/v3/conversation/add", {**scope, "messages": [{"role": "user", "content": "bob here"}]}, t.bob.key)
    seen = t.ok("/v3/conversation/query", {**scope, "user_id": t.bob.user_id}, admin.key)["messages"]
    assert [m["content"] for m in seen] == ["bob here"]
    added = t.ok(
        "/v3/conversation/add",
        {**scope, "user_id": t.bob.user_id, "messages": [{"role": "assistant", "content": "on behalf"}]},
        admin.key,
    )
    assert added["total_count"] == 1
    assert t.ok("/v3/conversation/count", scope, t.bob.key) == {"total": 2}
    # Without a user_id the admin acts as themself.
    assert t.ok("/v3/conversation/count", scope, admin.key) == {"total": 0}


def test_user_key_as_the_bearer(fresh: Tenant) -> None:
    t = fresh
    scope = {"team_id": t.team_a, "agent_id": t.at}
    bearer = {"authorization": f"Bearer {t.bob.key}", "x-tdai-service-id": t.org.service}
    response = t.org.gw.client.post(
        "/v3/atomic/add", json={**scope, "content": "via bearer", "type": "episodic"}, headers=bearer
    )
    assert response.status_code == 200 and response.json()["data"]["user_id"] == t.bob.user_id
    # The Bearer user key and a different x-tdai-user-key disagree: refused.
    before = table_snapshot(t.org.gw)
    response = t.org.gw.client.post("/v3/atomic/count", json=scope, headers={**bearer, "x-tdai-user-key": t.alice.key})
    assert response.status_code == 401 and response.json()["message"] == INVALID_KEY
    assert table_snapshot(t.org.gw) == before


def test_gateway_key_alone_keeps_the_original_behaviour(fresh: Tenant) -> None:
    t = fresh
    scope = {"team_id": t.team_a, "agent_id": t.ap, "user_id": t.alice.user_id}
    assert t.ok("/v3/atomic/count", scope, None) == {"total": 1}  # any ids, taken at face value
    assert t.ok("/v3/conversation/count", {"team_id": "any-team", "agent_id": "any", "user_id": "any"}, None) == {
        "total": 0
    }


def test_user_key_mode_requires_a_user_key(make_org: Callable[..., Org]) -> None:
    org = make_org("strict", data_plane_auth="user_key")
    gw = org.gw
    scope = {"team_id": org.team_id, "agent_id": org.admin_agent_id}
    before = table_snapshot(gw)
    for route, body in (("conversation/add", {"messages": HELLO}), ("atomic/query", {}), ("core/read", {})):
        response = gw.client.post(f"/v3/{route}", json={**scope, **body}, headers=org.headers(None))
        assert response.status_code == 401, response.text
        assert response.json() == {**response.json(), "code": 401, "message": "unauthorized: missing_user_key"}
        response = gw.client.post(f"/v2/{route}", json={**scope, **body}, headers=org.headers(None))
        assert response.status_code == 401 and response.json()["message"] == "unauthorized: missing_user_key"
    assert table_snapshot(gw) == before
    response = gw.client.post("/v3/conversation/add", json={**scope, "messages": HELLO}, headers=org.headers(org.admin))
    assert response.status_code == 200, response.text
    response = gw.client.post("/v3/conversation/count", json=scope, headers=org.headers(org.admin))
    assert response.json()["data"] == {"total": 1}


def test_v2_mirror_is_guarded_too(shared: Tenant) -> None:
    t = shared
    before = table_snapshot(t.org.gw)
    for route in ("conversation/query", "atomic/query", "core/read"):
        response = t.post(f"/v2/{route}", {"team_id": t.team_a, "agent_id": t.at}, t.dave.key)
        assert response.status_code == 403 and response.json()["message"] == NOT_MEMBER
    assert table_snapshot(t.org.gw) == before


def test_removed_member_loses_access_at_once(fresh: Tenant) -> None:
    t = fresh
    scope = {"team_id": t.team_a, "agent_id": t.at}
    t.ok("/v3/core/read", scope, t.bob.key)
    t.org.ok(t.alice, "/v3/meta/team-member/remove", {"team_id": t.team_a, "user_id": t.bob.user_id})
    response = t.post("/v3/core/read", scope, t.bob.key)
    assert response.status_code == 403 and response.json()["message"] == NOT_MEMBER
    # An agent turned private is no longer usable by members.
    t.org.ok(t.alice, "/v3/meta/agent/update", {"agent_id": t.at, "visibility": "private"})
    response = t.post("/v3/core/read", scope, t.erin.key)
    assert response.status_code == 403 and response.json()["message"] == NOT_USABLE


# -- the chat_memory asset -----------------------------------------------------------------------------
def _assets(gw: Gateway) -> list[str]:
    return table_snapshot(gw)["meta_assets"] + table_snapshot(gw)["meta_agent_fixed_assets"]


def test_conversation_add_ensures_the_chat_memory_asset_once(fresh: Tenant) -> None:
    t = fresh
    asset_id = f"chat_memory-{t.team_a}-{t.at}"
    # agent/create made it; take it away to see conversation/add bring it back.
    t.org.ok(t.alice, "/v3/meta/asset/delete", {"asset_ids": [asset_id]})
    got = t.org.call(t.alice, "/v3/meta/asset/get", {"asset_id": asset_id}).json()
    assert got["code"] == 404
    scope = {"team_id": t.team_a, "agent_id": t.at}
    t.ok("/v3/conversation/add", {**scope, "messages": [{"role": "user", "content": "hi"}]}, t.bob.key)
    asset = t.org.ok(t.alice, "/v3/meta/asset/get", {"asset_id": asset_id})
    assert {k: asset[k] for k in ("team_id", "asset_type", "owner_user_id", "visibility", "status", "source_type")} == {
        "team_id": t.team_a,
        "asset_type": "chat_memory",
        "owner_user_id": t.alice.user_id,  # the agent's owner, not the writer
        "visibility": "private",
        "status": "active",
        "source_type": "auto",
    }
    assert asset["name"] == "Memory of at"
    bindings = t.org.ok(t.alice, "/v3/meta/agent-fixed-asset/list", {"agent_id": t.at})["items"]
    assert [(b["asset_id"], b["asset_type"]) for b in bindings] == [(asset_id, "chat_memory")]
    # Private to its owner: bob, who wrote through the agent, cannot read the asset.
    assert t.org.call(t.bob, "/v3/meta/asset/get", {"asset_id": asset_id}).json()["code"] == 404
    once = _assets(t.org.gw)
    for key in (t.bob.key, t.alice.key, None):
        t.ok("/v3/conversation/add", {**scope, "messages": [{"role": "user", "content": "again"}]}, key)
    assert _assets(t.org.gw) == once  # idempotent


def test_no_chat_memory_asset_for_unregistered_agents(fresh: Tenant) -> None:
    t = fresh
    before = _assets(t.org.gw)
    for scope in (
        {"team_id": t.team_a, "agent_id": "agt-ghost", "user_id": "u"},  # not registered
        {"team_id": t.team_b, "agent_id": t.at, "user_id": "u"},  # registered in another team
        {"team_id": "unknown-team", "agent_id": t.cb, "user_id": "u"},
        {"agent_id": t.at, "user_id": "u"},  # no team
    ):
        t.ok("/v3/conversation/add", {**scope, "messages": [{"role": "user", "content": "x"}]}, None)
    assert _assets(t.org.gw) == before
    con = t.org.gw.store._reader()
    assert con.execute("SELECT COUNT(*) FROM meta_assets WHERE asset_id LIKE '%agt-ghost%'").fetchone()[0] == 0
