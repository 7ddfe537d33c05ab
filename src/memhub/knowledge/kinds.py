"""The registered kinds of knowledge resource, in the order every listing uses (tools/list types, routes,
asset types). A new kind adds its `ResourceKind` here and its service class in memhub.knowledge.services."""

from __future__ import annotations

import re

from memhub.errors import BadRequest
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.tools import ToolSpec, UnknownTool
from memhub.knowledge.wiki.kind import WIKI

KINDS: tuple[ResourceKind, ...] = (WIKI, CODE_GRAPH)

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
ASSET_TYPES: tuple[str, ...] = tuple(k.asset_type for k in KINDS)
_BY_NAME = {k.name: k for k in KINDS}
_BY_PREFIX = {k.id_prefix: k for k in KINDS}
# Any registered kind's id: the kind comes from the prefix, as in the reference.
KNOWLEDGE_ID_RE = re.compile(rf"^({'|'.join(re.escape(k.id_prefix) for k in KINDS)})-[0-9a-z]{{8}}$")
_EXPECTED_IDS = " or ".join(f"{k.id_prefix}-…" for k in KINDS)


def kind_named(name: str) -> ResourceKind:
    """The kind whose wire name is `name`; ValueError for any other."""
    kind = _BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"unknown knowledge type: {name!r}")
    return kind


def kind_of(knowledge_id: str) -> ResourceKind:
    """The kind of a knowledge id from its prefix; 400 for anything that is no registered kind's id."""
    match = KNOWLEDGE_ID_RE.match(knowledge_id)
    if not match:
        raise BadRequest(f"knowledge_id: invalid knowledge_id format (expected {_EXPECTED_IDS} and 8 of [0-9a-z])")
    return _BY_PREFIX[match.group(1)]


def tools_for(kind: str) -> list[ToolSpec]:
    """The tools of a resource kind (by wire name), in catalogue order."""
    return list(kind_named(kind).tools)


def get_tool(kind: str, tool_name: str, resource_id: str) -> ToolSpec:
    """The named tool of a resource kind, or UnknownTool (403) naming the resource."""
    found = _BY_NAME.get(kind)
    tool = found.tools_by_name.get(tool_name) if found is not None and isinstance(tool_name, str) else None
    if tool is None:
        raise UnknownTool(str(tool_name), kind, resource_id)
    return tool
