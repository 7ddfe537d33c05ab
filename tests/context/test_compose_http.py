"""`POST /v3/context/compose` over HTTP: every request rule, identity and access, and that nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import GATEWAY_KEY, SERVICE
from tests.context import corpus
from tests.context.kit import ROUTE, World
from tests.meta.org import table_snapshot

TURN: dict[str, Any] = {"query": "What is the refund window?"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "query: is required"),
        ({"query": ""}, "query: must not be empty"),
        ({"query": "  \n "}, "query: must not be blank"),
        ({"query": "x" * 4001}, "query: must be at most 4000 characters"),
        ({"query": 7}, "query: must be a string"),
        ({**TURN, "help_mode": "yes"}, "help_mode: must be a boolean"),
        ({**TURN, "system_agent": 1}, "system_agent: must be a boolean"),
        ({**TURN, "data_connection": "true"}, "data_connection: must be a boolean"),
        ({**TURN, "paths": "web/App.tsx"}, "paths: must be an array"),
        ({**TURN, "paths": ["a.tsx"] * 51}, "paths: must contain at most 50 items"),
        ({**TURN, "paths": ["ok.tsx", ""]}, "paths[1]: must not be empty"),
        ({**TURN, "paths": ["p" * 1025]}, "paths[0]: must be at most 1024 characters"),
        ({**TURN, "attachments": ["a.pdf"] * 21}, "attachments: must contain at most 20 items"),
        ({**TURN, "attachments": [3]}, "attachments[0]: must be a string"),
        ({**TURN, "capabilities": []}, "capabilities: must be an object"),
        ({**TURN, "capabilities": {"wiki": False}}, "capabilities.wiki: is not a known field"),
        ({**TURN, "capabilities": {"llm_wiki": "0"}}, "capabilities.llm_wiki: must be a boolean"),
        ({**TURN, "caps": {"workspace": 100}}, "caps.workspace: must be >= 500"),
        ({**TURN, "caps": {"agent": 20001}}, "caps.agent: must be <= 20000"),
        ({**TURN, "caps": {"help": 999}}, "caps.help: must be >= 1000"),
        ({**TURN, "caps": {"standards": -1}}, "caps.standards: must be >= 0"),
        ({**TURN, "caps": {"conversation": 8001}}, "caps.conversation: must be <= 8000"),
        ({**TURN, "caps": {"memory": 12001}}, "caps.memory: must be <= 12000"),
        ({**TURN, "caps": {"memory": -1}}, "caps.memory: must be >= 0"),
        ({**TURN, "caps": {"skills": 1.5}}, "caps.skills: must be an integer"),
        ({**TURN, "caps": {"total": 100_000}}, "caps.total: must be <= 64000"),
        ({**TURN, "caps": {"tokens": 5}}, "caps.tokens: is not a known field"),
        ({**TURN, "language": "fr"}, "language: must be one of 'en' or 'zh'"),
        ({**TURN, "team_id": "t" * 257}, "team_id: must be at most 256 characters"),
        ({**TURN, "session_id": 5}, "session_id: must be a string"),
        ({**TURN, "conversation_id": "c" * 513}, "conversation_id: must be at most 512 characters"),
        ({**TURN, "agent_source": "s" * 129}, "agent_source: must be at most 128 characters"),
    ],
)
def test_each_request_rule_names_its_field(world: World, body: dict[str, Any], message: str) -> None:
    before = table_snapshot(world.gw)
    envelope = world.fails(world.alice, body, 400)
    assert envelope["message"] == message
    field, rule = message.split(": ", 1)
    assert envelope["data"]["errors"][0] == {"field": field, "rule": rule}
    assert table_snapshot(world.gw) == before


def test_a_body_that_is_not_a_json_object_is_refused(world: World) -> None:
    headers = world.org.headers(world.alice, {"content-type": "application/json"})
    for raw in (b"", b"not json", b"[1, 2]"):
        envelope = world.gw.client.post(ROUTE, content=raw, headers=headers).json()
        assert envelope["code"] == 400 and envelope["message"].startswith("Invalid JSON body")


def test_an_isolation_header_over_the_limit_is_refused(world: World) -> None:
    envelope = world.fails(world.alice, TURN, 400, headers={"x-tdai-team-id": "t" * 257})
    assert envelope["message"] == "x-tdai-team-id: must be at most 256 characters"


def test_authentication_is_the_data_plane_s(world: World) -> None:
    response = world.gw.client.post(ROUTE, json=TURN, headers={"x-tdai-service-id": SERVICE})
    assert response.status_code == 401 and response.json()["message"] == "Unauthorized: missing Bearer token"
    response = world.gw.client.post(ROUTE, json=TURN, headers={"authorization": f"Bearer {GATEWAY_KEY}"})
    assert response.status_code == 401 and response.json()["message"] == "Missing x-tdai-service-id header"
    bad_user = {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SERVICE, "x-tdai-user-key": "sk-mem-x"}
    assert world.gw.client.post(ROUTE, json=TURN, headers=bad_user).status_code == 401


# -- identity and access -------------------------------------------------------------------------------------------
def test_ids_come_from_the_body_then_the_headers(world: World) -> None:
    by_body = world.compose(world.alice, world.agent_turn("What is the refund window?"))
    headers = {"x-tdai-team-id": world.team, "x-tdai-agent-id": world.agent, "x-tdai-session-id": corpus.SESSION}
    by_headers = world.compose(world.alice, TURN, headers=headers)
    assert by_headers == by_body and by_body["mode"] == "workspace_agent"
    # The body wins over a header.
    other = world.compose(world.alice, {**TURN, "team_id": world.team}, headers={"x-tdai-team-id": "team-nope"})
    assert other["mode"] == "plain" and world.wikis["Team handbook"] in other["knowledge_tools"]


def test_a_user_key_acts_only_as_its_own_user_in_its_teams_through_agents_it_may_use(world: World) -> None:
    cases = [
        ({**world.agent_turn("x"), "user_id": world.alice.user_id}, "user_id: a user key acts only as its own user"),
        ({**TURN, "user_id": world.alice.user_id, "help_mode": True}, "user_id: a user key acts only as its own user"),
        ({**TURN, "team_id": world.other_team}, "team_id: not a team this user is an active member of"),
        (
            {**TURN, "team_id": world.team, "agent_id": world.private_agent},
            "agent_id: not an agent this user may use",
        ),
        ({**TURN, "team_id": world.team, "agent_id": world.bob_agent}, f"agent_id: not an agent of team {world.team}"),
    ]
    before = table_snapshot(world.gw)
    for body, message in cases:
        envelope = world.fails(world.carol, body, 403)
        assert envelope["message"] == message, body
    assert table_snapshot(world.gw) == before
    # Carol is a member: the team's agent works for her, with her own (empty) conversation.
    mine = world.compose(world.carol, world.agent_turn("What is the refund window?"))
    assert mine["mode"] == "workspace_agent" and "conversation" not in [s["kind"] for s in mine["sources"]]
    assert "payments/refunds" in [s["id"] for s in mine["sources"]]


def test_the_gateway_key_acts_for_the_tenant(world: World) -> None:
    body = {**world.agent_turn("What is the refund window?"), "user_id": world.alice.user_id}
    as_gateway = world.compose(None, body)
    as_alice = world.compose(world.alice, world.agent_turn("What is the refund window?"))
    assert as_gateway == as_alice


def test_the_system_team_is_reserved(world: World) -> None:
    envelope = world.fails(world.alice, {**TURN, "team_id": "__system__"}, 400)
    assert envelope["message"] == "team_id: __system__ is reserved for system knowledge; use help_mode to read it"
    assert envelope["data"]["errors"] == [{"field": "team_id", "rule": "__system__ is reserved for system knowledge"}]


def test_help_without_system_knowledge_is_not_ready(make_gateway: Any) -> None:
    gw = make_gateway("bare")
    response = gw.post(ROUTE, {"query": "How do I create an API key?", "help_mode": True}, isolation={})
    envelope = response.json()
    assert response.status_code == 503 and envelope["code"] == 503
    assert envelope["message"] == (
        "help_docs_unavailable: Help documents are not ready (no wiki has been built in the reserved team __system__)"
    )
    assert envelope["data"] == {"error": "help_docs_unavailable"}
    # Without help mode the same gateway composes (there is simply no knowledge).
    plain = gw.ok(ROUTE, {"query": "hello"}, isolation={})
    assert (plain["mode"], plain["knowledge_tools"]) == ("plain", "")


def test_the_user_s_configured_flag_beats_the_request(world: World) -> None:
    path = "/v3/meta/config/user/set"
    body = {"user_id": world.alice.user_id, "module": "asset_type", "params": {"llm_wiki.enabled": "0"}}
    world.org.ok(world.alice, path, body)
    try:
        data = world.compose(world.alice, world.agent_turn("Reply tone?", capabilities={"llm_wiki": True}))
        assert data["capabilities"]["llm_wiki"] is False and data["knowledge_tools"] == ""
        assert data["retrieval"]["reason"] == "llm_wiki_disabled"
        # Help documents are the product's, not one of the user's assets: the switch does not apply.
        helped = world.compose(world.alice, {"query": "How do I create an API key?", "help_mode": True})
        assert [s["kind"] for s in helped["sources"]] == ["system"]
    finally:
        body["params"] = {"llm_wiki.enabled": "1"}
        world.org.ok(world.alice, path, body)


def test_composing_writes_nothing(world: World) -> None:
    before = table_snapshot(world.gw)
    world.compose(world.alice, world.agent_turn("What is the refund window for an enterprise customer?"))
    world.compose(world.carol, {"query": "How do I create an API key?", "help_mode": True})
    assert table_snapshot(world.gw) == before


def test_the_route_is_in_the_openapi_document(world: World) -> None:
    schema = world.gw.client.get("/openapi.json").json()
    operation = schema["paths"][ROUTE]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/ContextCompose")
    body = schema["components"]["schemas"]["ContextCompose"]
    assert body["required"] == ["query"] and {"caps", "capabilities", "help_mode"} <= set(body["properties"])
    assert {"CapsOverride", "CapabilityFlags"} <= set(schema["components"]["schemas"])
