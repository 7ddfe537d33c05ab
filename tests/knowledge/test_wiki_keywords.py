"""Keyword search over extracted sources: English stemming, Chinese substrings, locators, snippets, ordering."""

from __future__ import annotations

from pathlib import Path

import docx

from memhub.knowledge.wiki.keywords import (
    SNIPPET_CHARS,
    SourceIndex,
    parse_keywords,
    score_of,
    search_sources,
    snippet,
)
from memhub.knowledge.wiki.sources import ExtractedSource, SourceUnit, extract, extract_bytes
from tests.knowledge.test_wiki_sources import make_pdf


def _src(filename: str, *units: tuple[str, str]) -> ExtractedSource:
    return ExtractedSource(filename, "text", [SourceUnit(text, locator) for locator, text in units])


def test_english_keywords_are_case_insensitive_and_stemmed() -> None:
    sources = [
        _src("a.txt", ("lines 1-2", "Nothing relevant here."), ("lines 4-5", "The RATE LIMITING rules are strict.")),
        _src("b.txt", ("lines 1-1", "Limits on rates")),
    ]
    matches = search_sources(sources, "rate limits")
    assert [(m.filename, m.locator) for m in matches] == [("a.txt", "lines 4-5"), ("b.txt", "lines 1-1")]
    assert matches[0].matched == ("rate", "limits")


def test_stopwords_alone_still_search() -> None:
    sources = [_src("a.txt", ("line 1", "to be or not to be"))]
    assert [m.locator for m in search_sources(sources, "to be")] == ["line 1"]


def test_stopwords_are_dropped_across_keywords_given_as_a_list() -> None:
    sources = [_src("a.txt", ("line 1", "how to file a claim")), _src("b.txt", ("line 1", "the quokka lives here"))]
    # Each keyword alone is all stop words or not; the query as a whole is about quokkas.
    assert parse_keywords(["how", "to", "quokka"]).stems == (("quokka", "quokka"),)
    assert [m.filename for m in search_sources(sources, ["how", "to", "quokka"])] == ["b.txt"]
    assert search_sources(sources, ["how", "to", "wombat"]) == []
    # Only stop words: they are searched rather than nothing.
    assert [m.filename for m in search_sources(sources, ["how", "to"])] == ["a.txt"]


def test_a_chinese_keyword_reads_only_units_holding_its_characters() -> None:
    units = [_src("a.txt", ("p1", "退款流程")), _src("b.txt", ("p1", "报销流程")), _src("c.txt", ("p1", "x"))]
    index = SourceIndex(units)
    assert index._candidates(parse_keywords("退款")) == [0]
    assert index._candidates(parse_keywords("流程")) == [0, 1]
    assert [m.filename for m in index.search("款流")] == ["a.txt"]
    assert index.search("款退") == []  # every character is there, but not as this substring


def test_chinese_keywords_match_substrings_regardless_of_segmentation() -> None:
    sources = [
        _src("zh.txt", ("line 1", "本制度适用于全体员工。"), ("line 2", "报销流程：差旅费报销需在三十天内提交。")),
    ]
    matches = search_sources(sources, "差旅费")
    assert [(m.locator, m.matched) for m in matches] == [("line 2", ("差旅费",))]
    # A two-character keyword inside a longer word still hits (a segmenter might not split it out).
    assert [m.locator for m in search_sources(sources, ["旅费"])] == ["line 2"]
    assert search_sources(sources, "年假") == []


def test_mixed_keyword_splits_into_english_and_chinese_terms() -> None:
    terms = parse_keywords(["API网关", "Gateways"])
    assert terms.substrings == ("网关",)
    assert [w for _, w in terms.stems] == ["api", "gateways"]
    sources = [_src("m.txt", ("line 1", "API 网关 gateway"), ("line 2", "only the api"))]
    matches = search_sources(sources, ["API网关", "Gateways"])
    assert [m.locator for m in matches] == ["line 1", "line 2"]
    assert matches[0].score > matches[1].score


def test_coverage_beats_hit_count() -> None:
    sources = [
        _src("many.txt", ("line 1", "invoice " * 50)),
        _src("both.txt", ("line 1", "invoice refund")),
    ]
    assert [m.filename for m in search_sources(sources, "invoice refund")] == ["both.txt", "many.txt"]
    assert score_of(2, 2, 1) > score_of(1, 2, 10_000)
    assert score_of(1, 1, 5) > score_of(1, 1, 1)


def test_ordering_is_deterministic_on_ties_and_limit_applies() -> None:
    sources = [_src(f"f{i}.txt", ("line 1", "quota")) for i in (3, 1, 2)]
    assert [m.filename for m in search_sources(sources, "quota")] == ["f3.txt", "f1.txt", "f2.txt"]
    assert [m.filename for m in search_sources(sources, "quota", limit=2)] == ["f3.txt", "f1.txt"]
    assert search_sources(sources, "quota", limit=0) == []
    assert search_sources(sources, "  ,  ") == []


def test_snippet_centres_on_first_hit_and_marks_cuts() -> None:
    text = "lead " * 100 + "TARGET word here " + "tail " * 100
    shot = snippet(text, text.index("TARGET"))
    assert "TARGET" in shot and shot.startswith("…") and shot.endswith("…")
    assert len(shot) <= SNIPPET_CHARS + 2
    assert not shot[1:].startswith("ead")  # cut on a word boundary
    assert snippet("short text", 0) == "short text"
    cjk = "前" * 300 + "关键" + "后" * 300
    shot = snippet(cjk, 300)
    assert "关键" in shot and len(shot) == SNIPPET_CHARS + 2


def test_snippet_of_search_hit_contains_the_keyword() -> None:
    body = "Intro. " * 60 + "Passwords must be rotated quarterly. " + "More. " * 60
    [match] = search_sources([_src("s.txt", ("lines 1-9", body))], "rotation")
    assert "rotated" in match.snippet


def test_locators_from_real_pdf_docx_and_markdown(tmp_path: Path) -> None:
    pdf = extract_bytes("handbook.pdf", make_pdf(["Welcome", "Expense claims within 30 days"]))
    document = docx.Document()
    document.add_heading("Travel", level=1)
    document.add_paragraph("Book flights early.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Expense"
    table.cell(0, 1).text = "Cap"
    table.cell(1, 0).text = "Hotel"
    table.cell(1, 1).text = "200"
    document.save(str(tmp_path / "travel.docx"))
    word = extract(tmp_path / "travel.docx")
    md = extract_bytes("faq.md", "# FAQ\n\n## 报销\n差旅报销 expenses 说明\n".encode())
    index = SourceIndex([pdf, word, md])
    found = {(m.filename, m.locator) for m in index.search("expenses")}
    assert found == {("handbook.pdf", "page 2"), ("travel.docx", "table 1"), ("faq.md", "FAQ > 报销, lines 3-4")}
    assert [(m.filename, m.locator) for m in index.search("差旅报销")] == [("faq.md", "FAQ > 报销, lines 3-4")]
    assert [(m.filename, m.locator) for m in index.search("flights")] == [("travel.docx", "paragraph 2")]


def test_more_hits_rank_first_at_equal_coverage() -> None:
    sources = [
        _src("once.txt", ("line 1", "one deploy")),
        _src("thrice.txt", ("line 1", "deploy, deployed, deploying")),
        _src("zh.txt", ("line 1", "部署一次")),
        _src("zh2.txt", ("line 1", "部署再部署")),
    ]
    assert [m.filename for m in search_sources(sources, "deploy")] == ["thrice.txt", "once.txt"]
    assert [m.filename for m in search_sources(sources, "部署")] == ["zh2.txt", "zh.txt"]
