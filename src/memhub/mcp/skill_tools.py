"""The skill tools: find a procedure the team has written down, read its SKILL.md and its files (all read-only).

| tool | gateway call |
|---|---|
| `skill_search` | `/v3/skill/search` (the skills this agent may use; `scope: team` widens to the team's) |
| `skill_view` | `/v3/skill/get` (SKILL.md and the file manifest, of the head or one version) |
| `skill_read_file` | `/v3/skill/files/read` (one file by its manifest path, as text or base64) |

Writing skills stays behind the skill routes and the mining pipeline, as in the original's proxy, which offers
agents only these reads. Each skill is one tool argument (`skill_id`), never a tool of its own: a team may hold
hundreds of skills, and a host's tool list must stay short.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memhub.mcp.backend import Clients
from memhub.mcp.memory_tools import MAX_QUERY_CHARS, Args, FixedTool, ToolFailure, tool_definition

MAX_SKILL_HITS = 20
MAX_ID_CHARS = 128
MAX_PATH_CHARS = 512
SUMMARY_FIELDS = ("skill_id", "name", "description", "version", "score", "snippet")


class SkillSearchArgs(Args):
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The task to find a skill for.")]
    limit: Annotated[int, Field(ge=1, le=MAX_SKILL_HITS, description="The most skills to return.")] = 5
    scope: Annotated[
        Literal["agent", "team"],
        Field(description="agent: the skills this agent may use; team: every skill of the team the user may read."),
    ] = "agent"


SkillId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, description="A skill id from skill_search.")]
Version = Annotated[int | None, Field(ge=1, description="A past version to read (default: the current one).")]


class SkillViewArgs(Args):
    skill_id: SkillId
    version: Version = None


class SkillReadFileArgs(Args):
    skill_id: SkillId
    path: Annotated[
        str, Field(min_length=1, max_length=MAX_PATH_CHARS, description="A path from skill_view's manifest.")
    ]
    version: Version = None
    encoding: Annotated[
        Literal["utf-8", "base64"], Field(description="utf-8 for text files, base64 for binary ones.")
    ] = "utf-8"


async def _search(clients: Clients, args: SkillSearchArgs) -> dict[str, Any]:
    scope = "team" if args.scope == "team" else None
    answer = await clients.skills.search(args.query, top_k=args.limit, scope=scope)
    hits = [{k: item[k] for k in SUMMARY_FIELDS if item.get(k) is not None} for item in answer.get("items") or []]
    return {"skills": hits, "count": len(hits)}


async def _view(clients: Clients, args: SkillViewArgs) -> dict[str, Any]:
    detail = await clients.skills.get(args.skill_id, version=args.version)
    keep = ("skill_id", "name", "description", "version", "content", "manifest")
    return {k: detail[k] for k in keep if k in detail}


async def _read_file(clients: Clients, args: SkillReadFileArgs) -> dict[str, Any]:
    answer = await clients.skills.read_file(args.skill_id, args.path, version=args.version, encoding=args.encoding)
    if answer.get("content") is None:
        raise ToolFailure(f"path: the skill has no file {args.path!r}; skill_view lists its files")
    return dict(answer)


SKILL_TOOLS: tuple[FixedTool, ...] = (
    FixedTool(
        tool_definition(
            "skill_search",
            "Find the team's written procedures (skills) for a task: how they deploy, review, release, debug. "
            "Look here before working out a multi-step procedure yourself; then read one with skill_view.",
            SkillSearchArgs,
            read_only=True,
        ),
        SkillSearchArgs,
        _search,
    ),
    FixedTool(
        tool_definition(
            "skill_view",
            "Read a skill's SKILL.md (its instructions) and the list of its files.",
            SkillViewArgs,
            read_only=True,
        ),
        SkillViewArgs,
        _view,
    ),
    FixedTool(
        tool_definition(
            "skill_read_file",
            "Read one file of a skill (a script, a template, a reference) by its path in skill_view's list.",
            SkillReadFileArgs,
            read_only=True,
        ),
        SkillReadFileArgs,
        _read_file,
    ),
)
