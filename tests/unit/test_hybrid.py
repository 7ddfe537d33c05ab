"""The hybrid ranking engine (memhub.retrieval.hybrid) over small in-memory collections.

`Channels` is the engine's input protocol; `Collection` below is a plain implementation of it
(BM25 scores given per record, vectors compared by exact cosine), so every number the engine
produces can be checked by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from memhub.retrieval.embed import EmbeddingError
from memhub.retrieval.hybrid import DAY_MS, LEXICAL_WEIGHT, RecordView, SearchOptions, hybrid_search, priority_boost

NOW = 1_800_000_000_000
DIM = 8
RECENCY_WEIGHT = SearchOptions(limit=1).recency_weight


@dataclass(frozen=True)
class Doc:
    key: str
    text: str
    time_ms: int = NOW
    boost: float = 1.0


VIEW: RecordView[Doc] = RecordView(
    key=lambda d: d.key, text=lambda d: d.text, time_ms=lambda d: d.time_ms, boost=lambda d: d.boost
)


def unit(*components: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(components)] = components
    return (v / np.linalg.norm(v)).astype(np.float32)


def at_cosine(c: float) -> np.ndarray:
    """A unit vector whose cosine to QUERY (= e0) is exactly `c`."""
    return unit(c, float(np.sqrt(max(1 - c * c, 0.0))))


QUERY = unit(1.0)


@dataclass
class Collection:
    """A Channels implementation: BM25 scores by key, vectors by key, calls recorded."""

    docs: list[Doc]
    bm25: dict[str, float] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    calls: list[tuple[str, int]] = field(default_factory=list)

    def lexical(self, limit: int) -> list[tuple[Doc, float]]:
        self.calls.append(("lexical", limit))
        hits = [(d, self.bm25[d.key]) for d in self.docs if d.key in self.bm25]
        hits.sort(key=lambda h: h[1], reverse=True)
        return hits[:limit]

    def semantic(self, vector: np.ndarray, limit: int) -> list[tuple[Doc, float]]:
        self.calls.append(("semantic", limit))
        hits = [(d, float(self.vectors[d.key] @ vector)) for d in self.docs if d.key in self.vectors]
        hits.sort(key=lambda h: h[1], reverse=True)
        return hits[:limit]

    def similarities(self, vector: np.ndarray, records: Sequence[Doc]) -> dict[str, float]:
        self.calls.append(("similarities", len(records)))
        return {d.key: float(self.vectors[d.key] @ vector) for d in records if d.key in self.vectors}

    def called(self, name: str) -> bool:
        return any(c[0] == name for c in self.calls)


def run(
    col: Collection,
    *,
    query: str = "some query",
    has_terms: bool = True,
    vector: np.ndarray | None = QUERY,
    embed: object = "default",
    **options: object,
):
    opts = SearchOptions(**{"limit": 10, **options})  # type: ignore[arg-type]
    if embed == "default":

        def embed_query(_text: str) -> np.ndarray | None:
            return vector

        embed = embed_query
    return hybrid_search(query, has_terms, col, VIEW, opts, embed, NOW)  # type: ignore[arg-type]


def keys(outcome) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.record.key for h in outcome.hits]


def three_docs() -> Collection:
    a, b, c = Doc("a", "alpha words here"), Doc("b", "beta words there"), Doc("c", "gamma words anywhere")
    return Collection(
        [a, b, c],
        bm25={"a": 0.9, "c": 0.6},
        vectors={"a": at_cosine(0.1), "b": at_cosine(0.9), "c": at_cosine(0.6)},
    )


# -- gating -----------------------------------------------------------------------------------
def test_both_channels_give_hybrid() -> None:
    outcome = run(three_docs())
    assert outcome.strategy == "hybrid"
    assert sorted(keys(outcome)) == ["a", "b", "c"]


def test_a_query_without_terms_ranks_by_vectors_only_and_never_asks_bm25() -> None:
    col = three_docs()
    outcome = run(col, query="🙂", has_terms=False)
    assert outcome.strategy == "embedding"
    assert not col.called("lexical")
    assert keys(outcome) == ["b", "c", "a"]
    assert all(h.lexical == 0.0 for h in outcome.hits)


def test_no_query_vector_gives_fts_and_skips_the_vector_channel() -> None:
    col = three_docs()
    outcome = run(col, vector=None)
    assert outcome.strategy == "fts"
    assert not col.called("semantic") and not col.called("similarities")
    assert keys(outcome) == ["a", "c"]
    assert [h.score for h in outcome.hits] == [0.9, 0.6]  # BM25 scores unchanged
    assert all(h.semantic is None for h in outcome.hits)


def test_without_an_embedder_it_is_fts_or_none() -> None:
    assert run(three_docs(), embed=None).strategy == "fts"
    outcome = run(three_docs(), embed=None, has_terms=False, query="🙂")
    assert (outcome.strategy, outcome.hits) == ("none", [])


def test_a_failing_embedder_falls_back_to_bm25_with_a_note() -> None:
    def broken(_text: str) -> np.ndarray:
        raise EmbeddingError("provider down")

    col = three_docs()
    outcome = run(col, embed=broken)
    assert outcome.strategy == "fts"
    assert keys(outcome) == ["a", "c"]
    assert outcome.notes == ["embedding unavailable"]
    assert not col.called("semantic")


def test_a_failing_embedder_and_no_terms_is_an_empty_answer_not_an_error() -> None:
    def broken(_text: str) -> np.ndarray:
        raise EmbeddingError("provider down")

    outcome = run(three_docs(), embed=broken, has_terms=False, query="🙂")
    assert outcome.hits == []
    assert outcome.strategy in ("none", "fts")


def test_a_blank_query_is_never_embedded() -> None:
    asked: list[str] = []

    def embed(text: str) -> np.ndarray:
        asked.append(text)
        return QUERY

    outcome = run(three_docs(), embed=embed, query="  \t ", has_terms=False)
    assert asked == []
    assert (outcome.strategy, outcome.hits) == ("none", [])


def test_a_scope_without_vectors_is_fts_even_with_a_query_vector() -> None:
    col = three_docs()
    col.vectors.clear()
    outcome = run(col)
    assert outcome.strategy == "fts"
    assert keys(outcome) == ["a", "c"]


def test_vector_hits_alone_still_count_as_hybrid_when_the_query_had_terms() -> None:
    col = three_docs()
    col.bm25.clear()
    outcome = run(col)
    assert outcome.strategy == "hybrid"
    assert keys(outcome) == ["b", "c", "a"]


def test_each_channel_is_asked_for_at_least_the_limit() -> None:
    for limit in (1, 5, 100):
        col = three_docs()
        run(col, limit=limit)
        asked = dict(col.calls)
        assert asked["lexical"] >= limit and asked["semantic"] >= limit, (limit, col.calls)


# -- fusion ---------------------------------------------------------------------------------------
def test_fusion_reports_both_parts_and_a_vector_only_hit_scores_its_weighted_cosine() -> None:
    by_key = {h.record.key: h for h in run(three_docs()).hits}
    assert by_key["b"].lexical == 0.0 and by_key["b"].semantic == pytest.approx(0.9, abs=1e-6)
    assert by_key["b"].score == pytest.approx((1 - LEXICAL_WEIGHT) * 0.9, abs=1e-6)
    assert by_key["a"].lexical > by_key["c"].lexical > 0
    assert by_key["a"].semantic == pytest.approx(0.1, abs=1e-6)
    assert by_key["c"].semantic == pytest.approx(0.6, abs=1e-6)


def test_fused_score_grows_with_each_part() -> None:
    docs = [Doc(k, f"text of record {k}") for k in ("hi_bm25", "lo_bm25", "hi_cos", "lo_cos")]
    col = Collection(
        docs,
        bm25={"hi_bm25": 0.8, "lo_bm25": 0.4, "hi_cos": 0.5, "lo_cos": 0.5},
        vectors={
            "hi_bm25": at_cosine(0.3),
            "lo_bm25": at_cosine(0.3),
            "hi_cos": at_cosine(0.7),
            "lo_cos": at_cosine(0.2),
        },
    )
    score = {h.record.key: h.score for h in run(col, dedupe=False).hits}
    assert score["hi_bm25"] > score["lo_bm25"]
    assert score["hi_cos"] > score["lo_cos"]


def test_a_record_matching_both_channels_beats_one_strong_in_only_one() -> None:
    col = Collection(
        [Doc("lex", "only words match"), Doc("vec", "only meaning matches"), Doc("both", "both agree here")],
        bm25={"lex": 0.8, "both": 0.7},
        vectors={"lex": at_cosine(0.0), "vec": at_cosine(0.8), "both": at_cosine(0.7)},
    )
    assert keys(run(col))[0] == "both"


def test_a_bm25_hit_outside_the_vector_top_n_gets_its_true_cosine() -> None:
    # 300 records a little nearer to the query than the BM25 hit: it is not in the semantic top-N.
    near = [Doc(f"n{i}", f"near record number {i}") for i in range(300)]
    far = Doc("far", "the exact token INV-88231")
    col = Collection(
        [*near, far],
        bm25={"far": 0.95},
        vectors={**{d.key: at_cosine(0.5) for d in near}, "far": at_cosine(0.45)},
    )
    outcome = run(col, limit=5)
    assert ("similarities", 1) in col.calls
    assert keys(outcome)[0] == "far"  # its exact token and its true cosine put it on top
    assert outcome.hits[0].semantic == pytest.approx(0.45, abs=1e-6)


def _twins(cosine_of_x: float | None) -> Collection:
    """x and its twin `zero` match BM25 equally; `zero` has cosine 0, x has `cosine_of_x` (None: no vector)."""
    col = Collection(
        [Doc("x", "first twin record"), Doc("zero", "second twin record"), Doc("v", "vector only")],
        bm25={"x": 0.5, "zero": 0.5},
        vectors={"zero": at_cosine(0.0), "v": at_cosine(0.9)},
    )
    if cosine_of_x is not None:
        col.vectors["x"] = at_cosine(cosine_of_x)
    return col


def test_a_bm25_hit_without_a_vector_yet_keeps_its_lexical_part() -> None:
    by_key = {h.record.key: h for h in run(_twins(None)).hits}
    assert by_key["x"].semantic is None
    assert by_key["x"].score >= by_key["zero"].score > 0


def test_an_exact_match_not_embedded_yet_is_not_buried_under_vector_only_hits() -> None:
    # Just written, still queued for embedding: the only record with the query's exact token.
    # Embedded records that match nothing but a typical cosine (~0.7 for e5) must not outrank it.
    fresh = Doc("fresh", "Ticket ZX-4471 was escalated to the vendor.")
    others = [Doc(f"o{i}", f"unrelated embedded record {i}") for i in range(8)]
    col = Collection(
        [*others, fresh], bm25={"fresh": 0.9}, vectors={d.key: at_cosine(0.7 - i * 0.01) for i, d in enumerate(others)}
    )
    outcome = run(col, query="ZX-4471", limit=5)
    assert keys(outcome)[0] == "fresh", [(h.record.key, round(h.score, 3)) for h in outcome.hits]


def test_negative_cosine_never_lowers_a_score_below_its_bm25_part() -> None:
    by_key = {h.record.key: h for h in run(_twins(-0.9)).hits}
    assert by_key["x"].semantic == pytest.approx(-0.9, abs=1e-6)
    assert by_key["x"].score == pytest.approx(by_key["zero"].score) and by_key["x"].score > 0


def test_static_boost_reorders_equal_matches() -> None:
    col = Collection(
        [Doc("low", "first text one", boost=0.9), Doc("high", "second text two", boost=1.1)],
        bm25={"low": 0.5, "high": 0.5},
        vectors={"low": at_cosine(0.5), "high": at_cosine(0.5)},
    )
    outcome = run(col)
    assert keys(outcome) == ["high", "low"]
    assert outcome.hits[0].score / outcome.hits[1].score == pytest.approx(1.1 / 0.9)


def test_limit_cuts_the_ranked_list() -> None:
    outcome = run(three_docs(), limit=2)
    assert len(outcome.hits) == 2
    assert keys(outcome) == keys(run(three_docs()))[:2]


# -- min_score ------------------------------------------------------------------------------------
def test_min_score_keeps_hits_at_or_above_it() -> None:
    full = run(three_docs())
    scores = [h.score for h in full.hits]
    assert keys(run(three_docs(), min_score=0.0)) == keys(full)
    middle = scores[1]
    assert keys(run(three_docs(), min_score=middle)) == keys(full)[:2]  # inclusive
    assert run(three_docs(), min_score=2.0).hits == []


def test_min_score_applies_to_the_weighted_score() -> None:
    def single(boost: float) -> Collection:
        return Collection([Doc("x", "a memory", boost=boost)], bm25={"x": 0.5}, vectors={"x": at_cosine(0.5)})

    raw = run(single(1.0)).hits[0].score
    boosted = run(single(1.1)).hits[0].score
    assert boosted == pytest.approx(raw * 1.1)
    between = (raw + boosted) / 2
    assert keys(run(single(1.1), min_score=between)) == ["x"]
    assert run(single(1.0), min_score=between).hits == []


# -- recency --------------------------------------------------------------------------------------
def test_recency_half_life_prefers_the_newer_of_equal_matches() -> None:
    old = Doc("old", "we met at the cafe", time_ms=NOW - 30 * DAY_MS)
    new = Doc("new", "we met at the café", time_ms=NOW - 1 * DAY_MS)
    col = Collection([old, new], bm25={"old": 0.6, "new": 0.6}, vectors={"old": at_cosine(0.6), "new": at_cosine(0.6)})
    plain = run(col, dedupe=False)
    assert plain.hits[0].score == pytest.approx(plain.hits[1].score)
    outcome = run(col, dedupe=False, recency_half_life_days=7)
    assert keys(outcome) == ["new", "old"]
    assert outcome.hits[0].score > outcome.hits[1].score


def test_recency_decay_follows_the_half_life_and_keeps_a_floor() -> None:
    base = 0.6
    docs = [
        Doc("now", "t0 text a", time_ms=NOW),
        Doc("one", "t1 text b", time_ms=NOW - 10 * DAY_MS),
        Doc("ancient", "t2 text c", time_ms=NOW - 10_000 * DAY_MS),
        Doc("future", "t3 text d", time_ms=NOW + 5 * DAY_MS),
    ]
    col = Collection(docs, bm25={d.key: base for d in docs}, vectors={d.key: at_cosine(base) for d in docs})
    plain = {h.record.key: h.score for h in run(col, dedupe=False).hits}
    assert len(set(plain.values())) == 1
    full = plain["now"]
    score = {h.record.key: h.score for h in run(col, dedupe=False, recency_half_life_days=10).hits}
    w = RECENCY_WEIGHT
    assert 0 < w < 1
    assert score["now"] == pytest.approx(full)
    assert score["future"] == pytest.approx(full)  # a clock skew never boosts above "now"
    assert score["one"] == pytest.approx(full * ((1 - w) + w * 0.5))  # one half-life old
    assert score["ancient"] == pytest.approx(full * (1 - w), rel=1e-4)  # old memories keep a floor


def test_recency_does_not_outweigh_a_much_better_match() -> None:
    old = Doc("old", "exact answer text", time_ms=NOW - 365 * DAY_MS)
    new = Doc("new", "vaguely related text", time_ms=NOW)
    col = Collection([old, new], bm25={"old": 0.9}, vectors={"old": at_cosine(0.9), "new": at_cosine(0.2)})
    assert keys(run(col, recency_half_life_days=30)) == ["old", "new"]


# -- near-duplicates ------------------------------------------------------------------------------
def _dupes() -> Collection:
    docs = [
        Doc("best", "I moved to Berlin in March for the new job at the bank."),
        Doc("copy", "i moved to berlin in march, for the new job at the bank!"),
        Doc("other", "The new job at the bank starts in April, not March."),
    ]
    return Collection(
        docs,
        bm25={"best": 0.9, "copy": 0.85, "other": 0.5},
        vectors={"best": at_cosine(0.9), "copy": at_cosine(0.88), "other": at_cosine(0.5)},
    )


def test_near_duplicates_are_dropped_keeping_the_best() -> None:
    assert keys(run(_dupes())) == ["best", "other"]


def test_dedupe_false_keeps_near_duplicates() -> None:
    assert keys(run(_dupes(), dedupe=False)) == ["best", "copy", "other"]


def test_duplicates_do_not_use_up_the_limit() -> None:
    assert keys(run(_dupes(), limit=2)) == ["best", "other"]


def test_similar_but_different_texts_are_not_duplicates() -> None:
    docs = [
        Doc("mon", "The team meeting is on Monday at ten in room four."),
        Doc("tue", "The team meeting is on Tuesday at ten in room four."),
    ]
    col = Collection(docs, bm25={"mon": 0.8, "tue": 0.79})
    assert keys(run(col, vector=None)) == ["mon", "tue"]


def test_short_texts_are_duplicates_only_when_their_words_match() -> None:
    docs = [Doc("a", "Sounds good!"), Doc("b", "sounds good"), Doc("c", "Sounds bad")]
    col = Collection(docs, bm25={"a": 0.9, "b": 0.8, "c": 0.7})
    assert keys(run(col, vector=None)) == ["a", "c"]


def test_texts_without_word_characters_are_not_all_duplicates_of_each_other() -> None:
    # Emoji-only messages are common in chats; "👍" and "🎉" say different things.
    docs = [Doc("thumbs", "👍"), Doc("party", "🎉"), Doc("heart", "❤️")]
    col = Collection(docs, vectors={"thumbs": at_cosine(0.9), "party": at_cosine(0.8), "heart": at_cosine(0.7)})
    outcome = run(col, query="🎉", has_terms=False)
    assert outcome.strategy == "embedding"
    assert keys(outcome) == ["thumbs", "party", "heart"]


def test_identical_emoji_texts_are_still_duplicates() -> None:
    docs = [Doc("one", "🎉🎉"), Doc("two", "🎉🎉")]
    col = Collection(docs, vectors={"one": at_cosine(0.9), "two": at_cosine(0.9)})
    assert keys(run(col, query="🎉", has_terms=False)) == ["one"]


# -- priority_boost -------------------------------------------------------------------------------
def test_priority_boost_maps_priority_to_0_9_through_1_1() -> None:
    assert priority_boost(0) == pytest.approx(0.9)
    assert priority_boost(50) == pytest.approx(1.0)
    assert priority_boost(100) == pytest.approx(1.1)
    assert priority_boost(-1) == pytest.approx(1.0)  # "unset" counts as the default priority
    assert priority_boost(1000) == pytest.approx(1.1)
    values = [priority_boost(p) for p in range(0, 101)]
    assert values == sorted(values)


def test_heat_grows_with_reinforcements_and_is_capped_at_ten_percent() -> None:
    assert priority_boost(50, 0) == pytest.approx(1.0)
    assert priority_boost(50, -5) == pytest.approx(1.0)
    heats = [priority_boost(50, n) for n in range(0, 50)]
    assert heats == sorted(heats)
    assert priority_boost(50, 1) > 1.0
    assert priority_boost(50, 10**9) == pytest.approx(1.1)
    assert priority_boost(100, 10**9) == pytest.approx(1.21)
    assert priority_boost(0, 10**9) == pytest.approx(0.99)
    # Heat never lets the least important memory overtake the default one of equal relevance.
    assert priority_boost(0, 10**9) < priority_boost(50, 0)


def test_the_query_vector_is_made_from_the_semantic_query_when_one_is_given() -> None:
    embedded: list[str] = []

    def embed_query(text: str) -> np.ndarray | None:
        embedded.append(text)
        return QUERY

    run(three_docs(), query="What did Alice paint?", embed=embed_query)
    run(three_docs(), query="What did Alice paint?", embed=embed_query, semantic_query="What did paint?")
    assert embedded == ["What did Alice paint?", "What did paint?"]
