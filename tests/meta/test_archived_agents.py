"""An archived agent is used by nobody: every data-plane route, the skill routes, context/compose and
knowledge/tools-block refuse a request acting through it (403 naming `agent_id`, nothing read or written), whoever
sends it, the gateway key included. The management plane still reads and lists it, and un-archives it.

The tenant and the route bodies are those of the user-key matrix (test_dataplane_user_keys.py); alice's data sits
behind her team-visible agent AX, which is archived after it was written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Gateway
from tests.meta.org import Member, rows, table_snapshot
from tests.meta.test_dataplane_user_keys import HELLO, ROUTES, SKILL_ROUTES, Tenant, _tenant

ARCHIVED = "agent_id: the agent is archived; it is used again once its status is set back to active"
NOT_USABLE = "agent_id: not an agent this user may use"
OTHER_ROUTES: dict[str, Callable[[Tenant], dict[str, Any]]] = {
    "context/compose": lambda t: {"query": "paris"},
    "knowledge/tools-block": lambda t: {},
}
EVERY_ROUTE = {**ROUTES, **SKILL_ROUTES, **OTHER_ROUTES}


@dataclass
class Archive:
    """The matrix's tenant, plus alice's team-visible agent AX and private agent AXP, both archived."""

    t: Tenant
    ax: str
    axp: str
    memory: str  # alice's L1 memory through AX


def _archive(gw: Gateway) -> Archive:
    t = _tenant(gw)
    ax = t.org.agent(t.alice, t.team_a, "ax", "team")
    axp = t.org.agent(t.alice, t.team_a, "axp", "private")
    scope = {"team_id": t.team_a, "agent_id": ax}
    t.ok("/v3/conversation/add", {**scope, "session_id": "s1", "messages": HELLO}, t.alice.key)
    memory = t.ok("/v3/atomic/add", {**scope, "content": "alice likes paris", "type": "persona"}, t.alice.key)
    t.ok("/v3/core/write", {**scope, "content": "alice's persona"}, t.alice.key)
    for agent in (ax, axp):
        assert t.org.ok(t.alice, "/v3/meta/agent/archive", {"agent_id": agent})["status"] == "inactive"
    return Archive(t, ax, axp, memory["id"])


@pytest.fixture(scope="module")
def shared(live: Gateway) -> Archive:
    """One tenant for the refusal matrix: refusals change nothing, which each test proves."""
    return _archive(live)


# Who names AX: a member, its owner, a system admin (acting as alice) and the gateway key alone.
CALLERS: dict[str, Callable[[Tenant], Member | None]] = {
    "member": lambda t: t.bob,
    "owner": lambda t: t.alice,
    "system_admin": lambda t: t.org.admin,
    "gateway_key": lambda t: None,
}


def _post(a: Archive, route: str, who: Member | None, agent: str) -> Any:
    t = a.t
    acting = {} if who is None else {"user_id": t.alice.user_id if who is t.org.admin else who.user_id}
    body = {"team_id": t.team_a, "agent_id": agent, **acting, **EVERY_ROUTE[route](t)}
    return t.post(f"/v3/{route}", body, who.key if who is not None else None)


def _refused(a: Archive, route: str, who: Member | None, agent: str, message: str) -> None:
    before = table_snapshot(a.t.org.gw), rows(a.t.org, "SELECT * FROM skill_versions")
    response = _post(a, route, who, agent)
    envelope = response.json()
    assert (response.status_code, envelope["code"], envelope["message"]) == (403, 403, message), (route, envelope)
    assert envelope["data"] == {"errors": [{"field": "agent_id", "rule": message.split(": ", 1)[1]}]}
    assert (table_snapshot(a.t.org.gw), rows(a.t.org, "SELECT * FROM skill_versions")) == before, route


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("route", list(EVERY_ROUTE))
def test_an_archived_agent_is_refused_on_every_route(shared: Archive, route: str, caller: str) -> None:
    _refused(shared, route, CALLERS[caller](shared.t), shared.ax, ARCHIVED)


@pytest.mark.parametrize("route", ["conversation/add", "atomic/search", "skill/create", "context/compose"])
def test_an_archived_agent_the_caller_may_not_see_stays_unusable_not_archived(shared: Archive, route: str) -> None:
    """Its status is not told to someone who may not use it anyway."""
    _refused(shared, route, shared.t.bob, shared.axp, NOT_USABLE)


def test_an_id_no_agent_has_still_passes_with_the_gateway_key(shared: Archive) -> None:
    """The gateway key keeps the original's trust in ids the management plane does not know."""
    t = shared.t
    scope = {"team_id": t.team_a, "agent_id": f"agt-unregistered-{uuid.uuid4().hex[:6]}"}
    assert t.ok("/v3/atomic/count", scope, None) == {"total": 0}


def test_the_management_plane_reads_and_un_archives_it(live: Gateway) -> None:
    a = _archive(live)
    t = a.t
    assert t.org.ok(t.alice, "/v3/meta/agent/get", {"agent_id": a.ax})["status"] == "inactive"
    assert t.org.ok(t.bob, "/v3/meta/agent/get", {"agent_id": a.ax})["status"] == "inactive"
    listed = t.org.ok(t.alice, "/v3/meta/agent/list", {"team_id": t.team_a, "status": "inactive"})["items"]
    assert {agent["agent_id"] for agent in listed} == {a.ax, a.axp}
    assert t.org.ok(t.alice, "/v3/meta/agent/update", {"agent_id": a.ax, "status": "active"})["status"] == "active"
    scope = {"team_id": t.team_a, "agent_id": a.ax}
    items = t.ok("/v3/atomic/query", scope, t.alice.key)["items"]
    assert [(i["id"], i["content"]) for i in items] == [(a.memory, "alice likes paris")]
    assert "alice's persona" in t.ok("/v3/core/read", scope, t.alice.key)["content"]
    assert t.ok("/v3/conversation/count", scope, t.bob.key) == {"total": 0}
    assert t.ok("/v3/atomic/count", {**scope, "user_id": t.alice.user_id}, None) == {"total": 1}
    # Archived again, it is refused again at once.
    t.org.ok(t.alice, "/v3/meta/agent/archive", {"agent_id": a.ax})
    _refused(a, "atomic/query", t.alice, a.ax, ARCHIVED)
