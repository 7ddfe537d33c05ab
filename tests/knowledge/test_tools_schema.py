"""The tools catalogue: tool names, the tools/list wire shape, param validation rules and unknown tools."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from memhub.errors import BadRequest, Forbidden
from memhub.knowledge.codegraph.tools import CODE_GRAPH_TOOLS
from memhub.knowledge.kinds import get_tool, tools_for
from memhub.knowledge.tools import (
    ToolParamError,
    ToolSpec,
    UnknownTool,
    tool_list_view,
    validate_params,
)
from memhub.knowledge.wiki.tools import WIKI_TOOLS

WIKI_NAMES = [
    "get_info",
    "search",
    "list_pages",
    "read_page",
    "get_graph",
    "list_raw",
    "read_raw",
    "list_themes",
    "get_index",
    "docs_for_paths",
    "search_sources",
]
CG_NAMES = [
    *("get_info", "search", "explore", "callers", "callees", "impact", "node", "status", "files"),
    # memhub's structural tools
    *("definition", "call_hierarchy", "file_deps", "refactor_scope", "path", "class_hierarchy"),
]
CJK = re.compile(r"[\u4e00-\u9fff]")


def tool(kind: str, name: str) -> ToolSpec:
    """Look a tool up the way the route does."""
    return get_tool(kind, name, "res-1")  # type: ignore[arg-type]


# -- catalogue and wire shape ------------------------------------------------------------------------------


def test_catalogue_names_in_order() -> None:
    assert [t.name for t in tools_for("wiki")] == WIKI_NAMES
    assert [t.name for t in tools_for("code-graph")] == CG_NAMES
    with pytest.raises(ValueError):
        tools_for("codegraph")  # type: ignore[arg-type]


def test_spec_params_per_tool() -> None:
    params = {(k, t.name): sorted(t.params) for k in ("wiki", "code-graph") for t in tools_for(k)}  # type: ignore[arg-type]
    assert params[("wiki", "search")] == ["limit", "query"]
    assert params[("wiki", "read_page")] == ["refs"]
    assert params[("wiki", "read_raw")] == ["filenames"]
    assert params[("wiki", "get_index")] == ["theme"]
    assert params[("wiki", "docs_for_paths")] == ["paths"]
    assert params[("wiki", "search_sources")] == ["keywords"]
    for name in ("get_info", "list_pages", "get_graph", "list_raw", "list_themes"):
        assert params[("wiki", name)] == []
    assert params[("code-graph", "search")] == ["kind", "limit", "query"]
    assert params[("code-graph", "explore")] == ["maxFiles", "query"]
    assert params[("code-graph", "callers")] == params[("code-graph", "callees")] == ["limit", "symbol"]
    assert params[("code-graph", "impact")] == ["depth", "symbol"]
    assert params[("code-graph", "node")] == ["file", "includeCode", "line", "symbol"]
    assert params[("code-graph", "status")] == params[("code-graph", "get_info")] == []
    assert params[("code-graph", "files")] == ["format", "includeMetadata", "maxDepth", "path", "pattern"]


def test_tool_list_view_wire_shape() -> None:
    for specs in (WIKI_TOOLS, CODE_GRAPH_TOOLS):
        view = tool_list_view(specs)
        json.dumps(view)  # must serialise as-is
        for entry in view:
            assert set(entry) == {"name", "description", "params"}
            assert entry["description"] and not CJK.search(entry["description"])
            for p in entry["params"].values():
                assert set(p) <= {"type", "required", "description", "default", "enum"}
                assert p["type"] in {"string", "integer", "boolean", "array"}
                assert p.get("required", True) is True  # present only when true


def test_tool_list_view_values() -> None:
    wiki = {e["name"]: e for e in tool_list_view(WIKI_TOOLS)}
    cg = {e["name"]: e for e in tool_list_view(CODE_GRAPH_TOOLS)}
    assert wiki["search"]["params"]["query"] == {
        "type": "string",
        "required": True,
        "description": "Search words or a question.",
    }
    assert wiki["search"]["params"]["limit"]["default"] == 20
    assert "required" not in wiki["search"]["params"]["limit"]
    assert wiki["read_page"]["params"]["refs"]["type"] == "array"
    assert wiki["get_info"]["params"] == {}
    assert cg["search"]["params"]["kind"]["enum"] == [
        "function", "method", "class", "interface", "type", "variable", "route", "component",
    ]  # fmt: skip
    assert cg["search"]["params"]["limit"]["default"] == 10
    assert cg["explore"]["params"]["maxFiles"]["default"] == 12
    assert cg["impact"]["params"]["depth"]["default"] == 2
    assert cg["node"]["params"]["includeCode"]["default"] is False  # a False default is still rendered
    assert cg["files"]["params"]["format"] == {
        "type": "string", "description": "Output layout.", "default": "tree", "enum": ["tree", "flat", "grouped"],
    }  # fmt: skip


def test_tool_list_view_chinese() -> None:
    for specs in (WIKI_TOOLS, CODE_GRAPH_TOOLS):
        for en, zh in zip(tool_list_view(specs), tool_list_view(specs, language="zh"), strict=True):
            assert en["name"] == zh["name"] and en["params"].keys() == zh["params"].keys()
            assert CJK.search(zh["description"])
            for name, p in zh["params"].items():
                assert CJK.search(p["description"]), (zh["name"], name)
                assert {k: v for k, v in p.items() if k != "description"} == {
                    k: v for k, v in en["params"][name].items() if k != "description"
                }


# -- unknown tools -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name"),
    [("wiki", "explore"), ("wiki", "codegraph_search"), ("code-graph", "read_page"), ("code-graph", "list_themes"),
     ("wiki", ""), ("wiki", "SEARCH")],
)  # fmt: skip
def test_unknown_tool_is_403_with_spec_message(kind: str, name: str) -> None:
    with pytest.raises(UnknownTool) as err:
        get_tool(kind, name, "wiki-abc12345")  # type: ignore[arg-type]
    assert isinstance(err.value, Forbidden) and err.value.http_status == 403
    assert err.value.message.startswith(f"unknown tool: '{name}' for {kind} resource 'wiki-abc12345'. Use tools/list")
    assert (err.value.tool_name, err.value.kind, err.value.resource_id) == (name, kind, "wiki-abc12345")


def test_same_name_resolves_per_kind() -> None:
    assert "limit" in tool("wiki", "search").params and "kind" not in tool("wiki", "search").params
    assert "kind" in tool("code-graph", "search").params


# -- validation: success and defaults ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "params", "expected"),
    [
        ("wiki", "get_info", {}, {}),
        ("wiki", "search", {"query": "redis"}, {"query": "redis", "limit": 20}),
        ("wiki", "search", {"query": "redis", "limit": 1}, {"query": "redis", "limit": 1}),
        ("wiki", "search", {"query": "redis", "limit": None}, {"query": "redis", "limit": 20}),
        ("wiki", "read_page", {"refs": ["concepts/redis", "wiki/a.md"]}, {"refs": ["concepts/redis", "wiki/a.md"]}),
        ("wiki", "read_raw", {"filenames": ["f"] * 50}, {"filenames": ["f"] * 50}),
        ("wiki", "get_index", {}, {}),
        ("wiki", "get_index", {"theme": "api"}, {"theme": "api"}),
        ("wiki", "docs_for_paths", {"paths": ["src/api/app.py"]}, {"paths": ["src/api/app.py"]}),
        ("wiki", "search_sources", {"keywords": ["timeout", "重试"]}, {"keywords": ["timeout", "重试"]}),
        ("wiki", "search_sources", {"keywords": "redis  timeout"}, {"keywords": ["redis", "timeout"]}),
        ("wiki", "search_sources", {"keywords": "超时重试"}, {"keywords": ["超时重试"]}),
        ("code-graph", "search", {"query": "initSession"}, {"query": "initSession", "limit": 10}),
        ("code-graph", "search", {"query": "x", "kind": "class", "limit": 100},
         {"query": "x", "kind": "class", "limit": 100}),
        ("code-graph", "explore", {"query": "auth flow"}, {"query": "auth flow", "maxFiles": 12}),
        ("code-graph", "callers", {"symbol": "f"}, {"symbol": "f", "limit": 20}),
        ("code-graph", "callees", {"symbol": "f", "limit": 200}, {"symbol": "f", "limit": 200}),
        ("code-graph", "impact", {"symbol": "f"}, {"symbol": "f", "depth": 2}),
        ("code-graph", "node", {"symbol": "f"}, {"symbol": "f", "includeCode": False}),
        ("code-graph", "node", {"symbol": "f", "includeCode": True, "file": "a.ts", "line": 1},
         {"symbol": "f", "includeCode": True, "file": "a.ts", "line": 1}),
        ("code-graph", "status", {}, {}),
        ("code-graph", "files", {}, {"format": "tree", "includeMetadata": True}),
        ("code-graph", "files", {"path": "src/", "pattern": "*.ts", "format": "flat", "maxDepth": 3},
         {"path": "src/", "pattern": "*.ts", "format": "flat", "includeMetadata": True, "maxDepth": 3}),
    ],
)  # fmt: skip
def test_valid_params_with_defaults(kind: str, name: str, params: dict[str, Any], expected: dict[str, Any]) -> None:
    assert validate_params(tool(kind, name), params) == expected


def test_validation_does_not_mutate_the_input() -> None:
    params = {"query": "redis"}
    validate_params(tool("wiki", "search"), params)
    assert params == {"query": "redis"}


# -- validation: every rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "params", "field", "rule"),
    [
        # params must be an object
        ("wiki", "search", None, "params", "must be an object"),
        ("wiki", "search", ["redis"], "params", "must be an object"),
        ("wiki", "search", "redis", "params", "must be an object"),
        ("code-graph", "status", 1, "params", "must be an object"),
        # unknown params
        ("wiki", "get_info", {"x": 1}, "x", "unknown param"),
        ("wiki", "search", {"query": "q", "hop": 2}, "hop", "unknown param"),
        ("code-graph", "search", {"query": "q", "projectPath": "/etc"}, "projectPath", "unknown param"),
        ("wiki", "read_page", {"page_id": "intro"}, "page_id", "unknown param"),
        # missing required (absent, null, blank)
        ("wiki", "search", {}, "query", "required"),
        ("wiki", "search", {"query": None}, "query", "required"),
        ("wiki", "search", {"query": "   "}, "query", "must not be empty"),
        ("wiki", "read_page", {}, "refs", "required"),
        ("wiki", "read_raw", {}, "filenames", "required"),
        ("wiki", "docs_for_paths", {}, "paths", "required"),
        ("wiki", "search_sources", {}, "keywords", "required"),
        ("code-graph", "search", {}, "query", "required"),
        ("code-graph", "explore", {}, "query", "required"),
        ("code-graph", "callers", {}, "symbol", "required"),
        ("code-graph", "callees", {}, "symbol", "required"),
        ("code-graph", "impact", {}, "symbol", "required"),
        ("code-graph", "node", {"includeCode": True}, "symbol", "required"),
        # wrong types; bool is not an integer
        ("wiki", "search", {"query": 5}, "query", "expected string"),
        ("wiki", "search", {"query": "q", "limit": "5"}, "limit", "expected integer"),
        ("wiki", "search", {"query": "q", "limit": 5.0}, "limit", "expected integer"),
        ("wiki", "search", {"query": "q", "limit": True}, "limit", "expected integer"),
        ("code-graph", "node", {"symbol": "f", "line": False}, "line", "expected integer"),
        ("code-graph", "node", {"symbol": "f", "includeCode": "true"}, "includeCode", "expected boolean"),
        ("code-graph", "node", {"symbol": "f", "includeCode": 1}, "includeCode", "expected boolean"),
        ("wiki", "read_page", {"refs": "concepts/redis"}, "refs", "expected array"),
        ("wiki", "get_index", {"theme": ["a"]}, "theme", "expected string"),
        ("wiki", "search_sources", {"keywords": {"a": 1}}, "keywords", "expected array"),
        # out of range
        ("wiki", "search", {"query": "q", "limit": 0}, "limit", "must be >= 1"),
        ("wiki", "search", {"query": "q", "limit": 101}, "limit", "must be <= 100"),
        ("code-graph", "search", {"query": "q", "limit": 101}, "limit", "must be <= 100"),
        ("code-graph", "search", {"query": "q", "limit": -1}, "limit", "must be >= 1"),
        ("code-graph", "explore", {"query": "q", "maxFiles": 201}, "maxFiles", "must be <= 200"),
        ("code-graph", "explore", {"query": "q", "maxFiles": 0}, "maxFiles", "must be >= 1"),
        ("code-graph", "callers", {"symbol": "f", "limit": 201}, "limit", "must be <= 200"),
        ("code-graph", "callees", {"symbol": "f", "limit": 0}, "limit", "must be >= 1"),
        ("code-graph", "impact", {"symbol": "f", "depth": 11}, "depth", "must be <= 10"),
        ("code-graph", "impact", {"symbol": "f", "depth": 0}, "depth", "must be >= 1"),
        ("code-graph", "node", {"symbol": "f", "line": 0}, "line", "must be >= 1"),
        ("code-graph", "files", {"maxDepth": 0}, "maxDepth", "must be >= 1"),
        # enum
        ("code-graph", "search", {"query": "q", "kind": "struct"}, "kind", "must be one of function, method"),
        ("code-graph", "files", {"format": "json"}, "format", "must be one of tree, flat, grouped"),
        ("code-graph", "files", {"format": "TREE"}, "format", "must be one of"),
        # array item types and empty items
        ("wiki", "read_page", {"refs": ["a", 3]}, "refs[1]", "expected string"),
        ("wiki", "read_raw", {"filenames": [None]}, "filenames[0]", "expected string"),
        ("wiki", "docs_for_paths", {"paths": [["nested"]]}, "paths[0]", "expected string"),
        ("wiki", "search_sources", {"keywords": ["ok", 1]}, "keywords[1]", "expected string"),
        ("wiki", "read_page", {"refs": ["a", " "]}, "refs[1]", "must not be empty"),
        # item counts
        ("wiki", "read_page", {"refs": []}, "refs", "needs at least 1"),
        ("wiki", "read_page", {"refs": ["p"] * 21}, "refs", "at most 20 items"),
        ("wiki", "read_raw", {"filenames": ["f"] * 51}, "filenames", "at most 50 items"),
        ("wiki", "docs_for_paths", {"paths": []}, "paths", "needs at least 1"),
        ("wiki", "docs_for_paths", {"paths": ["p"] * 51}, "paths", "at most 50 items"),
        ("wiki", "search_sources", {"keywords": "   "}, "keywords", "needs at least 1"),
        ("wiki", "search_sources", {"keywords": ["k"] * 21}, "keywords", "at most 20 items"),
    ],
)  # fmt: skip
def test_invalid_params(kind: str, name: str, params: object, field: str, rule: str) -> None:
    with pytest.raises(ToolParamError) as err:
        validate_params(tool(kind, name), params)
    assert err.value.field == field
    assert err.value.rule.startswith(rule), err.value.rule
    assert isinstance(err.value, BadRequest) and err.value.http_status == 400
    assert err.value.message == f"invalid params: {field}: {err.value.rule}"


def test_every_required_param_is_enforced() -> None:
    """Catalogue-wide: dropping any required param from a valid call fails on exactly that param."""
    sample = {"string": "x", "integer": 1, "boolean": True, "array": ["x"]}
    checked = 0
    for kind in ("wiki", "code-graph"):
        for spec in tools_for(kind):  # type: ignore[arg-type]
            full = {n: sample[p.type] for n, p in spec.params.items() if p.required}
            validate_params(spec, full)
            for n in full:
                with pytest.raises(ToolParamError) as err:
                    validate_params(spec, {k: v for k, v in full.items() if k != n})
                assert (err.value.field, err.value.rule) == (n, "required")
                checked += 1
    assert checked == 18  # 5 wiki + 6 code-graph required params + 7 of memhub's code-graph tools


def test_every_bound_is_enforced_at_its_edge() -> None:
    """Catalogue-wide: each minimum/maximum/max_items accepts the edge value and rejects one past it."""
    sample = {"string": "x", "integer": 1, "boolean": True, "array": ["x"]}
    checked = 0
    for kind in ("wiki", "code-graph"):
        for spec in tools_for(kind):  # type: ignore[arg-type]
            base = {n: sample[p.type] for n, p in spec.params.items() if p.required}
            for n, p in spec.params.items():
                edges: list[tuple[object, object]] = []
                if p.minimum is not None:
                    edges.append((p.minimum, p.minimum - 1))
                if p.maximum is not None:
                    edges.append((p.maximum, p.maximum + 1))
                if p.max_items is not None:
                    edges.append((["x"] * p.max_items, ["x"] * (p.max_items + 1)))
                for ok, bad in edges:
                    assert validate_params(spec, {**base, n: ok})[n] == ok
                    with pytest.raises(ToolParamError) as err:
                        validate_params(spec, {**base, n: bad})
                    assert err.value.field == n
                    checked += 1
    assert checked == 22  # 6 wiki + 12 code-graph bounds + 4 of memhub's code-graph tools
