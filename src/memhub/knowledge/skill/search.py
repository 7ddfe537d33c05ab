"""Skill search: the heads a caller may read, ranked for a query by the same hybrid engine as L0 and L1.

Three channels, as in the original's router design: BM25 over name, description and content; cosine over the
embedded name and description; and a name fast path. A skill whose name (at least four characters) occurs in the
query is what the user asked for by name, so it comes first whatever the other channels say; the fused ranking
follows without repeating it. `mode` picks the channels: `bm25` (lexical only), `embedding` (vectors only) or
`hybrid` (both). A mode that needs vectors falls back to BM25 when no embedder is configured or the
provider fails, and the `strategy` label says which ranking answered (the original downgraded silently).

Every channel is confined to the caller's filter inside the store (memhub.model.skills.SkillFilter): a skill the
caller may not read is never a candidate, so no top-k is cut before the access check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memhub.index.tokenize import query_terms
from memhub.knowledge.skill.config import SearchMode
from memhub.knowledge.skill.views import summary
from memhub.memory.embedding import EmbeddingRuntime
from memhub.model.query import QueryTerms
from memhub.model.skills import SkillFilter, SkillVersion
from memhub.retrieval.hybrid import RecordView, SearchOptions, SearchOutcome, hybrid_search
from memhub.store.skills import SkillStore
from memhub.timeutil import now_ms

SEARCH_MODES: tuple[SearchMode, ...] = ("bm25", "embedding", "hybrid")
DEFAULT_TOP_K = 20
MAX_TOP_K = 50
# The original's fast-path threshold: shorter names ("git", "db") occur inside too many ordinary queries.
NAME_MATCH_MIN_LENGTH = 4
SNIPPET_BEFORE = 60
SNIPPET_AFTER = 140

SKILL_VIEW: RecordView[SkillVersion] = RecordView(
    key=lambda s: s.skill_id,
    text=lambda s: f"{s.name}\n{s.description}",
    time_ms=lambda s: s.updated_ms,
)


@dataclass(frozen=True, slots=True)
class SkillHit:
    """One ranked skill: its head, its score and a short excerpt for the reader."""

    skill: SkillVersion
    score: float
    snippet: str
    by_name: bool = False  # found by the name fast path


@dataclass(frozen=True, slots=True)
class SkillResults:
    """Ranked hits and how they were ranked (`hybrid`, `fts`, `embedding` or `none`)."""

    hits: list[SkillHit]
    strategy: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _SkillChannels:
    """The skill store's search channels for one tenant and filter."""

    store: SkillStore
    service_id: str
    flt: SkillFilter
    terms: QueryTerms

    def lexical(self, limit: int) -> list[tuple[SkillVersion, float]]:
        return self.store.search_lexical(self.service_id, self.flt, self.terms, limit)

    def semantic(self, vector: np.ndarray, limit: int) -> list[tuple[SkillVersion, float]]:
        return self.store.search_semantic(self.service_id, self.flt, vector, limit)

    def similarities(self, vector: np.ndarray, records: Sequence[SkillVersion]) -> dict[str, float]:
        return self.store.similarities(self.service_id, vector, [s.skill_id for s in records])


class SkillSearch:
    """Ranks the heads a filter admits for a query."""

    def __init__(self, store: SkillStore, embedding: EmbeddingRuntime | None = None) -> None:
        self.store = store
        self.embedding = embedding

    def search(
        self,
        service_id: str,
        flt: SkillFilter,
        query: str,
        *,
        mode: SearchMode = "hybrid",
        top_k: int = DEFAULT_TOP_K,
        snippets: bool = True,
    ) -> SkillResults:
        """The best `top_k` heads for the query: name mentions first, then the ranking of the chosen mode
        (`snippets`: excerpt each hit's body; a listing shows only names and descriptions)."""
        if mode not in SEARCH_MODES:
            raise ValueError(f"mode: must be one of {', '.join(SEARCH_MODES)}")
        top_k = max(1, min(top_k, MAX_TOP_K))
        query = query.strip()
        if not query:
            return SkillResults([], "none")
        terms = query_terms(query)
        outcome = self._ranked(service_id, flt, query, terms, mode, top_k)
        named = self._named(service_id, flt, query)
        ranked = {h.record.skill_id: h.score for h in outcome.hits}
        best = max(ranked.values(), default=0.0)
        hits: list[SkillHit] = []
        for skill in named:
            # A named skill leads; its score is lifted to the query's best so scores never rise down the list.
            excerpt = snippet(skill, terms) if snippets else ""
            hits.append(SkillHit(skill, max(ranked.get(skill.skill_id, 0.0), best), excerpt, True))
        seen = {s.skill_id for s in named}
        for hit in outcome.hits:
            if hit.record.skill_id not in seen:
                hits.append(SkillHit(hit.record, hit.score, snippet(hit.record, terms) if snippets else ""))
        strategy = outcome.strategy if outcome.hits or not named else "name"
        return SkillResults(hits[:top_k], strategy, tuple(outcome.notes))

    def _ranked(
        self, service_id: str, flt: SkillFilter, query: str, terms: QueryTerms, mode: SearchMode, top_k: int
    ) -> SearchOutcome[SkillVersion]:
        channels = _SkillChannels(self.store, service_id, flt, terms)
        # Skills with near-identical descriptions are still different skills: no near-duplicate folding.
        options = SearchOptions(limit=top_k, dedupe=False)
        embed = self.embedding.embed_query if self.embedding is not None else None
        if self.embedding is not None:
            options = self.embedding.search_options(options)
        if mode == "bm25" or embed is None:
            outcome = hybrid_search(query, not terms.empty, channels, SKILL_VIEW, options, None, now_ms())
            if mode == "embedding":
                return replace(outcome, notes=[*outcome.notes, "embedding unavailable"])
            return outcome
        if mode == "hybrid":
            return hybrid_search(query, not terms.empty, channels, SKILL_VIEW, options, embed, now_ms())
        outcome = hybrid_search(query, False, channels, SKILL_VIEW, options, embed, now_ms())
        if outcome.strategy == "none" and not terms.empty:
            # The provider failed for this query: BM25 answers rather than nothing.
            fallback = hybrid_search(query, True, channels, SKILL_VIEW, options, None, now_ms())
            return replace(fallback, notes=[*outcome.notes, *fallback.notes])
        return outcome

    def _named(self, service_id: str, flt: SkillFilter, query: str) -> list[SkillVersion]:
        """Heads named in the query, in the order the query mentions them."""
        found = self.store.names_in(service_id, flt, query, NAME_MATCH_MIN_LENGTH)
        folded = query.casefold()
        return sorted(found, key=lambda s: (folded.find(s.name.casefold()), -len(s.name), s.skill_id))


# -- wire views --------------------------------------------------------------------------------------------


def hit_view(hit: SkillHit) -> dict[str, Any]:
    """A search item: the summary, the score and the snippet."""
    return {**summary(hit.skill), "score": round(hit.score, 6), "snippet": hit.snippet}


_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n.*?^---[ \t]*$\r?\n?", re.DOTALL | re.MULTILINE)


def skill_body(content: str) -> str:
    """SKILL.md without its front matter (the description is shown on its own)."""
    return _FRONT_MATTER.sub("", content, count=1).strip()


def snippet(skill: SkillVersion, terms: QueryTerms) -> str:
    """A short excerpt of the body around the first matched query term; the description when none matches."""
    body = skill_body(skill.content)
    start = _first_match(body, terms)
    if start is None:
        return " ".join(skill.description.split())
    lo, hi = max(0, start - SNIPPET_BEFORE), min(len(body), start + SNIPPET_AFTER)
    # Whole words at both ends.
    if lo > 0:
        space = body.find(" ", lo, start)
        lo = space + 1 if space != -1 else lo
    if hi < len(body):
        space = body.rfind(" ", start, hi)
        hi = space if space > start else hi
    text = " ".join(body[lo:hi].split())
    return f"{'…' if lo > 0 else ''}{text}{'…' if hi < len(body) else ''}"


def _first_match(body: str, terms: QueryTerms) -> int | None:
    """Where the earliest query term occurs (a stemmed word matches at a word start, case-insensitively)."""
    words = [rf"(?<!\w){re.escape(w)}" if w.isascii() else re.escape(w) for w in terms.words]
    grams = [re.escape(g) for g in terms.grams]
    if not words and not grams:
        return None
    # One pass over the body for every term: the leftmost match is the earliest term.
    match = re.search("|".join([*words, *grams]), body, re.IGNORECASE)
    return match.start() if match else None
