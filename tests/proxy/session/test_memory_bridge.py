"""The memory bridge: `/memory-bridge/v3/<op>` with only a session token answers exactly what `/v3/<op>` answers
the token's user key for the token's scope, serves reads only, and lets no body id widen the scope."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memhub.api.auth import Authenticator
from memhub.api.dataplane import DataPlane
from memhub.api.routes.memory_bridge import READ_ONLY, MemoryBridge
from memhub.proxy.identity import KeyIdentityResolver
from memhub.proxy.model import ProxyIdentity
from memhub.proxy.session_token import KEY_INACTIVE, SessionTokens
from tests.meta.org import Member, table_snapshot
from tests.proxy.session.conftest import Crew
from tests.skills.helpers import skill_md

SESSION = "sess-1"
# One body per read operation; the bridge and /v3 get the same one.
BODIES: dict[str, dict[str, Any]] = {
    "atomic/search": {"query": "paris"},
    "atomic/query": {"limit": 10},
    "conversation/search": {"query": "paris"},
    "conversation/query": {"limit": 10},
    "scenario/ls": {},
    "scenario/read": {"path": "notes/trip.md"},
    "recall": {"query": "paris"},
}


def mount(crew: Crew) -> SessionTokens:
    """The bridge on the gateway's own app, over the app's services, as the runtime mounts it."""
    hub, settings = crew.hub, crew.hub.settings
    plane = DataPlane(
        Authenticator(None, hub.meta.users),
        hub.memory,
        hub.meta,
        settings.max_body_bytes,
        settings.strict_isolation,
        settings.body_read_timeout_seconds,
        hub.pipeline,
    )
    tokens = SessionTokens(hub.key_hasher.secret, settings.proxy_session_ttl_seconds, hub.meta.users)
    MemoryBridge(plane, tokens).mount(crew.gw.client.app)  # type: ignore[arg-type]
    return tokens


def key_id_of(crew: Crew, who: Member) -> str:
    (key,) = crew.org.ok(who, "/v3/meta/user-key/list", {})["items"]
    return str(key["key_id"])


def token_for(crew: Crew, tokens: SessionTokens, who: Member, team_id: str | None, agent_id: str | None) -> str:
    identity = ProxyIdentity(
        service_id=crew.service,
        user_id=who.user_id,
        key_id=key_id_of(crew, who),
        session_id=SESSION,
        team_id=team_id,
        agent_id=agent_id,
    )
    return tokens.mint(identity)


def seed(crew: Crew, who: Member, team_id: str, agent_id: str, word: str) -> dict[str, str]:
    """Memory of every layer in one scope, written through /v3 with the user's key."""
    scope = {"team_id": team_id, "agent_id": agent_id, "user_id": who.user_id}
    for session, text in ((SESSION, f"{word}: I fly to paris"), ("sess-2", f"{word}: paris again next year")):
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "noted"}]
        crew.org.ok(who, "/v3/conversation/add", {**scope, "session_id": session, "messages": messages})
    crew.org.ok(who, "/v3/atomic/add", {**scope, "content": f"{word} loves paris", "type": "persona"})
    crew.org.ok(who, "/v3/scenario/create", {**scope, "path": "notes/trip.md", "content": f"{word} in paris"})
    crew.org.ok(who, "/v3/core/write", {**scope, "content": f"{word}'s persona"})
    return scope


def bridge(crew: Crew, op: str, body: dict[str, Any], token: str | None) -> Any:
    headers = {"x-memhub-session": token} if token is not None else {}
    return crew.gw.client.post(f"/memory-bridge/v3/{op}", json=body, headers=headers)


def bridged(crew: Crew, op: str, body: dict[str, Any], token: str) -> Any:
    response = bridge(crew, op, body, token)
    envelope = response.json()
    assert response.status_code == 200 and envelope["code"] == 0, (op, envelope)
    return envelope["data"]


@pytest.fixture
def tokens(crew: Crew) -> SessionTokens:
    return mount(crew)


def test_each_read_answers_what_v3_answers_the_key_for_the_tokens_scope(crew: Crew, tokens: SessionTokens) -> None:
    scope = seed(crew, crew.alice, crew.team_a, crew.at, "alice")
    seed(crew, crew.carol, crew.team_b, crew.cb, "carol")
    token = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    for op in READ_ONLY:
        body = BODIES[op]
        session = {"session_id": SESSION} if op == "conversation/query" else {}
        expected = crew.org.ok(crew.alice, f"/v3/{op}", {**scope, **session, **body})
        assert bridged(crew, op, body, token) == expected, op
        assert "carol" not in repr(expected), op
    # Searches span the scope's sessions; the history defaults to the token's session, or one the body names.
    hits = bridged(crew, "conversation/search", {"query": "paris"}, token)["messages"]
    assert {m["session_id"] for m in hits} == {SESSION, "sess-2"}
    history = bridged(crew, "conversation/query", {}, token)["messages"]
    assert {m["session_id"] for m in history} == {SESSION} and len(history) == 2
    other = bridged(crew, "conversation/query", {"session_id": "sess-2"}, token)["messages"]
    assert {m["session_id"] for m in other} == {"sess-2"}


def test_body_ids_never_move_the_scope(crew: Crew, tokens: SessionTokens) -> None:
    seed(crew, crew.alice, crew.team_a, crew.at, "alice")
    seed(crew, crew.carol, crew.team_b, crew.cb, "carol")
    token = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    carols = {"team_id": crew.team_b, "agent_id": crew.cb, "user_id": crew.carol.user_id, "task_id": "t"}
    for op in READ_ONLY:
        assert bridged(crew, op, {**BODIES[op], **carols}, token) == bridged(crew, op, BODIES[op], token), op
    found = bridged(crew, "atomic/search", {"query": "paris", **carols}, token)["items"]
    assert [m["content"] for m in found] == ["alice loves paris"]


@pytest.mark.parametrize("op", ["atomic/add", "conversation/add", "core/read", "scenario/write", "atomic/delete", "x"])
def test_anything_but_a_read_is_404_and_writes_nothing(crew: Crew, tokens: SessionTokens, op: str) -> None:
    token = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    body = {"content": "planted", "type": "persona", "messages": [{"role": "user", "content": "x"}], "path": "a.md"}
    before = table_snapshot(crew.gw)
    response = bridge(crew, op, body, token)
    assert response.status_code == 404 and response.json()["code"] == 404, response.text
    assert table_snapshot(crew.gw) == before


def test_a_missing_bad_or_dead_token_is_401(crew: Crew, tokens: SessionTokens) -> None:
    for token, message in ((None, "unauthorized: missing x-memhub-session header"), ("nope", None)):
        response = bridge(crew, "atomic/search", {"query": "paris"}, token)
        envelope = response.json()
        assert response.status_code == 401 and envelope["code"] == 401, envelope
        assert message is None or envelope["message"] == message
    second = crew.org.ok(crew.bob, "/v3/meta/user-key/create", {"name": "laptop"})
    identity = ProxyIdentity(
        crew.service, crew.bob.user_id, second["key_id"], SESSION, team_id=crew.team_a, agent_id=crew.bob_default
    )
    token = tokens.mint(identity)
    assert bridged(crew, "atomic/query", {}, token) == {"items": [], "total": 0}
    crew.org.ok(crew.bob, "/v3/meta/user-key/revoke", {"key_id": second["key_id"]})
    envelope = bridge(crew, "atomic/query", {}, token).json()
    assert (envelope["code"], envelope["message"]) == (401, KEY_INACTIVE)


def test_a_bad_body_gets_the_v3_400(crew: Crew, tokens: SessionTokens) -> None:
    scope = seed(crew, crew.alice, crew.team_a, crew.at, "alice")
    token = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    for op, body in (("atomic/search", {"query": ""}), ("conversation/query", {"limit": 0}), ("scenario/read", {})):
        v3 = crew.org.call(crew.alice, f"/v3/{op}", {**scope, **body}).json()
        response = bridge(crew, op, body, token)
        assert response.status_code == 400, response.text
        envelope = response.json()
        assert (envelope["code"], envelope["message"], envelope.get("data")) == (400, v3["message"], v3.get("data"))
    raw = crew.gw.client.post(
        "/memory-bridge/v3/atomic/search", content=b"{not json", headers={"x-memhub-session": token}
    )
    assert raw.status_code == 400 and raw.json()["code"] == 400


def test_the_keys_authorization_still_applies(crew: Crew, tokens: SessionTokens) -> None:
    # A session without a team and agent reads nothing; a key that lost its team reads nothing from it.
    scope_less = token_for(crew, tokens, crew.carol, None, None)
    envelope = bridge(crew, "atomic/query", {}, scope_less).json()
    assert envelope["code"] == 403 and envelope["message"].startswith("team_id: "), envelope
    token = token_for(crew, tokens, crew.bob, crew.team_a, crew.bob_default)
    assert bridged(crew, "atomic/query", {}, token)["total"] == 0
    crew.org.ok(crew.alice, "/v3/meta/team-member/remove", {"team_id": crew.team_a, "user_id": crew.bob.user_id})
    denied = bridge(crew, "atomic/query", {}, token)
    assert denied.status_code == 403
    assert denied.json()["message"] == "team_id: not a team this user is an active member of"


def test_a_session_of_an_agent_archived_since_reads_nothing(crew: Crew, tokens: SessionTokens) -> None:
    seed(crew, crew.alice, crew.team_a, crew.at, "alice")
    token = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    assert bridged(crew, "atomic/query", {}, token)["total"] == 1
    crew.org.ok(crew.alice, "/v3/meta/agent/archive", {"agent_id": crew.at})
    for op, body in BODIES.items():
        denied = bridge(crew, op, body, token)
        envelope = denied.json()
        assert denied.status_code == 403 and envelope["message"].startswith("agent_id: the agent is archived"), op
    crew.org.ok(crew.alice, "/v3/meta/agent/update", {"agent_id": crew.at, "status": "active"})
    assert bridged(crew, "atomic/query", {}, token)["total"] == 1


def test_the_resolved_identity_of_a_turn_mints_a_token_the_bridge_takes(crew: Crew, tokens: SessionTokens) -> None:
    seed(crew, crew.alice, crew.team_a, crew.at, "alice")
    resolver = KeyIdentityResolver(crew.hub.meta)
    headers = {"authorization": f"Bearer {crew.alice.key}", "x-session-id": SESSION}
    identity = asyncio.run(
        resolver.resolve(headers, space_id=crew.service, agent_source="claude-code", fallback_session="x")
    )
    token = tokens.mint(identity)
    assert crew.alice.key not in token
    found = bridged(crew, "atomic/search", {"query": "paris"}, token)["items"]
    assert [m["content"] for m in found] == ["alice loves paris"]
    assert len(bridged(crew, "conversation/query", {}, token)["messages"]) == 2


def test_the_knowledge_tools_answer_the_tokens_user_as_v3_answers_their_key(crew: Crew, tokens: SessionTokens) -> None:
    # The `<knowledge_tools>` and skill recipes the proxy injects call these with the token alone.
    created = crew.org.call(crew.alice, "/v3/wiki/create", {"team_id": crew.team_a, "name": "runbooks"})
    assert created.status_code == 201, created.text
    wiki = created.json()["data"]["wiki_id"]
    skill = crew.org.ok(
        crew.alice,
        "/v3/skill/create",
        {"team_id": crew.team_a, "agent_id": crew.at, "name": "deploy", "content": skill_md("deploy", "Deploy it")},
    )["skill_id"]
    alice = token_for(crew, tokens, crew.alice, crew.team_a, crew.at)
    for op, body in (
        ("tools/list", {"knowledge_id": wiki}),
        ("tools/call", {"knowledge_id": wiki, "tool_name": "search", "params": {"query": "deploy"}}),
        ("tools/call", {"knowledge_id": skill, "tool_name": "skill_view", "params": {}}),
    ):
        assert bridged(crew, op, body, alice) == crew.org.ok(crew.alice, f"/v3/{op}", body), (op, body)
    # dave belongs to no team: the wiki is as closed to his token as to his key.
    dave = token_for(crew, tokens, crew.dave, None, None)
    refused = bridge(crew, "tools/list", {"knowledge_id": wiki}, dave)
    direct = crew.org.call(crew.dave, "/v3/tools/list", {"knowledge_id": wiki})
    assert refused.status_code == direct.status_code != 200
    assert refused.json()["code"] == direct.json()["code"]
    assert bridge(crew, "tools/list", {"knowledge_id": wiki}, None).status_code == 401
