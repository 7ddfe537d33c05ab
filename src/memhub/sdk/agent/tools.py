"""Tool definitions the model can call, in OpenAI and Anthropic formats, and how their results read.

The memory tools keep the original plugin's names and parameters so prompts written for it
work unchanged; `tdai_read_file` is the documented name and the plugin's `tdai_read_cos` is accepted as
an alias. Knowledge tools come from `/v3/tools/list` and are named `<tool>__<knowledge id>` so two
resources offering the same tool stay distinct.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memhub.formats.fence import escape_tags
from memhub.sdk.agent.prompt import clip, trusted_memories

ToolFormat = Literal["openai", "anthropic"]

MEMORY_SEARCH = "tdai_memory_search"
CONVERSATION_SEARCH = "tdai_conversation_search"
READ_FILE = "tdai_read_file"
READ_FILE_ALIASES = frozenset({READ_FILE, "tdai_read_cos"})
SEARCH_TOOLS = frozenset({MEMORY_SEARCH, CONVERSATION_SEARCH})
MAX_SEARCH_LIMIT = 20
_TOOL_NAME_LIMIT = 64  # OpenAI: ^[a-zA-Z0-9_-]{1,64}$


class ToolArgumentError(ValueError):
    """A tool call's arguments broke the tool's schema; the message names the argument and the rule."""


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One callable tool: name, description and a JSON-schema object for its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]
    knowledge_id: str | None = None
    remote_name: str | None = None  # the tool's own name at /v3/tools/call
    aliases: frozenset[str] = field(default_factory=frozenset)

    def as_openai(self) -> dict[str, Any]:
        """Chat Completions `tools[]` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def as_anthropic(self) -> dict[str, Any]:
        """Messages API `tools[]` entry."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def render(self, fmt: ToolFormat) -> dict[str, Any]:
        """This tool in the given provider format."""
        if fmt == "openai":
            return self.as_openai()
        if fmt == "anthropic":
            return self.as_anthropic()
        raise ValueError(f"format: must be 'openai' or 'anthropic' (got {fmt!r})")


def _schema(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


MEMORY_TOOLS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        MEMORY_SEARCH,
        "Search the user's long-term structured memories (L1): preferences, facts, past events, instructions. "
        "At most 3 memory/conversation searches per turn in total.",
        _schema(
            {
                "query": {"type": "string", "description": "What to look for, in the user's words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 5},
                "type": {"type": "string", "description": "Only memories of this type (e.g. preference, event)."},
            },
            ["query"],
        ),
    ),
    ToolDefinition(
        CONVERSATION_SEARCH,
        "Search the raw past conversation (L0) for exact wording, timelines and details, or to verify a memory. "
        "At most 3 memory/conversation searches per turn in total.",
        _schema(
            {
                "query": {"type": "string", "description": "Words to find in past messages."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 5},
                "session_key": {"type": "string", "description": "Only this conversation session."},
            },
            ["query"],
        ),
    ),
    ToolDefinition(
        READ_FILE,
        "Read a memory file in full: a scene by the path listed under Scene Navigation (e.g. scene_blocks/x.md), "
        "or persona.md for the user's core profile.",
        _schema(
            {"path": {"type": "string", "description": "Relative path, e.g. scene_blocks/x.md or persona.md."}},
            ["path"],
        ),
        aliases=READ_FILE_ALIASES,
    ),
)

_JSON_TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array", "number": "number"}


def knowledge_tool_name(tool: str, knowledge_id: str) -> str:
    """`<tool>__<knowledge id>` reduced to the characters and length provider APIs accept."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", f"{tool}__{knowledge_id}")
    return name[:_TOOL_NAME_LIMIT]


def knowledge_tools(knowledge_id: str, listing: Mapping[str, Any]) -> list[ToolDefinition]:
    """Definitions for one resource's `/v3/tools/list` answer (`{tools: [{name, description, params}]}`)."""
    out: list[ToolDefinition] = []
    for tool in listing.get("tools") or []:
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            continue
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, spec in (tool.get("params") or {}).items():
            spec = spec if isinstance(spec, Mapping) else {}
            prop: dict[str, Any] = {"type": _JSON_TYPES.get(str(spec.get("type")), "string")}
            if prop["type"] == "array":
                prop["items"] = {"type": "string"}
            for key in ("description", "default", "enum"):
                if key in spec:
                    prop[key] = spec[key]
            properties[pname] = prop
            if spec.get("required"):
                required.append(pname)
        description = f"[{knowledge_id}] {tool.get('description') or ''}".strip()
        out.append(
            ToolDefinition(
                knowledge_tool_name(tool["name"], knowledge_id),
                description,
                {"type": "object", "properties": properties, "required": required},
                knowledge_id=knowledge_id,
                remote_name=tool["name"],
            )
        )
    return out


def parse_arguments(raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool-call arguments as a dict: OpenAI sends a JSON string, Anthropic an object."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(f"arguments: must be a JSON object ({exc.msg})") from None
    if not isinstance(raw, Mapping):
        raise ToolArgumentError("arguments: must be a JSON object")
    return dict(raw)


def require_text(args: Mapping[str, Any], name: str, limit: int) -> str:
    """A required non-empty string argument, clipped to `limit` characters."""
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"{name}: required, a non-empty string")
    return value.strip()[:limit]


def optional_text(args: Mapping[str, Any], name: str, limit: int) -> str | None:
    """An optional string argument (None when absent or blank)."""
    value = args.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ToolArgumentError(f"{name}: must be a string")
    return value.strip()[:limit]


def search_limit(args: Mapping[str, Any]) -> int:
    """`limit` between 1 and 20, default 5; a float like 5.0 or a numeric string from a model is accepted."""
    value = args.get("limit", 5)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolArgumentError("limit: must be an integer")
    return max(1, min(MAX_SEARCH_LIMIT, value))


def memory_file_path(args: Mapping[str, Any]) -> str:
    """The `path` of a read: relative, no `..` segment (the original plugin's rule)."""
    path = require_text(args, "path", 512)
    if path.startswith(("/", "\\")) or ".." in re.split(r"[\\/]", path):
        raise ToolArgumentError("path: must be a relative path without '..'")
    return path


def format_memory_hits(data: Mapping[str, Any]) -> str:
    """`tdai_memory_search` text: a count line then `- **[type]** (score: x.xxx) content` lines.

    Memories flagged `injection_suspect` are withheld (the answer says how many), and our prompt tags in the rest
    are escaped, as in recall's block.
    """
    found = [i for i in data.get("items") or [] if isinstance(i, Mapping)]
    items = trusted_memories(found)
    withheld = len(found) - len(items)
    note = f" ({withheld} withheld: flagged as possible prompt injection)" if withheld else ""
    if not items:
        return f"No matching memories found.{note}"
    lines = [f"Found {len(items)} matching memories{note}:"]
    for item in items:
        score = item.get("score")
        score_text = f" (score: {float(score):.3f})" if isinstance(score, int | float) else ""
        content = escape_tags(" ".join(str(item.get("content") or "").split()))
        lines.append(f"- **[{item.get('type') or 'memory'}]**{score_text} {content}")
    return "\n".join(lines)


def format_conversation_hits(data: Mapping[str, Any]) -> str:
    """`tdai_conversation_search` text: `**[role]** [timestamp] (score)` blocks with the message text."""
    messages = [m for m in data.get("messages") or data.get("items") or [] if isinstance(m, Mapping)]
    if not messages:
        return "No matching conversation found."
    blocks = [f"Found {len(messages)} matching messages:"]
    for m in messages:
        score = m.get("score")
        score_text = f" (score: {float(score):.3f})" if isinstance(score, int | float) else ""
        stamp = m.get("message_time") or m.get("timestamp") or ""
        blocks.append(f"**[{m.get('role') or '?'}]** [{stamp}]{score_text}\n{m.get('content') or ''}")
    return "\n\n".join(blocks)


def format_file(path: str, content: str | None) -> str:
    """A memory file's text, or a not-found line the model can act on."""
    if content is None or not content.strip():
        return f"File not found or empty: {path}"
    return content


def format_knowledge_result(result: Any, limit: int) -> str:
    """A knowledge tool's result as compact JSON text, within `limit` characters."""
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return clip(text, limit)
