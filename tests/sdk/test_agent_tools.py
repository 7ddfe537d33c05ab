"""Tool definitions in both provider formats, argument rules, and how results read."""

from __future__ import annotations

import json
import re

import pytest

from memhub.sdk.agent.tools import (
    MEMORY_TOOLS,
    ToolArgumentError,
    format_conversation_hits,
    format_knowledge_result,
    format_memory_hits,
    knowledge_tool_name,
    knowledge_tools,
    memory_file_path,
    parse_arguments,
    search_limit,
)

NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def test_memory_tool_names_and_required_params() -> None:
    by_name = {t.name: t for t in MEMORY_TOOLS}
    assert list(by_name) == ["tdai_memory_search", "tdai_conversation_search", "tdai_read_file"]
    assert by_name["tdai_memory_search"].parameters["required"] == ["query"]
    assert set(by_name["tdai_memory_search"].parameters["properties"]) == {"query", "limit", "type"}
    assert set(by_name["tdai_conversation_search"].parameters["properties"]) == {"query", "limit", "session_key"}
    assert by_name["tdai_read_file"].parameters["required"] == ["path"]
    assert "tdai_read_cos" in by_name["tdai_read_file"].aliases


def test_openai_and_anthropic_shapes() -> None:
    tool = MEMORY_TOOLS[0]
    assert tool.render("openai") == {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }
    assert tool.render("anthropic") == {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    }
    with pytest.raises(ValueError, match="format"):
        tool.render("gemini")  # type: ignore[arg-type]
    for t in MEMORY_TOOLS:
        json.dumps(t.render("openai"))
        assert NAME_RULE.match(t.name)


def test_knowledge_tools_from_a_listing() -> None:
    listing = {
        "tools": [
            {
                "name": "search",
                "description": "Search the wiki",
                "params": {
                    "query": {"type": "string", "required": True, "description": "words"},
                    "top_k": {"type": "integer", "default": 5},
                    "paths": {"type": "array"},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                },
            },
            {"no_name": True},
        ]
    }
    (tool,) = knowledge_tools("kb.team/1", listing)
    assert tool.name == "search__kb_team_1" and tool.remote_name == "search" and tool.knowledge_id == "kb.team/1"
    assert tool.description == "[kb.team/1] Search the wiki"
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "words"},
            "top_k": {"type": "integer", "default": 5},
            "paths": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["a", "b"]},
        },
        "required": ["query"],
    }


def test_knowledge_tool_name_fits_provider_rules() -> None:
    name = knowledge_tool_name("find_callers", "cg-" + "x" * 100)
    assert NAME_RULE.match(name) and len(name) == 64


def test_parse_arguments() -> None:
    assert parse_arguments('{"query": "a"}') == {"query": "a"}
    assert parse_arguments({"query": "a"}) == {"query": "a"}
    assert parse_arguments(None) == {} and parse_arguments("") == {}
    with pytest.raises(ToolArgumentError, match="arguments: must be a JSON object"):
        parse_arguments("{not json")
    with pytest.raises(ToolArgumentError, match="arguments: must be a JSON object"):
        parse_arguments("[1, 2]")


@pytest.mark.parametrize("raw,expected", [(None, 5), (3, 3), (3.0, 3), ("7", 7), (0, 1), (99, 20)])
def test_search_limit_is_clamped(raw: object, expected: int) -> None:
    args = {} if raw is None else {"limit": raw}
    assert search_limit(args) == expected


@pytest.mark.parametrize("raw", [True, "many", 2.5, [3]])
def test_search_limit_rejects_non_integers(raw: object) -> None:
    with pytest.raises(ToolArgumentError, match="limit: must be an integer"):
        search_limit({"limit": raw})


@pytest.mark.parametrize("path", ["../persona.md", "/etc/passwd", "scene_blocks/../../x", "\\x", "a\\..\\b"])
def test_read_path_must_stay_relative(path: str) -> None:
    with pytest.raises(ToolArgumentError, match="path: must be a relative path"):
        memory_file_path({"path": path})


def test_read_path_required() -> None:
    with pytest.raises(ToolArgumentError, match="path: required"):
        memory_file_path({})
    assert memory_file_path({"path": " scene_blocks/a..b.md "}) == "scene_blocks/a..b.md"


def test_memory_hits_text_exact() -> None:
    data = {"items": [{"type": "preference", "content": "Likes  tea", "score": 0.51234}, {"content": "x"}]}
    assert format_memory_hits(data) == (
        "Found 2 matching memories:\n- **[preference]** (score: 0.512) Likes tea\n- **[memory]** x"
    )
    assert format_memory_hits({"items": []}) == "No matching memories found."


def test_conversation_hits_text_exact() -> None:
    data = {
        "messages": [
            {"role": "user", "content": "hello", "message_time": "2026-01-01T00:00:00.000Z", "score": 1},
        ]
    }
    assert format_conversation_hits(data) == (
        "Found 1 matching messages:\n\n**[user]** [2026-01-01T00:00:00.000Z] (score: 1.000)\nhello"
    )
    assert format_conversation_hits({}) == "No matching conversation found."


def test_knowledge_result_is_compact_and_capped() -> None:
    assert format_knowledge_result({"a": "é"}, 100) == '{"a":"é"}'
    assert len(format_knowledge_result({"a": "x" * 500}, 50)) == 50
