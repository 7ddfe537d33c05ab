"""`/v3/skill/search` and `/v3/skill/listing`: the skills a caller may read, ranked for a query, and the
`<available_skills>` block an agent's prompt carries.

They run like the other skill routes (memhub.api.routes.skill): data-plane authentication, every id from the
body, a body that breaks its schema answers 40001 with HTTP 200. Nothing is written. Search answers the
original's items (a skill's summary, `score`, `snippet`) plus memhub's `strategy` (which ranking answered:
`hybrid`, `fts`, `embedding`, `name` or `none`); listing answers `{mode, listing, hits}` plus memhub's
`truncated` (the lines the budget left out). Both add `notes` when they withheld a skill whose text reads like an
instruction to the agent, or when the ranking degraded.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from memhub.api.guarded import GuardedCall, GuardedRoute
from memhub.api.routes.skill import skill_ids, skill_route
from memhub.api.skill_schemas import SkillBody
from memhub.knowledge.skill.finder import SkillFinder
from memhub.knowledge.skill.listing import MAX_CHAR_BUDGET
from memhub.knowledge.skill.search import MAX_TOP_K, hit_view

QUERY_MAX_CHARS = 2048


class SkillSearchRequest(SkillBody):
    """search: rank the skills the caller may read (its agent's, or the team's with `scope: "team"`)."""

    query: Annotated[str, Field(min_length=1, max_length=QUERY_MAX_CHARS)]
    top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K)] | None = None
    mode: Literal["bm25", "embedding", "hybrid"] | None = None
    # "team" drops the agent filter: every skill of the team the caller may read.
    scope: Literal["team"] | None = None


class SkillListingRequest(SkillBody):
    """listing: the `<available_skills>` block, ranked for `query` when one is given."""

    query: Annotated[str, Field(max_length=QUERY_MAX_CHARS)] | None = None
    char_budget: Annotated[int, Field(ge=0, le=MAX_CHAR_BUDGET)] | None = None


def routes(finder: SkillFinder) -> list[GuardedRoute]:
    """The search and listing routes over one finder."""

    def search(call: GuardedCall, body: SkillSearchRequest) -> Any:
        results = finder.search(
            call.caller,
            skill_ids(body),
            body.query,
            mode=body.mode,
            top_k=body.top_k,
            team_wide=body.scope == "team",
        )
        out: dict[str, Any] = {"items": [hit_view(h) for h in results.hits], "strategy": results.strategy}
        if results.notes:
            out["notes"] = list(results.notes)
        return out

    def listing(call: GuardedCall, body: SkillListingRequest) -> Any:
        budget = finder.service.config.listing_char_budget if body.char_budget is None else body.char_budget
        return finder.listing(call.caller, skill_ids(body), body.query, budget).view()

    route = skill_route

    return [
        route("search", SkillSearchRequest, search, "Search the skills the caller may read (BM25, vectors, names)"),
        route("listing", SkillListingRequest, listing, "The <available_skills> block within a character budget"),
    ]
