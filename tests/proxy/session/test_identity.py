"""The proxy's identity: the user key checked in process, team/agent/task from headers or the user's memberships,
each authorized as the data plane authorizes the key, and the session from the client's headers."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from memhub.proxy.identity import AUTH_CACHE_SECONDS, KeyIdentityResolver
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.ports import ProxyDenied
from memhub.timeutil import ms_to_iso, parse_iso_ms
from tests.meta.org import lapse_key
from tests.proxy.session.conftest import Crew

FALLBACK = "derived-session"


def resolve(crew: Crew, headers: dict[str, str], *, space_id: str | None = None) -> ProxyIdentity:
    resolver = KeyIdentityResolver(crew.hub.meta)
    return asyncio.run(
        resolver.resolve(
            headers, space_id=space_id or crew.service, agent_source="claude-code", fallback_session=FALLBACK
        )
    )


def denied(crew: Crew, headers: dict[str, str], status: int, **kwargs: str) -> str:
    with pytest.raises(ProxyDenied) as info:
        resolve(crew, headers, **kwargs)
    assert info.value.status == status, info.value.message
    return info.value.message


def bearer(key: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}", **extra}


def test_the_only_team_and_its_only_usable_agent_are_the_default(crew: Crew) -> None:
    identity = resolve(crew, bearer(crew.alice.key))
    assert (identity.team_id, identity.agent_id, identity.task_id) == (crew.team_a, crew.at, None)
    assert identity.user_id == crew.alice.user_id and identity.key_id
    assert identity.service_id == crew.service and identity.has_memory_scope
    assert identity.session_id == FALLBACK and identity.agent_source == "claude-code"


def test_without_a_single_choice_the_turn_has_no_memory_scope(crew: Crew) -> None:
    # bob may use two agents of his one team; carol is in two teams; dave in none: none of it is an error.
    bob = resolve(crew, bearer(crew.bob.key))
    assert (bob.team_id, bob.agent_id) == (crew.team_a, None) and not bob.has_memory_scope
    carol = resolve(crew, bearer(crew.carol.key))
    assert (carol.team_id, carol.agent_id) == (None, None)
    dave = resolve(crew, bearer(crew.dave.key))
    assert (dave.team_id, dave.agent_id) == (None, None)


def test_headers_choose_team_agent_and_task_in_either_spelling(crew: Crew) -> None:
    short = resolve(crew, bearer(crew.bob.key, **{"x-team-id": crew.team_a, "x-agent-id": crew.bob_default}))
    assert (short.team_id, short.agent_id) == (crew.team_a, crew.bob_default)
    tdai = {"x-tdai-team-id": crew.team_b, "x-tdai-agent-id": crew.cb}
    long = resolve(crew, bearer(crew.carol.key, **tdai))
    assert (long.team_id, long.agent_id) == (crew.team_b, crew.cb)
    tasked = resolve(crew, bearer(crew.alice.key, **{"x-task-id": crew.task_a}))
    assert (tasked.team_id, tasked.agent_id, tasked.task_id) == (crew.team_a, crew.at, crew.task_a)


def test_an_agent_header_alone_names_its_team(crew: Crew) -> None:
    identity = resolve(crew, bearer(crew.carol.key, **{"x-agent-id": crew.cb}))
    assert (identity.team_id, identity.agent_id) == (crew.team_b, crew.cb)


def test_ids_the_key_may_not_act_as_are_refused_naming_the_field(crew: Crew) -> None:
    not_member = denied(crew, bearer(crew.alice.key, **{"x-team-id": crew.team_b}), 403)
    assert not_member == "team_id: not a team this user is an active member of"
    private = denied(crew, bearer(crew.alice.key, **{"x-agent-id": crew.bob_default}), 403)
    assert private == "agent_id: not an agent this user may use"
    elsewhere = {"x-team-id": crew.team_a, "x-agent-id": crew.cb}
    assert denied(crew, bearer(crew.carol.key, **elsewhere), 403) == f"agent_id: not an agent of team {crew.team_a}"
    assert denied(crew, bearer(crew.alice.key, **{"x-agent-id": "agt-nope"}), 403).startswith("agent_id: ")
    foreign_task = {"x-team-id": crew.team_b, "x-task-id": crew.task_a}
    assert denied(crew, bearer(crew.carol.key, **foreign_task), 403) == f"task_id: not a task of team {crew.team_b}"
    # The data plane's `default` bucket is no team a user key may act in.
    assert denied(crew, bearer(crew.alice.key, **{"x-team-id": "default"}), 403).startswith("team_id: ")


def test_an_archived_agent_is_refused_and_never_the_default(crew: Crew) -> None:
    archived = "agent_id: the agent is archived; it is used again once its status is set back to active"
    crew.org.ok(crew.alice, "/v3/meta/agent/archive", {"agent_id": crew.at})
    for headers in ({"x-agent-id": crew.at}, {"x-tdai-team-id": crew.team_a, "x-tdai-agent-id": crew.at}):
        assert denied(crew, bearer(crew.alice.key, **headers), 403) == archived
        assert denied(crew, bearer(crew.bob.key, **headers), 403) == archived
        assert denied(crew, bearer(crew.org.admin.key, **headers), 403) == archived
    # Alice's only agent was AT: with it archived she has no agent to default to, and the turn no memory scope.
    identity = resolve(crew, bearer(crew.alice.key))
    assert (identity.team_id, identity.agent_id) == (crew.team_a, None) and not identity.has_memory_scope
    crew.org.ok(crew.alice, "/v3/meta/agent/update", {"agent_id": crew.at, "status": "active"})
    assert resolve(crew, bearer(crew.alice.key, **{"x-agent-id": crew.at})).agent_id == crew.at


def test_a_missing_or_unusable_user_key_is_401(crew: Crew) -> None:
    assert denied(crew, {}, 401).startswith("unauthorized: missing_user_key")
    # A provider's key is not a memhub user key.
    assert denied(crew, bearer("sk-ant-api03-provider"), 401).startswith("unauthorized: missing_user_key")
    assert denied(crew, bearer("sk-mem-not-a-key"), 401) == "unauthorized: invalid_user_key"
    # The key of another tenant.
    assert denied(crew, bearer(crew.alice.key), 401, space_id="svc-other") == "unauthorized: invalid_user_key"
    second = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"name": "soon revoked"})
    assert resolve(crew, bearer(second["key_value"])).user_id == crew.bob.user_id
    crew.org.ok(crew.bob, "/v3/meta/user-key/revoke", {"key_id": second["key_id"]})
    assert denied(crew, bearer(second["key_value"]), 401) == "unauthorized: invalid_user_key"
    lapsing = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"expires_at": "2999-01-01T00:00:00Z"})
    lapse_key(crew.org, lapsing["key_id"])
    assert denied(crew, bearer(lapsing["key_value"]), 401) == "unauthorized: invalid_user_key"


def test_the_user_key_may_come_beside_a_provider_key(crew: Crew) -> None:
    # Anthropic clients send their key as x-api-key; a caller keeping its own provider key in the Bearer sends
    # the memhub key as x-tdai-user-key.
    assert resolve(crew, {"x-api-key": crew.alice.key}).user_id == crew.alice.user_id
    both = bearer("sk-provider-own", **{"x-tdai-user-key": crew.alice.key})
    assert resolve(crew, both).user_id == crew.alice.user_id


def test_the_session_is_the_first_session_header_present(crew: Crew) -> None:
    key = bearer(crew.alice.key)
    assert resolve(crew, {**key, "x-thread-id": "t", "x-claude-code-session-id": " cc-1 "}).session_id == "cc-1"
    assert resolve(crew, {**key, "x-chat-id": "c", "x-conversation-id": "conv"}).session_id == "conv"
    assert resolve(crew, {**key, "x-session-id": "   "}).session_id == FALLBACK
    bad = denied(crew, {**key, "x-session-id": "a\u2028b"}, 400)
    assert bad == "x-session-id: must not contain control characters"
    assert denied(crew, {**key, "x-chat-id": "c" * 257}, 400) == "x-chat-id: must be at most 256 characters"
    assert denied(crew, key, 400, space_id="s" * 129).startswith("space_id: ")


def test_a_revoked_key_stops_working_once_its_check_is_no_longer_remembered(crew: Crew) -> None:
    now = [1000.0]
    resolver = KeyIdentityResolver(crew.hub.meta, clock=lambda: now[0])
    key = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {})

    def run() -> ProxyIdentity:
        headers = bearer(key["key_value"])
        return asyncio.run(
            resolver.resolve(headers, space_id=crew.service, agent_source="claude-code", fallback_session=FALLBACK)
        )

    assert run().user_id == crew.bob.user_id
    crew.org.ok(crew.bob, "/v3/meta/user-key/revoke", {"key_id": key["key_id"]})
    assert run().user_id == crew.bob.user_id  # the check made a moment ago still stands
    now[0] += AUTH_CACHE_SECONDS
    with pytest.raises(ProxyDenied) as info:
        run()
    assert info.value.status == 401


def test_a_remembered_key_stops_working_the_moment_it_expires(crew: Crew) -> None:
    """The key store's clock (epoch) and the memory window's (monotonic) are both injected: the window never
    moves here, so only the key's own expiry can end the remembered check."""
    wall = [time.time()]
    window = [1000.0]
    users = dataclasses.replace(crew.hub.meta.users, clock=lambda: wall[0])
    resolver = KeyIdentityResolver(dataclasses.replace(crew.hub.meta, users=users), clock=lambda: window[0])
    expires_at = ms_to_iso(int(wall[0] * 1000) + 3_600_000)
    key = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"expires_at": expires_at})
    expiry = parse_iso_ms(key["expires_at"])
    assert expiry is not None

    def run() -> ProxyIdentity:
        headers = bearer(key["key_value"])
        return asyncio.run(
            resolver.resolve(headers, space_id=crew.service, agent_source="claude-code", fallback_session=FALLBACK)
        )

    assert run().user_id == crew.bob.user_id
    wall[0] = (expiry - 1) / 1000  # a millisecond before: the remembered check stands
    assert run().user_id == crew.bob.user_id
    wall[0] = expiry / 1000
    with pytest.raises(ProxyDenied) as info:
        run()
    assert (info.value.status, info.value.message) == (401, "unauthorized: invalid_user_key")
    window[0] += AUTH_CACHE_SECONDS  # and checked afresh after the window, it is still refused
    with pytest.raises(ProxyDenied):
        run()
