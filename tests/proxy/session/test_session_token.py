"""Session tokens: signed, deterministic within a window (the prompt stays byte-identical), expiring, and dead as
soon as the user key they name can no longer authenticate."""

from __future__ import annotations

import base64
import json

import pytest

from memhub.proxy.model import ProxyIdentity
from memhub.proxy.ports import ProxyDenied
from memhub.proxy.session_token import EXPIRED, INVALID, KEY_INACTIVE, SessionTokens
from tests.meta.org import Member, lapse_key
from tests.proxy.session.conftest import Crew

TTL = 3600
START = 1_900_000_000.0  # inside some window; the tests move this clock, never the wall clock


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def identity_of(crew: Crew, who: Member, key_id: str, **ids: str | None) -> ProxyIdentity:
    return ProxyIdentity(
        service_id=crew.service,
        user_id=who.user_id,
        key_id=key_id,
        session_id="sess-1",
        team_id=ids.get("team_id", crew.team_a),
        agent_id=ids.get("agent_id", crew.at),
        task_id=ids.get("task_id"),
    )


def key_id_of(crew: Crew, who: Member) -> str:
    (key,) = crew.org.ok(who, "/v3/meta/user-key/list", {})["items"]
    return str(key["key_id"])


def tokens_of(crew: Crew, clock: Clock, secret: bytes | None = None) -> SessionTokens:
    return SessionTokens(secret or crew.hub.key_hasher.secret, TTL, crew.hub.meta.users, clock=clock)


def rejected(tokens: SessionTokens, token: str) -> str:
    with pytest.raises(ProxyDenied) as info:
        tokens.verify(token)
    assert info.value.status == 401
    return info.value.message


def test_a_token_names_the_identity_and_verifies_to_it(crew: Crew) -> None:
    clock = Clock()
    tokens = tokens_of(crew, clock)
    identity = identity_of(crew, crew.alice, key_id_of(crew, crew.alice), task_id=crew.task_a)
    token = tokens.mint(identity)
    assert token.startswith("mhs1.") and all(c.isalnum() or c in "-_." for c in token)
    assert crew.alice.key not in token
    verified = tokens.verify(token)
    assert verified.identity == identity
    assert verified.caller.user_id == crew.alice.user_id and verified.caller.key_id == identity.key_id


def test_mint_is_deterministic_within_a_window_and_valid_for_at_least_one(crew: Crew) -> None:
    clock = Clock()
    tokens = tokens_of(crew, clock)
    identity = identity_of(crew, crew.alice, key_id_of(crew, crew.alice))
    first = tokens.mint(identity)
    window_end = (int(START) // TTL + 1) * TTL
    clock.now = window_end - 1
    assert tokens.mint(identity) == first
    assert tokens.mint(identity_of(crew, crew.alice, identity.key_id or "", agent_id=crew.bob_default)) != first
    clock.now = window_end
    later = tokens.mint(identity)
    assert later != first
    # Minted at the very end of its window, the first token still has a whole window to live.
    clock.now = window_end + TTL - 1
    assert tokens.verify(first).identity == identity
    clock.now = window_end + TTL
    assert rejected(tokens, first) == EXPIRED
    assert tokens.verify(later).identity == identity


def test_a_tampered_or_foreign_token_is_refused(crew: Crew) -> None:
    clock = Clock()
    tokens = tokens_of(crew, clock)
    token = tokens.mint(identity_of(crew, crew.alice, key_id_of(crew, crew.alice)))
    prefix, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["t"] = crew.team_b  # another team, same signature
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    assert rejected(tokens, f"{prefix}.{forged}.{signature}") == INVALID
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    assert rejected(tokens, f"{prefix}.{payload}.{flipped}") == INVALID
    for broken in ("", "mhs1.", f"{prefix}.{payload}", "x" * 5000, f"mhs2.{payload}.{signature}"):
        assert rejected(tokens, broken) == INVALID
    other_server = tokens_of(crew, clock, secret=b"another server's secret")
    assert rejected(other_server, token) == INVALID


def test_a_revoked_or_lapsed_key_ends_its_tokens(crew: Crew) -> None:
    clock = Clock()
    tokens = tokens_of(crew, clock)
    revoked = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"name": "laptop"})
    lapsing = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"expires_at": "2999-01-01T00:00:00Z"})
    on_revoked = tokens.mint(identity_of(crew, crew.bob, revoked["key_id"], agent_id=crew.bob_default))
    on_lapsing = tokens.mint(identity_of(crew, crew.bob, lapsing["key_id"], agent_id=crew.bob_default))
    assert tokens.verify(on_revoked).identity.user_id == crew.bob.user_id
    crew.org.ok(crew.bob, "/v3/meta/user-key/revoke", {"key_id": revoked["key_id"]})
    assert rejected(tokens, on_revoked) == KEY_INACTIVE
    lapse_key(crew.org, lapsing["key_id"])
    assert rejected(tokens, on_lapsing) == KEY_INACTIVE
    # A deleted user's keys go with it.
    on_dave = tokens.mint(identity_of(crew, crew.dave, key_id_of(crew, crew.dave)))
    crew.org.ok(crew.org.admin, "/v3/meta/user/delete", {"user_ids": [crew.dave.user_id]})
    assert rejected(tokens, on_dave) == KEY_INACTIVE


def test_a_token_needs_the_key_it_stands_for(crew: Crew) -> None:
    tokens = tokens_of(crew, Clock())
    keyless = ProxyIdentity(service_id=crew.service, user_id=crew.alice.user_id, key_id=None, session_id="s")
    with pytest.raises(ValueError, match="key_id"):
        tokens.mint(keyless)
