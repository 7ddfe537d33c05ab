"""Knowledge tools as MCP tools: stable names within what hosts accept, schemas from the catalogue."""

from __future__ import annotations

import re

from memhub.mcp.catalogue import MAX_NAME_CHARS, input_schema, resource_tools, split_name, tool_name
from memhub.mcp.memory_tools import MEMORY_TOOLS

HOST_NAME_RULE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_a_plain_name_is_the_id_and_the_tool_and_splits_back() -> None:
    assert tool_name("wiki-ab12cd34", "search_sources") == "wiki-ab12cd34__search_sources"
    assert split_name("wiki-ab12cd34__search_sources") == ("wiki-ab12cd34", "search_sources")
    for name in MEMORY_TOOLS:  # never taken for a knowledge tool
        assert split_name(name) is None


def test_an_awkward_pair_gets_a_safe_distinct_digest_name() -> None:
    names = {
        tool_name("kb:team.one", "search"),
        tool_name("kb.team:one", "search"),
        tool_name("wiki-ab12cd34", "x" * 100),
        tool_name("wiki-ab12cd34", "x" * 101),
        tool_name("wiki-ab12cd34", "a__b"),
    }
    assert len(names) == 5
    for name in names:
        assert HOST_NAME_RULE.match(name) and len(name) <= MAX_NAME_CHARS
        assert split_name(name) is None  # found through the listing, never split into a wrong pair
    assert tool_name("kb:team.one", "search") == tool_name("kb:team.one", "search")  # stable


def test_the_schema_comes_from_the_catalogue() -> None:
    schema = input_schema(
        {
            "query": {"type": "string", "required": True, "description": "What to find."},
            "limit": {"type": "integer", "default": 20},
            "refs": {"type": "array"},
            "encoding": {"type": "string", "enum": ["utf-8", "base64"]},
        }
    )
    assert schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to find."},
            "limit": {"type": "integer", "default": 20},
            "refs": {"type": "array", "items": {"type": "string"}},
            "encoding": {"type": "string", "enum": ["utf-8", "base64"]},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_a_listing_gives_read_only_tools_labelled_with_their_resource() -> None:
    listing = {
        "knowledge_id": "cg-0a1b2c3d",
        "type": "code_graph",
        "name": "payments\nrepo",
        "tools": [{"name": "callers", "description": "Who calls a symbol.", "params": {}}, {"bad": 1}],
    }
    (tool,) = resource_tools(listing)
    assert tool.knowledge_id == "cg-0a1b2c3d" and tool.tool_name == "callers"
    assert tool.tool.name == "cg-0a1b2c3d__callers"
    assert tool.tool.description == "[code_graph “payments repo” (cg-0a1b2c3d)] Who calls a symbol."
    assert tool.tool.annotations is not None and tool.tool.annotations.read_only_hint is True
