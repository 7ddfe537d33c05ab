"""The registered kinds of knowledge resource, in the order every listing uses (tools/list types, routes,
asset types). A new kind adds its `ResourceKind` here and its service class in memhub.knowledge.services.

`KINDS` is every kind `/v3/tools/*` dispatches to; `REGISTRY_KINDS` the ones the /v3/knowledge registry holds
(a `knowledge/create` type, offered in `<knowledge_tools>`, managed by the shared knowledge routes).
"""

from __future__ import annotations

import re

from memhub.errors import BadRequest
from memhub.knowledge.codegraph.kind import CODE_GRAPH
from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.skill.kind import SKILL
from memhub.knowledge.tools import ToolSpec, UnknownTool
from memhub.knowledge.wiki.kind import WIKI

KINDS: tuple[ResourceKind, ...] = (WIKI, CODE_GRAPH, SKILL)

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
REGISTRY_KINDS: tuple[ResourceKind, ...] = tuple(k for k in KINDS if k.in_registry)
REGISTRY_TYPES: tuple[str, ...] = tuple(k.name for k in REGISTRY_KINDS)
REGISTRY_ASSET_TYPES: tuple[str, ...] = tuple(k.asset_type for k in REGISTRY_KINDS)
_BY_NAME = {k.name: k for k in KINDS}
# Any registered kind's id: the kind comes from the prefix, as in the reference.
KNOWLEDGE_ID_RE = re.compile(rf"^(?:{'|'.join(k.id_body for k in KINDS)})$")


def _expected_ids() -> str:
    """`wiki-… or cg-… and 8 of [0-9a-z], or skl-… and 12 of [0-9A-Za-z]`: the prefixes grouped by id rule."""
    rules: dict[str, list[str]] = {}
    for k in KINDS:
        rules.setdefault(k.id_rule.replace(" characters of ", " of "), []).append(f"{k.id_prefix}-…")
    return ", or ".join(f"{' or '.join(prefixes)} and {rule}" for rule, prefixes in rules.items())


_EXPECTED_IDS = _expected_ids()


def kind_named(name: str) -> ResourceKind:
    """The kind whose wire name is `name`; ValueError for any other."""
    kind = _BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        raise ValueError(f"unknown knowledge type: {name!r}")
    return kind


def kind_of(knowledge_id: str) -> ResourceKind:
    """The kind of a knowledge id from its prefix; 400 for anything that is no registered kind's id."""
    for kind in KINDS:
        if kind.id_re.match(knowledge_id):
            return kind
    raise BadRequest(f"knowledge_id: invalid knowledge_id format (expected {_EXPECTED_IDS})")


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
