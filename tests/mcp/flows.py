"""What an MCP host does with memhub, written once and driven over stdio and over `/mcp` by the real `mcp` client."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client

from tests.knowledge.tools_kit import WikiApi, text_file
from tests.mcp.conftest import SCENE_PATH, SCENE_TEXT, SERVICE, SKILL_MD, SKILL_NAME, SKILL_SCRIPT, Gateway

MEMORY_TOOLS = {"memory_search", "memory_remember", "memory_forget", "persona_read", "scene_list", "scene_read"}
SKILL_TOOLS = {"skill_search", "skill_view", "skill_read_file"}
WIKI_TOOLS = {"get_info", "search", "list_pages", "read_page", "list_themes", "get_index"}


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def ok(result: types.CallToolResult) -> dict[str, Any]:
    """A successful tool result: its JSON text and its structured content agree."""
    assert not result.is_error, text(result)
    data = json.loads(text(result))
    assert result.structured_content == data
    return data


def error(result: types.CallToolResult) -> str:
    assert result.is_error, text(result)
    return text(result)


async def tools(client: Client) -> dict[str, types.Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


async def check_listing(client: Client, wiki_id: str) -> None:
    """The memory tools with their annotations, and the wiki's tools under stable names, read-only."""
    listed = await tools(client)
    assert set(listed) >= MEMORY_TOOLS | SKILL_TOOLS
    assert all((listed[name].annotations or types.ToolAnnotations()).read_only_hint is True for name in SKILL_TOOLS)
    assert listed["memory_forget"].annotations is not None
    assert listed["memory_forget"].annotations.destructive_hint is True
    assert listed["memory_search"].annotations and listed["memory_search"].annotations.read_only_hint is True
    assert listed["memory_remember"].annotations and listed["memory_remember"].annotations.read_only_hint is False
    for name in WIKI_TOOLS:
        tool = listed[f"{wiki_id}__{name}"]
        assert tool.annotations and tool.annotations.read_only_hint is True
        assert tool.input_schema["type"] == "object"
    assert listed[f"{wiki_id}__search"].input_schema["required"] == ["query"]


async def check_memory_round_trip(client: Client, fact: str, query: str) -> str:
    """Remember a fact, find it through recall, see it in the recall prompt; returns its id."""
    stored = ok(await client.call_tool("memory_remember", {"content": fact, "type": "persona"}))
    assert stored["stored"] is True and stored["content"] == fact
    found = ok(await client.call_tool("memory_search", {"query": query, "limit": 5}))
    assert [m["id"] for m in found["memories"]][:1] == [stored["id"]], found
    assert found["memories"][0]["layer"] == "l1"
    prompt = await client.get_prompt("recall", {"query": query})
    block = prompt.messages[0].content
    assert isinstance(block, types.TextContent)
    assert "<relevant-memories>" in block.text and fact in block.text
    assert f"`{SCENE_PATH}`" in block.text  # the scene index follows the memories
    return str(stored["id"])


async def check_bad_arguments(client: Client, wiki_id: str) -> None:
    """Each comes back as a tool error naming the field and the rule; nothing is sent or stored."""
    assert "limit" in error(await client.call_tool("memory_search", {"query": "x", "limit": 0}))
    assert "query" in error(await client.call_tool("memory_search", {"limit": 3}))
    assert "colour" in error(await client.call_tool("memory_search", {"query": "x", "colour": "red"}))
    assert "type" in error(await client.call_tool("memory_remember", {"content": "x", "type": "gossip"}))
    assert "ids" in error(await client.call_tool("memory_forget", {"ids": []}))
    assert "path" in error(await client.call_tool("scene_read", {"path": "scene_blocks/none.md"}))
    # The knowledge tool's own rule, from the gateway's check of the catalogue schema.
    assert "query" in error(await client.call_tool(f"{wiki_id}__search", {}))


async def check_reads(client: Client, wiki_id: str) -> None:
    """Persona, scenes, a knowledge query, the resources."""
    assert ok(await client.call_tool("persona_read", {}))["exists"] is False
    scenes = ok(await client.call_tool("scene_list", {}))
    assert [e["path"] for e in scenes["entries"]] == [SCENE_PATH]
    assert SCENE_TEXT in ok(await client.call_tool("scene_read", {"path": SCENE_PATH}))["content"]
    hits = ok(await client.call_tool(f"{wiki_id}__search", {"query": "laptop access"}))
    assert "laptop" in json.dumps(hits).lower()
    uris = {str(r.uri) for r in (await client.list_resources()).resources}
    assert uris == {"memhub://persona", "memhub://scenes"}
    persona = await client.read_resource("memhub://persona")
    assert persona.contents[0].uri == "memhub://persona"
    index = (await client.read_resource("memhub://scenes")).contents[0]
    assert isinstance(index, types.TextResourceContents) and index.text == f"- {SCENE_PATH}"
    scene = (await client.read_resource(f"memhub://scene/{SCENE_PATH}")).contents[0]
    assert isinstance(scene, types.TextResourceContents) and SCENE_TEXT in scene.text
    templates = (await client.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["memhub://scene/{path}"]


async def check_forget(client: Client, memory_id: str, query: str) -> None:
    """Forget deletes; forgetting again says nothing was deleted (never a silent success)."""
    assert ok(await client.call_tool("memory_forget", {"ids": [memory_id]}))["deleted_count"] == 1
    assert "nothing was deleted" in error(await client.call_tool("memory_forget", {"ids": [memory_id]}))
    found = ok(await client.call_tool("memory_search", {"query": query}))
    assert memory_id not in [m["id"] for m in found["memories"]]


async def check_skills(client: Client, skill_id: str) -> None:
    """Find the team's procedure for a task, read its SKILL.md and one of its files; bad arguments are tool errors."""
    found = ok(await client.call_tool("skill_search", {"query": "rotate relay certificates", "limit": 3}))
    assert [s["skill_id"] for s in found["skills"]][:1] == [skill_id], found
    assert found["skills"][0]["name"] == SKILL_NAME
    view = ok(await client.call_tool("skill_view", {"skill_id": skill_id}))
    assert view["content"] == SKILL_MD
    assert [f["path"] for f in view["manifest"]] == ["scripts/rotate.sh"]
    read = ok(await client.call_tool("skill_read_file", {"skill_id": skill_id, "path": "scripts/rotate.sh"}))
    assert read["content"] == SKILL_SCRIPT
    assert "limit" in error(await client.call_tool("skill_search", {"query": "x", "limit": 0}))
    assert "encoding" in error(
        await client.call_tool("skill_read_file", {"skill_id": skill_id, "path": "a", "encoding": "latin-1"})
    )
    missing = error(await client.call_tool("skill_read_file", {"skill_id": skill_id, "path": "scripts/none.sh"}))
    assert "refused" in missing or "path" in missing


async def check_resource_added_mid_session(client: Client, gateway: Gateway, name: str) -> None:
    """A wiki registered (built) while the session is open: its tools are in the next `tools/list`, and work."""
    wiki = WikiApi(
        gateway.http, {"authorization": f"Bearer {gateway.alice.key}", "x-tdai-service-id": SERVICE}, gateway.url
    )
    before = set(await tools(client))
    files = [text_file("runbook.md", "# Runbook\n\nRestart the relay before the night shift.\n")]
    wiki_id = await anyio.to_thread.run_sync(lambda: wiki.make(gateway.alice.team_id, name, files))
    added = set(await tools(client)) - before
    assert f"{wiki_id}__search" in added
    assert all(tool.startswith(wiki_id + "__") for tool in added)
    hits = ok(await client.call_tool(f"{wiki_id}__search", {"query": "relay night shift"}))
    assert "runbook" in str(hits)
