"""BM25 page search (title weight 5, body 1, CJK-aware, deterministic ties) and query-aware snippets."""

from __future__ import annotations

import math

import pytest

from memhub.knowledge.wiki.pagesearch import BODY_WEIGHT, TITLE_WEIGHT, PageHit, PageSearch, query_snippet

# A small corpus whose ranking is easy to reason about; positions are list indexes.
TITLES = [
    "Refund policy",  # 0
    "Deploy runbook",  # 1
    "Team handbook",  # 2
    "退款流程",  # 3
    "Chargebacks",  # 4
    "请假制度",  # 5
]
BODIES = [
    "Refunds under 500 EUR are approved by support; larger refunds need a finance lead.",
    "Deploy in stages. Roll back with the previous build tag when error rates rise.",
    "Start here. Request laptop access through the IT portal on day one.",
    "客服在工单系统中发起退款；金额超过 500 欧元时需要财务负责人审批。",
    "A chargeback is a forced refund ordered by the card issuer.",
    "员工入职满一年享有 10 天带薪年假。请假需提前在 OA 系统提交申请。",
]


@pytest.fixture(scope="module")
def search() -> PageSearch:
    return PageSearch(TITLES, BODIES)


def _ids(hits: list[PageHit]) -> list[int]:
    return [h.position for h in hits]


def test_weights_are_the_references() -> None:
    assert (TITLE_WEIGHT, BODY_WEIGHT) == (5.0, 1.0)


def test_exact_bm25_scores_title_five_times_body() -> None:
    # One term, two pages of one word per field: idf = ln(1 + 0.5 / 2.5), saturated tf = 1.
    ps = PageSearch(["Refund", "Other"], ["nothing", "refund"])
    idf = math.log(1.2)
    assert ps.search("refund", 5) == [PageHit(0, round(5 * idf, 4)), PageHit(1, round(idf, 4))]
    assert ps.search("refund", 5) == [PageHit(0, 0.9116), PageHit(1, 0.1823)]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("refunds", [0, 4]),  # stemmed: "refunds" finds "refund"; the title hit ranks first
        ("refund approval", [0, 4]),
        ("Roll back a deploy", [1]),
        ("laptop access", [2]),
        ("chargeback", [4]),
        ("退款", [3]),
        ("退款需要谁审批？", [3]),
        ("年假怎么申请", [5]),
        ("500", [0, 3]),
        ("xyzzy", []),
    ],
)
def test_golden_rankings(search: PageSearch, query: str, expected: list[int]) -> None:
    assert _ids(search.search(query, 10)) == expected


def test_title_hit_beats_body_hit_of_the_same_length() -> None:
    ps = PageSearch(["alpha notes", "beta notes"], ["beta text here", "alpha text here"])
    hits = ps.search("alpha", 5)
    assert _ids(hits) == [0, 1]
    assert hits[0].score > 4 * hits[1].score


def test_ties_keep_page_order_and_searches_are_deterministic() -> None:
    ps = PageSearch(["same"] * 5, ["identical body"] * 5)
    first = ps.search("identical", 10)
    assert _ids(first) == [0, 1, 2, 3, 4]
    assert len({h.score for h in first}) == 1
    assert all(ps.search("identical", 10) == first for _ in range(3))
    assert _ids(ps.search("identical", 2)) == [0, 1]


def test_limit_cuts_the_best_first(search: PageSearch) -> None:
    assert _ids(search.search("refunds", 1)) == [0]
    assert search.search("refunds", 0) == []


def test_scores_are_rounded_and_descending(search: PageSearch) -> None:
    hits = search.search("refund chargeback 退款", 10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(round(s, 4) == s and s > 0 for s in scores)


def test_chinese_bigrams_find_a_differently_segmented_word() -> None:
    # The segmenter may not cut the body the way it cuts the query; the bigram "退款" still matches.
    ps = PageSearch(["说明", "无关"], ["客服发起退款申请", "天气很好"])
    assert _ids(ps.search("退款", 5)) == [0]


def test_stopword_only_query_still_searches() -> None:
    ps = PageSearch(["The and", "Other"], ["the and of", "nothing"])
    assert _ids(ps.search("the and", 5)) == [0]


def test_empty_corpus_and_mismatched_lengths() -> None:
    assert PageSearch([], []).search("anything", 5) == []
    assert PageSearch([], []).size == 0
    with pytest.raises(ValueError, match="one title per body"):
        PageSearch(["a", "b"], ["only one"])


def test_blank_pages_do_not_break_scoring() -> None:
    ps = PageSearch(["", "Refund"], ["", ""])
    assert _ids(ps.search("refund", 5)) == [1]


# --- snippets -----------------------------------------------------------------------------------

FILLER = "Filler words about nothing in particular. " * 12  # ~500 characters, no query word


def test_snippet_starts_at_the_text_when_nothing_matches() -> None:
    snippet = query_snippet(FILLER + "The refund rule.", "xyzzy")
    assert snippet.startswith("Filler words") and snippet.endswith("…")
    assert len(snippet) <= 201


def test_short_text_is_the_whole_snippet() -> None:
    assert query_snippet("Refunds go back to the card.", "refunds") == "Refunds go back to the card."


@pytest.mark.parametrize("query", ["refunds", "refund", "REFUNDS", "How do refunds work?", "refunded"])
def test_snippet_is_cut_around_the_refund_word(query: str) -> None:
    snippet = query_snippet(FILLER + "Refund rules: support approves refunds. " + FILLER, query)
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "Refund rules: support approves refunds." in snippet


def test_snippet_uses_the_earliest_query_word() -> None:
    text = FILLER + "Chargebacks first. " + FILLER + "Refunds later. " + FILLER
    snippet = query_snippet(text, "refund chargeback")
    assert "Chargebacks first." in snippet and "Refunds later." not in snippet


def test_snippet_finds_a_query_word_written_exactly_as_in_the_text() -> None:
    # "policy" is written the same in the query and the text; its stem ("polici") is not a prefix of it.
    snippet = query_snippet(FILLER + "The policy says refunds are capped. " + FILLER, "policy")
    assert "The policy says" in snippet


@pytest.mark.parametrize("query", ["退款", "退款需要谁审批", "谁来审批退款？"])
def test_chinese_snippet_around_a_segmented_word(query: str) -> None:
    text = (
        "前言。"
        + "这是一段很长的说明文字，用于填充内容。" * 20
        + "退款需要财务负责人审批。"
        + "其他内容继续说明。" * 30
    )
    snippet = query_snippet(text, query)
    assert snippet.startswith("…")
    assert "退款需要财务负责人审批" in snippet


def test_single_latin_letters_are_ignored_but_single_cjk_characters_count() -> None:
    text = FILLER + "a" + FILLER + "谁"
    assert query_snippet(text, "a").startswith("Filler")  # a lone ASCII letter never moves the snippet
    assert "谁" in query_snippet(text, "谁")
