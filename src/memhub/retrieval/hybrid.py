"""Hybrid search: BM25 and vector channels fused by weight, then ranked, filtered and de-duplicated.

Any searchable collection plugs in through `Channels` (L0 messages, L1 memories, later wiki pages
and skills), so they all rank the same way.

Why a weighted sum of scores and not RRF: reciprocal-rank fusion with k = 60 treats the 40th BM25
hit almost like the 1st, and on paraphrase queries (where BM25 matches only function words) it
halved MRR in our measurements. Here the fused score is

    LEXICAL_WEIGHT * bm25 / best bm25 of the query  +  (1 - LEXICAL_WEIGHT) * cosine  (+ speaker bonus)

tuned on LoCoMo (bench/locomo.py; docs/benchmarks.md has the numbers). The cosine carries most of the
weight, so a fused score means much the same for every query and `min_score` is usable; BM25 is
the tie-breaker that puts exact tokens (names, ids) on top.

Gating: a channel that has nothing to say is left out instead of diluting the other. A query with
no indexable terms (emoji, punctuation) ranks by vectors only; a scope without vectors, an embedder
that is off or failing, ranks by BM25 only — and the `strategy` label says which happened.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np

from memhub.retrieval.embed import EmbeddingError
from memhub.retrieval.packing import pack
from memhub.retrieval.speakers import named_speakers

log = logging.getLogger("memhub.retrieval")

R = TypeVar("R")

LEXICAL_WEIGHT = 0.15
SPEAKER_BONUS = 0.04
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 50
SEMANTIC_CANDIDATES = 50
NEAR_DUPLICATE_JACCARD = 0.9
DAY_MS = 86_400_000


class Channels(Protocol[R]):
    """How one collection is searched; every call is already confined to the caller's scope."""

    def lexical(self, limit: int) -> list[tuple[R, float]]:
        """BM25 hits with scores in (0, 1), best first."""
        ...

    def semantic(self, vector: np.ndarray, limit: int) -> list[tuple[R, float]]:
        """Nearest records by cosine, best first."""
        ...

    def similarities(self, vector: np.ndarray, records: Sequence[R]) -> dict[str, float]:
        """Cosine of the given records to the vector, by key (records without a vector left out)."""
        ...


@dataclass(frozen=True, slots=True)
class RecordView(Generic[R]):
    """How the engine reads a record: its key, text, time and a static boost (priority, heat)."""

    key: Callable[[R], str]
    text: Callable[[R], str]
    time_ms: Callable[[R], int]
    boost: Callable[[R], float] = lambda _record: 1.0
    speaker: Callable[[R], str | None] = lambda _record: None


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Knobs of one search; the defaults are what a caller gets without asking."""

    limit: int
    min_score: float | None = None
    recency_half_life_days: float | None = None
    recency_weight: float = 0.3
    dedupe: bool = True
    lexical_weight: float | None = None  # None: LEXICAL_WEIGHT (services pass the model's own)
    max_chars: int | None = None  # prompt budget: the best hits whose texts fit (see packing.py)
    max_tokens: int | None = None
    # The text the query vector is made from, when it differs from the query (recall leaves participants' names
    # out of it, memhub.retrieval.followup); BM25 and the speaker bonus still read the query.
    semantic_query: str | None = None


@dataclass(frozen=True, slots=True)
class Hit(Generic[R]):
    """One ranked record and where its score came from."""

    record: R
    score: float
    lexical: float
    semantic: float | None


@dataclass(frozen=True, slots=True)
class SearchOutcome(Generic[R]):
    """Ranked hits and how they were found: `hybrid`, `fts`, `embedding` or `none`."""

    hits: list[Hit[R]]
    strategy: str
    notes: list[str] = field(default_factory=list)


QueryEmbedder = Callable[[str], "np.ndarray | None"]
_QUERY_EMBEDDING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memhub-query-embedding")


def hybrid_search(
    query: str,
    has_terms: bool,
    channels: Channels[R],
    view: RecordView[R],
    options: SearchOptions,
    embed_query: QueryEmbedder | None,
    now_ms: int,
) -> SearchOutcome[R]:
    """Search both channels, fuse, weight, filter and cut to the limit."""
    # A wide BM25 pool only pays when there are cosines to re-rank it with; BM25 alone needs the
    # limit plus room for near-duplicates that get dropped.
    pool = max(options.limit * CANDIDATE_FACTOR, MIN_CANDIDATES) if embed_query else options.limit * 2
    notes: list[str] = []
    # The query embeds on another thread while BM25 runs here: both release the GIL, and embedding
    # (e5: ~15–25 ms) is the larger part of a search.
    vector_text = options.semantic_query or query
    pending = _QUERY_EMBEDDING.submit(_query_vector, vector_text, embed_query, notes) if embed_query else None
    lexical = channels.lexical(pool) if has_terms else []
    vector = pending.result() if pending is not None else None
    semantic = channels.semantic(vector, max(options.limit, SEMANTIC_CANDIDATES)) if vector is not None else []

    if vector is not None and semantic:
        strategy = "hybrid" if has_terms else "embedding"
        weight = LEXICAL_WEIGHT if options.lexical_weight is None else options.lexical_weight
        hits = _fuse(query, lexical, semantic, channels, view, vector, weight)
    elif lexical:
        strategy = "fts"
        hits = [Hit(record, score, score, None) for record, score in lexical]
    else:
        strategy = "fts" if vector is None and has_terms else ("embedding" if vector is not None else "none")
        hits = []

    hits = _weigh(hits, view, options, now_ms)
    if options.min_score is not None:
        hits = [h for h in hits if h.score >= options.min_score]
    if options.max_chars is not None or options.max_tokens is not None:
        # Budgeted: skip hits that do not fit instead of stopping at the first, then cut to the limit.
        hits = pack(
            _without_near_duplicates(hits, view, len(hits)) if options.dedupe else hits,
            lambda h: view.text(h.record),
            max_chars=options.max_chars,
            max_tokens=options.max_tokens,
            max_items=options.limit,
        )
    else:
        hits = _without_near_duplicates(hits, view, options.limit) if options.dedupe else hits[: options.limit]
    return SearchOutcome(hits, strategy, notes)


def _query_vector(query: str, embed_query: QueryEmbedder | None, notes: list[str]) -> np.ndarray | None:
    if embed_query is None or not query.strip():
        return None
    try:
        return embed_query(query)
    except EmbeddingError as exc:
        # The provider is down or slow: answer from BM25 now rather than fail the request.
        log.warning("query embedding failed, searching with BM25 only: %s", exc)
        notes.append("embedding unavailable")
        return None


def _fuse(
    query: str,
    lexical: list[tuple[R, float]],
    semantic: list[tuple[R, float]],
    channels: Channels[R],
    view: RecordView[R],
    vector: np.ndarray,
    lexical_weight: float,
) -> list[Hit[R]]:
    records: dict[str, R] = {}
    cosine: dict[str, float] = {}
    bm25: dict[str, float] = {}
    # Undo the (0, 1) squash of the BM25 score: near 1 it hides the differences between good hits.
    # Relative to the query's best hit, the lexical part ranks within the query; the cosine, which
    # carries most of the weight, keeps the fused score comparable across queries.
    raw = {view.key(record): _unsquash(score) for record, score in lexical}
    best = max(raw.values(), default=0.0) or 1.0
    for record, _score in lexical:
        key = view.key(record)
        records[key] = record
        bm25[key] = raw[key] / best
    for record, score in semantic:
        key = view.key(record)
        records.setdefault(key, record)
        cosine[key] = score
    # BM25 hits the vector top-N missed still get their true cosine (absent only if not embedded yet).
    missing = [records[k] for k in bm25 if k not in cosine]
    if missing:
        cosine.update(channels.similarities(vector, missing))
    # A record written moments ago may have no vector yet. Scoring its cosine as 0 would bury an
    # exact match ("ZX-4471") under unrelated embedded records; instead it gets the best cosine of
    # this query scaled by how well it matches lexically, as if it were as close as its peers.
    best_cosine = max(cosine.values(), default=0.0)
    closeness = {key: cosine.get(key, best_cosine * bm25.get(key, 0.0)) for key in records}
    speakers = {key: view.speaker(record) for key, record in records.items()}
    named = named_speakers(query, {s for s in speakers.values() if s})
    if len(named) == len({s for s in speakers.values() if s}):
        named = set()  # naming everyone singles out no one
    hits = [
        Hit(
            record,
            lexical_weight * bm25.get(key, 0.0)
            + (1 - lexical_weight) * max(closeness[key], 0.0)
            + (SPEAKER_BONUS if speakers[key] in named else 0.0),
            bm25.get(key, 0.0),
            cosine.get(key),
        )
        for key, record in records.items()
    ]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits


def _unsquash(score: float) -> float:
    """The store's BM25 score s = r / (1 + r) back to r."""
    return score / (1.0 - score) if score < 1.0 else 1e9


def _weigh(hits: list[Hit[R]], view: RecordView[R], options: SearchOptions, now_ms: int) -> list[Hit[R]]:
    """Static boosts (priority, heat) and optional recency decay, then re-sort."""
    half_life = options.recency_half_life_days
    weighed = []
    for hit in hits:
        factor = view.boost(hit.record)
        if half_life:
            age_days = max(now_ms - view.time_ms(hit.record), 0) / DAY_MS
            decay = 0.5 ** (age_days / half_life)
            factor *= (1 - options.recency_weight) + options.recency_weight * decay
        weighed.append(Hit(hit.record, hit.score * factor, hit.lexical, hit.semantic))
    weighed.sort(key=lambda h: h.score, reverse=True)
    return weighed


_TOKEN = re.compile(r"\w+", re.UNICODE)


def shingles(text: str) -> frozenset[str]:
    """Word trigrams of a text (case-folded), for near-duplicate checks."""
    tokens = _TOKEN.findall(text.casefold())
    if not tokens:  # emoji or punctuation only: only the same text is a duplicate
        return frozenset([" ".join(text.split())])
    if len(tokens) < 3:
        return frozenset([" ".join(tokens)])
    return frozenset(" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2))


def _without_near_duplicates(hits: list[Hit[R]], view: RecordView[R], limit: int) -> list[Hit[R]]:
    """The best `limit` hits, skipping any whose text repeats a better hit's (word-trigram Jaccard ≥ 0.9)."""
    kept: list[Hit[R]] = []
    seen: list[frozenset[str]] = []
    for hit in hits:
        if len(kept) == limit:
            break
        grams = shingles(view.text(hit.record))
        if any(near_duplicates(grams, other) for other in seen):
            continue
        kept.append(hit)
        seen.append(grams)
    return kept


def near_duplicates(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two shingle sets overlap by Jaccard ≥ NEAR_DUPLICATE_JACCARD."""
    small, large = sorted((len(a), len(b)))
    if small < NEAR_DUPLICATE_JACCARD * large:  # Jaccard ≤ small / large: no need to intersect
        return False
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE_JACCARD


def priority_boost(priority: int, reinforcements: int = 0) -> float:
    """L1 weighting: priority 0..100 scales by 0.9..1.1; each reinforcement (update, extra source) adds heat.

    Heat grows with the log of how often a memory was confirmed, capped at +10 %, so an often
    repeated fact edges out a one-off mention of equal relevance without drowning a better match.
    """
    p = 50 if priority < 0 else min(priority, 100)
    heat = min(0.1, 0.03 * math.log1p(max(reinforcements, 0)))
    return (0.9 + 0.2 * p / 100) * (1 + heat)
