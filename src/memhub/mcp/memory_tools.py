"""The memory tools: few, verb-first, each one gateway call through the SDK.

| tool | gateway call | |
|---|---|---|
| `memory_search` | `/v3/recall` (L1 memories and L0 turns, fused and ranked by the gateway) | read-only |
| `memory_remember` | `/v3/atomic/add` (one explicit L1 memory, stored as given) | additive |
| `memory_forget` | `/v3/atomic/delete` | destructive |
| `persona_read` | `/v3/core/read` | read-only |
| `scene_list` / `scene_read` | `/v3/scenario/ls` / `/v3/scenario/read` | read-only |

Arguments are checked here first (a pydantic model per tool, its JSON Schema is the tool's input schema), so a bad
one comes back as a tool error naming the field and the rule before anything is sent. Answers are JSON (text for
the model, the same object as structured content): the ids in them are what `memory_forget` takes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memhub.mcp.backend import Clients
from memhub.sdk.agent.prompt import trusted_memories

MAX_QUERY_CHARS = 2048
MAX_CONTENT_CHARS = 8192
MAX_SEARCH_LIMIT = 50
MAX_FORGET_IDS = 100
MAX_ID_CHARS = 128

MemoryType = Literal["persona", "episodic", "instruction", "work_fact", "work_task", "work_method", "work_artifact"]


class Args(BaseModel):
    """Tool arguments: JSON types as sent (no coercion of "5" to 5), unknown names refused."""

    model_config = ConfigDict(strict=True, extra="forbid")


class SearchArgs(Args):
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")]
    limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_LIMIT, description="The most results to return.")] = 10


class RememberArgs(Args):
    content: Annotated[
        str, Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="The memory, as one self-contained fact.")
    ]
    type: Annotated[
        MemoryType,
        Field(
            description=(
                "persona: about the user (preferences, background); episodic: something that happened; "
                "instruction: a rule for the agent; work_fact / work_task / work_method / work_artifact: "
                "project knowledge, open tasks, how things are done, produced artifacts."
            )
        ),
    ] = "persona"


class ForgetArgs(Args):
    ids: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]],
        Field(min_length=1, max_length=MAX_FORGET_IDS, description="Ids of L1 memories, as memory_search gives."),
    ]


class NoArgs(Args):
    pass


class SceneListArgs(Args):
    path_prefix: Annotated[
        str | None, Field(max_length=512, description="Only scenes under this directory, e.g. `scene_blocks/`.")
    ] = None


class SceneReadArgs(Args):
    path: Annotated[str, Field(min_length=1, max_length=512, description="A path from scene_list.")]


class ToolFailure(Exception):
    """A failure the model can act on: returned as an `is_error` result with this message."""


def argument_errors(exc: ValidationError) -> str:
    """`field: rule` for each problem, e.g. `limit: Input should be less than or equal to 50`."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


Handler = Callable[[Clients, Any], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class FixedTool:
    tool: types.Tool
    args: type[Args]
    run: Handler


def _schema(model: type[Args]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


async def _search(clients: Clients, args: SearchArgs) -> dict[str, Any]:
    answer = await clients.memory.recall(args.query, include_persona=False, include_scenes=False)
    hits = []
    for item in trusted_memories(answer.get("memories") or [])[: args.limit]:
        hit = {k: item.get(k) for k in ("id", "layer", "type", "role", "content", "timestamp", "score")}
        hits.append({k: v for k, v in hit.items() if v is not None})
    return {"memories": hits, "count": len(hits)}


async def _remember(clients: Clients, args: RememberArgs) -> dict[str, Any]:
    record = await clients.memory.add_atomic(args.content, args.type)
    return {"id": record.get("id"), "type": record.get("type"), "content": record.get("content"), "stored": True}


async def _forget(clients: Clients, args: ForgetArgs) -> dict[str, Any]:
    unique = list(dict.fromkeys(i.strip() for i in args.ids if i.strip()))
    if not unique:
        raise ToolFailure("ids: every id is blank; give ids from memory_search")
    answer = await clients.memory.delete_atomic(unique)
    deleted = int(answer.get("deleted_count") or 0)
    if deleted == 0:
        # Nothing matched: the model must not believe it forgot something.
        raise ToolFailure("ids: no memory with these ids exists for this user; nothing was deleted")
    out: dict[str, Any] = {"deleted_count": deleted, "requested": len(unique)}
    if deleted < len(unique):
        out["note"] = f"{len(unique) - deleted} of the ids matched no memory and were not deleted"
    return out


async def _persona(clients: Clients, args: NoArgs) -> dict[str, Any]:
    answer = await clients.memory.read_core()
    content = answer.get("content")
    return {"persona": content, "exists": bool(content)}


async def _scene_list(clients: Clients, args: SceneListArgs) -> dict[str, Any]:
    answer = await clients.memory.list_scenarios(path_prefix=args.path_prefix)
    entries = [e for e in answer.get("entries") or [] if isinstance(e, Mapping)]
    return {"entries": entries, "count": len(entries)}


async def _scene_read(clients: Clients, args: SceneReadArgs) -> dict[str, Any]:
    answer = await clients.memory.read_scenario(args.path)
    if answer.get("content") is None:
        raise ToolFailure(f"path: no scene file at {args.path!r}; scene_list gives the paths")
    return {"path": args.path, "content": answer["content"]}


def tool_definition(
    name: str, description: str, model: type[Args], *, read_only: bool, destructive: bool = False
) -> types.Tool:
    """An MCP tool whose input schema is the arguments model's; annotated read-only or (maybe) destructive."""
    return types.Tool(
        name=name,
        description=description,
        input_schema=_schema(model),
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=None if read_only else destructive,
            idempotent_hint=True if read_only else None,
            open_world_hint=False,
        ),
    )


MEMORY_TOOLS: dict[str, FixedTool] = {
    t.tool.name: t
    for t in (
        FixedTool(
            tool_definition(
                "memory_search",
                "Search this user's memory: distilled memories (L1) and past conversation turns (L0), best first. "
                "Use it before answering anything that may depend on what the user said or decided before.",
                SearchArgs,
                read_only=True,
            ),
            SearchArgs,
            _search,
        ),
        FixedTool(
            tool_definition(
                "memory_remember",
                "Store one explicit memory for this user, as given (e.g. a preference or a rule they stated). "
                "One self-contained fact per call.",
                RememberArgs,
                read_only=False,
            ),
            RememberArgs,
            _remember,
        ),
        FixedTool(
            tool_definition(
                "memory_forget",
                "Delete memories by id (ids from memory_search, layer l1). Cannot be undone.",
                ForgetArgs,
                read_only=False,
                destructive=True,
            ),
            ForgetArgs,
            _forget,
        ),
        FixedTool(
            tool_definition(
                "persona_read", "Read the user's persona: who they are and how they work.", NoArgs, read_only=True
            ),
            NoArgs,
            _persona,
        ),
        FixedTool(
            tool_definition(
                "scene_list",
                "List the scene memory files (summaries of recurring topics), with their paths.",
                SceneListArgs,
                read_only=True,
            ),
            SceneListArgs,
            _scene_list,
        ),
        FixedTool(
            tool_definition(
                "scene_read", "Read one scene memory file in full, by its path.", SceneReadArgs, read_only=True
            ),
            SceneReadArgs,
            _scene_read,
        ),
    )
}


def result(data: Mapping[str, Any]) -> types.CallToolResult:
    """A successful tool result: the JSON for the model, and the same object as structured content."""
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))], structured_content=dict(data)
    )


def failure(message: str) -> types.CallToolResult:
    """A tool error the model reads and can act on."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
