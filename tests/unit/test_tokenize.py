"""CJK-aware tokenization: segmentation, bigram fallback, stopwords."""

from memhub.index.tokenize import MAX_QUERY_TERMS, cjk_bigrams, fts_or, index_text, query_terms
from memhub.retrieval.query_focus import search_terms


def test_english_words_are_folded_and_stemmed_without_bigrams() -> None:
    text = index_text("Hiking in the Alps, café meetings")
    assert text.words == "hike in the alp cafe meet" and text.grams == ""


def test_document_and_query_forms_of_a_word_meet() -> None:
    assert query_terms("hikes").words == tuple(index_text("hiking").words.split())


def test_chinese_runs_are_segmented_and_get_bigrams() -> None:
    text = index_text("我喜欢吃四川火锅!")
    assert "火锅" in text.words.split()
    assert "川火" in text.grams.split()  # a bigram across a word boundary backs up odd segmentations


def test_query_drops_stopwords_unless_nothing_else_is_left() -> None:
    assert query_terms("what is the capital of France").words == ("capit", "franc")
    assert query_terms("the").words == ("the",)


def test_short_chinese_query_yields_words_and_bigrams() -> None:
    terms = query_terms("火锅")
    assert "火锅" in terms.words and terms.grams == ("火锅",)
    assert not terms.empty


def test_punctuation_only_query_is_empty() -> None:
    assert query_terms("?!…").empty


def test_query_terms_are_capped() -> None:
    terms = query_terms(" ".join(f"word{i}" for i in range(200)))
    assert len(terms.words) == MAX_QUERY_TERMS


def test_bigrams_and_or_expression() -> None:
    assert cjk_bigrams("火") == ["火"]
    assert cjk_bigrams("四川火锅") == ["四川", "川火", "火锅"]
    assert fts_or(("a", "b")) == '"a" OR "b"'


def test_a_long_querys_focus_comes_first_and_is_marked() -> None:
    """Past the cap a query keeps its first terms, so the ask at the end of a long prompt would be cut; its focus
    is taken first instead, and marked for the store to keep."""
    prompt = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS + 20)) + ". Where is the staging cluster?"
    assert "cluster" not in query_terms(prompt).words
    terms = query_terms(prompt, focus="Where is the staging cluster?")
    assert terms.words[:2] == ("stage", "cluster")
    assert len(terms.words) == MAX_QUERY_TERMS
    assert terms.focus == {"stage", "cluster"}
    assert query_terms("where is the staging cluster").focus == frozenset()


def test_search_terms_focus_only_a_long_query() -> None:
    question = "Where is the staging cluster?"
    assert search_terms(question).focus == frozenset()
    prompt = " ".join(f"word{i}" for i in range(MAX_QUERY_TERMS + 20)) + ". " + question
    assert {"stage", "cluster"} <= search_terms(prompt).focus
