"""`/mcp` as `memhub serve` runs it: mounted by the serve command, its session manager in the server's lifespan, and
its Host allow-list read from `MEMHUB_MCP_ALLOWED_HOSTS`."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.e2e.conftest import SERVICE, Launcher

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def test_memhub_serve_answers_mcp_with_the_configured_hosts(launcher: Launcher, data_dir: Path) -> None:
    server = launcher.serve(data_dir, env={"MEMHUB_MCP_ALLOWED_HOSTS": "127.0.0.1:*,memhub.test"})
    with server.api() as api:
        admin = api.ok("/v3/internal/meta/user/init-admin", {"username": "admin"})
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        # Another allowed host passes the Host check (and then needs a key); anything else is 421.
        assert api.http.post("/mcp", json=INITIALIZE, headers={**headers, "host": "memhub.test"}).status_code == 401
        assert api.http.post("/mcp", json=INITIALIZE, headers={**headers, "host": "evil.example"}).status_code == 421
    auth = {"authorization": f"Bearer {admin['user_key']}", "x-tdai-service-id": SERVICE}

    async def main() -> None:
        http = create_mcp_http_client(headers=auth)
        async with Client(streamable_http_client(server.url + "/mcp", http_client=http)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"memory_search", "memory_remember", "memory_forget"} <= names
            stored = await client.call_tool("memory_remember", {"content": "The admin deploys on Fridays"})
            assert not stored.is_error
            found = await client.call_tool("memory_search", {"query": "deploys Fridays"})
            block = found.content[0]
            assert isinstance(block, types.TextContent)
            assert "The admin deploys on Fridays" in json.loads(block.text)["memories"][0]["content"]

    anyio.run(main)


def test_the_public_urls_host_is_allowed_without_a_list(launcher: Launcher, data_dir: Path) -> None:
    env = {"MEMHUB_PROXY_PUBLIC_URL": "https://hub.example.test/"}
    server = launcher.serve(data_dir, env=env)
    with server.api() as api:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        # The declared public host passes the Host check (and then needs a key); an undeclared one is 421, saying
        # which setting lets it in.
        assert (
            api.http.post("/mcp", json=INITIALIZE, headers={**headers, "host": "hub.example.test"}).status_code == 401
        )
        refused = api.http.post("/mcp", json=INITIALIZE, headers={**headers, "host": "other.example.test"})
        assert refused.status_code == 421 and "MEMHUB_MCP_ALLOWED_HOSTS" in refused.text
