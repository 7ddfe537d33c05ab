"""`memhub mcp` on stdio, as a host runs it: a subprocess (`python -m memhub.cli mcp …`) driven by the real `mcp`
client, against a real gateway over HTTP."""

from __future__ import annotations

import sys

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import GATEWAY_KEY
from tests.e2e.conftest import free_port
from tests.mcp import flows
from tests.mcp.conftest import Gateway

READ_TIMEOUT = 120.0  # a failure bound only


def client(gw: Gateway, key: str, *, url: str | None = None, extra: list[str] | None = None) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=gw.stdio_args(key, url) + (extra or []), env=gw.stdio_env()
    )
    return Client(params, read_timeout_seconds=READ_TIMEOUT)


def test_a_host_uses_memory_and_knowledge_over_stdio(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, gateway.alice.key) as c:
            await flows.check_listing(c, gateway.wiki_id)
            memory_id = await flows.check_memory_round_trip(c, "Alice brews oolong every morning", "oolong morning")
            await flows.check_bad_arguments(c, gateway.wiki_id)
            await flows.check_reads(c, gateway.wiki_id)
            await flows.check_skills(c, gateway.skill_id)
            await flows.check_forget(c, memory_id, "oolong morning")

    anyio.run(main)


def test_gateway_down_gives_tool_errors_and_the_server_keeps_running(gateway: Gateway) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"

    async def main() -> None:
        async with client(gateway, gateway.alice.key, url=nowhere) as c:
            names = set(await flows.tools(c))
            assert names >= flows.MEMORY_TOOLS  # it started, and lists what it always has
            for _ in range(2):  # the second call proves the first one did not bring the server down
                message = flows.error(await c.call_tool("memory_search", {"query": "anything"}))
                assert "unreachable" in message
            assert "unreachable" in flows.error(await c.call_tool("memory_remember", {"content": "x"}))

    anyio.run(main)


def test_the_gateway_key_without_ids_names_what_is_missing(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, GATEWAY_KEY) as c:
            message = flows.error(await c.call_tool("persona_read", {}))
            assert "--team-id" in message and "MEMHUB_AGENT_ID" in message and "--user-id" in message
        ids = ["--team-id", gateway.bob.team_id, "--agent-id", gateway.bob.agent_id, "--user-id", gateway.bob.user_id]
        async with client(gateway, GATEWAY_KEY, extra=ids) as c:
            assert flows.ok(await c.call_tool("persona_read", {}))["exists"] is False

    anyio.run(main)


def test_a_refused_key_is_a_tool_error_about_the_key(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, "sk-mem-not-a-real-key") as c:
            assert set(await flows.tools(c)) >= flows.MEMORY_TOOLS
            message = flows.error(await c.call_tool("memory_search", {"query": "anything"}))
            assert "refused the credentials" in message

    anyio.run(main)


def test_a_resource_registered_while_the_session_is_open_is_in_the_next_listing(gateway: Gateway) -> None:
    async def main() -> None:
        async with client(gateway, gateway.alice.key) as c:
            await flows.check_resource_added_mid_session(c, gateway, "runbook-stdio")

    anyio.run(main)
