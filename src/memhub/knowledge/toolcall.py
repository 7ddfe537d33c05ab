"""`/v3/tools/list` and `/v3/tools/call`: one entry point for every knowledge resource an agent may use.

The resource kind comes from the id's prefix (`wiki-…`, `cg-…`), as in the reference. Order of checks:
id format (400) → the resource, as the caller may see it (404) → the tool (403) → its params (400).
A tool that runs but cannot answer (a resource that never built, an unknown theme or symbol) is a success envelope
whose data says `isError: true` with a readable `text`, so an agent can tell "nothing found" from
"could not look". Reads served from the last good generation while a rebuild runs say `stale: true`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from memhub.errors import BadRequest, NotFound
from memhub.knowledge.codegraph.service import CodeGraphService
from memhub.knowledge.codegraph.service import not_built_message as code_graph_not_built
from memhub.knowledge.tools import Language, ResourceKind, get_tool, tool_list_view, tools_for, validate_params
from memhub.knowledge.wiki.service import WikiService, not_built_message, stale
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.meta.caller import Caller

KNOWLEDGE_ID_RE = re.compile(r"^(wiki|cg)-[0-9a-z]{8}$")
NOT_FOUND = "knowledge resource not found"
SOURCE_HITS = 10


def tool_error(text: str, **extra: Any) -> dict[str, Any]:
    """A tool-level failure: still `code: 0`, with `data.isError` and a message an agent can act on."""
    return {"text": text, "isError": True, **extra}


def resource_kind(knowledge_id: str) -> ResourceKind:
    """`wiki` or `code-graph` from the id's prefix; 400 for anything else."""
    match = KNOWLEDGE_ID_RE.match(knowledge_id)
    if not match:
        raise BadRequest("knowledge_id: invalid knowledge_id format (expected wiki-… or cg-… and 8 of [0-9a-z])")
    return "wiki" if match.group(1) == "wiki" else "code-graph"


SnapshotTool = Callable[[WikiSnapshot, dict[str, Any]], dict[str, Any] | None]

# Tools answered from the built index; list_raw / read_raw / get_info work without one.
_SNAPSHOT_TOOLS: dict[str, SnapshotTool] = {
    "search": lambda s, p: s.search(p["query"], p["limit"]),
    "list_pages": lambda s, p: s.list_pages(),
    "read_page": lambda s, p: s.read_pages(p["refs"]),
    "get_graph": lambda s, p: s.graph(),
    "list_themes": lambda s, p: s.list_themes(),
    "get_index": lambda s, p: s.get_index(p.get("theme")),
    "docs_for_paths": lambda s, p: s.docs_for_paths(p["paths"]),
    "search_sources": lambda s, p: s.search_sources(p["keywords"], SOURCE_HITS),
}


@dataclass(frozen=True, slots=True)
class KnowledgeTools:
    """Tool discovery and dispatch over the knowledge services."""

    wikis: WikiService
    code_graphs: CodeGraphService
    language: Language = "en"

    def _resource(self, caller: Caller, knowledge_id: str) -> tuple[ResourceKind, dict[str, Any]]:
        kind = resource_kind(knowledge_id)
        try:
            if kind == "code-graph":
                return kind, self.code_graphs.row(caller, knowledge_id)
            return kind, self.wikis.row(caller, knowledge_id)
        except NotFound:
            raise NotFound(NOT_FOUND) from None

    def list(self, caller: Caller, knowledge_id: str, language: Language | None = None) -> dict[str, Any]:
        """The resource's identity and its tools with their param schemas."""
        kind, row = self._resource(caller, knowledge_id)
        if kind == "code-graph":
            detail = self.code_graphs.detail(row)
            name = detail["repo_name"] or detail["repo_url"]  # the reference: repo_name || repo_url
        else:
            detail = self.wikis.detail(row)
            name = detail["name"]
        return {
            "knowledge_id": knowledge_id,
            "type": kind,
            "name": name,
            "summary": detail["summary"],
            "status": detail["status"],
            "stale": detail["stale"],
            "tools": tool_list_view(tools_for(kind), language or self.language),
        }

    def call(self, caller: Caller, knowledge_id: str, tool_name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run one tool; 403 for a tool the resource does not have, 400 for params that break its schema."""
        kind, row = self._resource(caller, knowledge_id)
        spec = get_tool(kind, tool_name, knowledge_id)
        checked = validate_params(spec, params)
        if kind == "code-graph":
            return self._call_code_graph(caller, row, tool_name, checked)
        if tool_name == "get_info":
            return {**self.wikis.detail(row), "service_id": caller.service_id, "version": row["version"]}
        if tool_name == "list_raw":
            return self.wikis.raw_ls(caller, knowledge_id)
        if tool_name == "read_raw":
            return self.wikis.raw_read(caller, knowledge_id, checked["filenames"])
        snapshot = self.wikis.snapshot_of(caller.service_id, row)
        if snapshot is None:
            return tool_error(not_built_message(row), status=row["status"])
        data = _SNAPSHOT_TOOLS[tool_name](snapshot, checked)
        if data is None:  # get_index of a theme the index does not have
            return tool_error(f"unknown theme {checked.get('theme')!r}; call list_themes for the theme ids")
        return {**data, "stale": stale(row)}

    def _call_code_graph(
        self, caller: Caller, row: dict[str, Any], tool_name: str, checked: dict[str, Any]
    ) -> dict[str, Any]:
        if tool_name == "get_info":
            # The reference answers with its raw row (integer version, service id); memhub with the detail.
            return {**self.code_graphs.detail(row), "service_id": caller.service_id, "version": row["version"]}
        data = self.code_graphs.run_query(caller.service_id, row, tool_name, checked)
        if data is None:
            return tool_error(code_graph_not_built(row), status=row["status"])
        return data
