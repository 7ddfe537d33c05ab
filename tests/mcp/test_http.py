"""`/mcp` inside the gateway, driven by the real `mcp` client over streamable HTTP against a real uvicorn server:
the same tools as stdio, each user seeing only what their key may, the knowledge catalogue read afresh, and the
checks that come before any MCP work (Host, Origin, key)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import GATEWAY_KEY
from tests.mcp import flows
from tests.mcp.conftest import SCENE_PATH, SERVICE, Gateway

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def client(gw: Gateway, key: str, **headers: str) -> Client:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {key}", "x-tdai-service-id": SERVICE, **headers})
    return Client(streamable_http_client(gw.url + "/mcp", http_client=http), read_timeout_seconds=120)


def test_a_host_uses_memory_and_knowledge_over_http(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, gateway.alice.key) as c:
            await flows.check_listing(c, gateway.wiki_id)
            memory_id = await flows.check_memory_round_trip(c, "Alice cycles to work on Tuesdays", "cycles Tuesdays")
            await flows.check_bad_arguments(c, gateway.wiki_id)
            await flows.check_reads(c, gateway.wiki_id)
            await flows.check_skills(c, gateway.skill_id)
            await flows.check_forget(c, memory_id, "cycles Tuesdays")

    anyio.run(main)


def test_a_resource_registered_while_the_session_is_open_is_in_the_next_listing(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, gateway.alice.key) as c:
            await flows.check_resource_added_mid_session(c, gateway, "runbook-http")

    anyio.run(main)


def test_a_user_sees_only_what_their_key_may(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, gateway.alice.key) as alice:
            secret = flows.ok(await alice.call_tool("memory_remember", {"content": "Alice's locker code is 4711"}))
        async with client(gateway, gateway.bob.key) as bob:
            listed = set(await flows.tools(bob))
            assert not any(name.startswith(gateway.wiki_id) for name in listed)
            found = flows.ok(await bob.call_tool("memory_search", {"query": "locker code"}))
            assert found["memories"] == []
            assert flows.ok(await bob.call_tool("scene_list", {}))["entries"] == []
            assert "path" in flows.error(await bob.call_tool("scene_read", {"path": SCENE_PATH}))
            # Naming another team's resource or memory gets nothing: the gateway checks bob's key, not the name.
            refused = flows.error(await bob.call_tool(f"{gateway.wiki_id}__search", {"query": "laptop"}))
            assert "knowledge resource not found" in refused and "credentials" not in refused
            assert "nothing was deleted" in flows.error(await bob.call_tool("memory_forget", {"ids": [secret["id"]]}))
            # Alice's skill belongs to her agent in her team: bob's search does not find it, nor may he read it.
            skills = flows.ok(
                await bob.call_tool("skill_search", {"query": "rotate relay certificates", "scope": "team"})
            )
            assert gateway.skill_id not in [s["skill_id"] for s in skills["skills"]]
            assert "refused" in flows.error(await bob.call_tool("skill_view", {"skill_id": gateway.skill_id}))
        async with client(gateway, gateway.alice.key) as alice:
            found = flows.ok(await alice.call_tool("memory_search", {"query": "locker code"}))
            assert [m["id"] for m in found["memories"]] == [secret["id"]]
            flows.ok(await alice.call_tool("memory_forget", {"ids": [secret["id"]]}))

    anyio.run(main)


def test_the_gateway_key_acts_as_the_ids_its_headers_name(gateway: Gateway) -> None:
    bob = gateway.bob
    ids = {"x-tdai-team-id": bob.team_id, "x-tdai-agent-id": bob.agent_id, "x-tdai-user-id": bob.user_id}

    async def main() -> None:
        async with client(gateway, GATEWAY_KEY) as c:
            message = flows.error(await c.call_tool("persona_read", {}))
            assert "x-tdai-team-id" in message and "x-tdai-user-id" in message
        async with client(gateway, GATEWAY_KEY, **ids) as c:
            stored = flows.ok(await c.call_tool("memory_remember", {"content": "Bob prefers tabs"}))
        async with client(gateway, bob.key) as c:
            found = flows.ok(await c.call_tool("memory_search", {"query": "tabs"}))
            assert [m["id"] for m in found["memories"]] == [stored["id"]]

    anyio.run(main)


def _post(gw: Gateway, headers: dict[str, str]) -> httpx.Response:
    return gw.http.post(gw.url + "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **headers})


def test_host_origin_and_key_are_checked_before_any_mcp_work(gateway: Gateway) -> None:
    auth: dict[str, Any] = {"authorization": f"Bearer {gateway.alice.key}", "x-tdai-service-id": SERVICE}
    assert _post(gateway, auth).status_code == 200
    missing = _post(gateway, {"x-tdai-service-id": SERVICE})
    assert missing.status_code == 401 and missing.json()["message"] == "Unauthorized: missing Bearer token"
    assert missing.headers["www-authenticate"] == "Bearer"  # no resource_metadata: no OAuth to start
    wrong = _post(gateway, {**auth, "authorization": "Bearer sk-mem-not-a-key"})
    assert wrong.status_code == 401
    assert _post(gateway, {"authorization": "Bearer mh-gw-wrong", "x-tdai-service-id": SERVICE}).status_code == 401
    assert _post(gateway, {"authorization": auth["authorization"]}).status_code == 401  # no tenant
    assert _post(gateway, {**auth, "host": "evil.example"}).status_code == 421
    assert _post(gateway, {**auth, "origin": "https://evil.example"}).status_code == 403
    assert _post(gateway, {**auth, "origin": "http://localhost:3000"}).status_code == 200
    assert gateway.http.get(gateway.url + "/.well-known/oauth-protected-resource").status_code == 404


def test_memory_search_finds_past_turns_through_recall(gateway: Gateway) -> None:
    bob = gateway.bob
    ids = {"team_id": bob.team_id, "agent_id": bob.agent_id, "user_id": bob.user_id, "session_id": "s-trip"}
    turns = [
        {"role": "user", "content": "I am flying to Zanzibar on the ninth."},
        {"role": "assistant", "content": "Noted: Zanzibar on the ninth."},
    ]
    gateway.post("/v3/conversation/add", {**ids, "messages": turns}, bob.key)

    async def main() -> None:
        async with client(gateway, bob.key) as c:
            found = flows.ok(await c.call_tool("memory_search", {"query": "Zanzibar flight"}))
            turns_found = [m for m in found["memories"] if m["layer"] == "l0"]
            assert turns_found and "Zanzibar" in turns_found[0]["content"]
            assert {m["role"] for m in turns_found} <= {"user", "assistant"}
            prompt = await c.get_prompt("recall", {"query": "Zanzibar flight"})
            block = prompt.messages[0].content
            assert isinstance(block, types.TextContent) and "[conversation " in block.text

    anyio.run(main)
