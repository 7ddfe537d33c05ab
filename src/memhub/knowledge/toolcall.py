"""`/v3/tools/list` and `/v3/tools/call`: one entry point for every knowledge resource an agent may use.

The resource kind comes from the id's prefix (`wiki-…`, `cg-…`: memhub.knowledge.kinds), as in the reference.
Order of checks: id format (400) → the resource, as the caller may see it (404) → the tool (403) → its params
(400). A tool that runs but cannot answer (a resource that never built, an unknown theme or symbol) is a
success envelope whose data says `isError: true` with a readable `text`, so an agent can tell "nothing found"
from "could not look". Reads served from the last good generation while a rebuild runs say `stale: true`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memhub.errors import NotFound
from memhub.knowledge.kind import KindService, ResourceKind
from memhub.knowledge.kinds import get_tool, kind_of
from memhub.knowledge.tools import Language, tool_list_view, validate_params
from memhub.meta.caller import Caller

NOT_FOUND = "knowledge resource not found"


@dataclass(frozen=True, slots=True)
class KnowledgeTools:
    """Tool discovery and dispatch over the services of every registered kind."""

    services: Mapping[str, KindService]  # by kind name
    language: Language = "en"

    def _resource(self, caller: Caller, knowledge_id: str) -> tuple[ResourceKind, KindService, dict[str, Any]]:
        kind = kind_of(knowledge_id)
        service = self.services[kind.name]
        try:
            return kind, service, service.row(caller, knowledge_id)
        except NotFound:
            raise NotFound(NOT_FOUND) from None

    def list(self, caller: Caller, knowledge_id: str, language: Language | None = None) -> dict[str, Any]:
        """The resource's identity and its tools with their param schemas."""
        kind, service, row = self._resource(caller, knowledge_id)
        view = service.tool_view(row)
        return {
            "knowledge_id": knowledge_id,
            "type": kind.name,
            "name": view["name"],
            "summary": view["summary"],
            "status": view["status"],
            "stale": view["stale"],
            "tools": tool_list_view(kind.tools, language or self.language),
        }

    def call(self, caller: Caller, knowledge_id: str, tool_name: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Run one tool; 403 for a tool the resource does not have, 400 for params that break its schema."""
        kind, service, row = self._resource(caller, knowledge_id)
        spec = get_tool(kind.name, tool_name, knowledge_id)
        checked = validate_params(spec, params)
        return service.call_tool(caller, row, tool_name, checked)
