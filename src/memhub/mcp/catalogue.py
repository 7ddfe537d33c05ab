"""Knowledge tools as MCP tools: one per `tools/list` entry of each resource the caller is offered.

A tool's MCP name is derived from the knowledge id and the catalogue's tool name alone (`wiki-ab12cd34__search`),
so it is the same in every session and on every server. Hosts are stricter than MCP's own rule (Claude's API takes
`[A-Za-z0-9_-]{1,64}`, and Claude Code prefixes `mcp__<server>__`), so a name is kept to that alphabet and to
`MAX_NAME_CHARS`; one that had to be changed or shortened ends with a digest of the original pair, which keeps
distinct pairs distinct. Knowledge ids contain no `__` (`wiki-…`, `cg-…`, `skl-…`), and no memory tool does
either, so a plain name splits back into its pair without a lookup.

Every catalogue tool is a query (the gateway keeps writes behind the registry and skill routes): each is
annotated read-only and closed-world.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

SEPARATOR = "__"
MAX_NAME_CHARS = 48  # leaves room for a host's `mcp__memhub__` prefix under a 64-character limit
DIGEST_CHARS = 8
_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_JSON_TYPES = {"string", "integer", "boolean", "array", "number", "object"}
MAX_LABEL_CHARS = 80


@dataclass(frozen=True, slots=True)
class KnowledgeTool:
    """One offered tool: where it is called and how it is shown."""

    knowledge_id: str
    tool_name: str
    tool: types.Tool


def tool_name(knowledge_id: str, name: str) -> str:
    """The stable MCP name of `name` on resource `knowledge_id`."""
    plain = f"{knowledge_id}{SEPARATOR}{name}"
    safe = _ALLOWED.sub("_", plain)
    if safe == plain and len(plain) <= MAX_NAME_CHARS and split_name(plain) == (knowledge_id, name):
        return plain
    digest = hashlib.sha256(f"{knowledge_id}\x00{name}".encode()).hexdigest()[:DIGEST_CHARS]
    # Without a `__` a digest name never splits back into a (wrong) pair: it is found in the listing instead.
    readable = re.sub("_{2,}", "_", safe)[: MAX_NAME_CHARS - DIGEST_CHARS - 1].rstrip("_")
    return f"{readable}-{digest}"


def split_name(name: str) -> tuple[str, str] | None:
    """The (knowledge id, tool name) of a plain name, or None (a memory tool's name, or a digest name)."""
    knowledge_id, sep, tool = name.partition(SEPARATOR)
    if not sep or not knowledge_id or not tool or SEPARATOR in tool or "_" in knowledge_id:
        return None
    return knowledge_id, tool


def input_schema(params: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema for the catalogue's `{param: {type, required?, description?, default?, enum?}}`.

    Unknown params are refused by the gateway, so the schema says so (`additionalProperties: false`); every array
    of the catalogue holds strings unless its entry names another item type.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, spec in params.items():
        if not isinstance(spec, Mapping):
            continue
        kind = spec.get("type") if spec.get("type") in _JSON_TYPES else "string"
        prop: dict[str, Any] = {"type": kind}
        if kind == "array":
            item = spec.get("items")
            prop["items"] = {"type": item if item in _JSON_TYPES else "string"}
        for key in ("description", "default", "enum"):
            if spec.get(key) is not None:
                prop[key] = spec[key]
        properties[str(name)] = prop
        if spec.get("required") is True:
            required.append(str(name))
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _label(text: object) -> str:
    """A registry-supplied name on one line, clipped: it lands in every tool description the model reads."""
    one = " ".join(str(text or "").split())
    return one if len(one) <= MAX_LABEL_CHARS else one[: MAX_LABEL_CHARS - 1].rstrip() + "…"


def resource_tools(listing: Mapping[str, Any]) -> list[KnowledgeTool]:
    """The MCP tools of one `/v3/tools/list` answer."""
    knowledge_id = str(listing.get("knowledge_id") or "")
    if not knowledge_id:
        return []
    label = _label(listing.get("name")) or knowledge_id
    kind = _label(listing.get("type")) or "knowledge"
    out: list[KnowledgeTool] = []
    for entry in listing.get("tools") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            continue
        name = entry["name"]
        description = f"[{kind} “{label}” ({knowledge_id})] {entry.get('description') or name}"
        tool = types.Tool(
            name=tool_name(knowledge_id, name),
            title=f"{label}: {name}",
            description=description,
            input_schema=input_schema(entry.get("params") or {}),
            annotations=types.ToolAnnotations(
                title=f"{label}: {name}", read_only_hint=True, idempotent_hint=True, open_world_hint=False
            ),
        )
        out.append(KnowledgeTool(knowledge_id, name, tool))
    return out
