"""Text → index terms, the same way for documents and queries, CJK-aware.

Terms are produced here rather than by an FTS tokenizer so that the terms a query looks up are
exactly the terms in the index: that lets the store read each term's document frequency and
prune terms too common to be worth ranking.

- Latin-script words are lower-cased, stripped of diacritics and Snowball-stemmed (English).
- SQLite's unicode61 tokenizer would turn a whole Chinese clause into one token, so CJK runs are
  segmented with jieba `cut_for_search` (the Rust `rjieba` when installed). Every CJK run also
  yields character bigrams, kept in a separate column, so a short Chinese query that the
  segmenter splits differently from the document still finds it instead of returning nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import Stemmer

from memhub.model.query import QueryTerms

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
CJK_RUN = re.compile(f"[{_CJK}]+")
WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Words that match most English documents; dropping them from queries keeps BM25 fast and sharp.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "do",
        "does",
        "did",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)

MAX_QUERY_TERMS = 48
STEMMER = Stemmer.Stemmer("english")


@cache
def _segmenter() -> Callable[[str], list[str]]:
    try:
        import rjieba

        return rjieba.cut_for_search
    except ImportError:  # pragma: no cover - depends on the platform's wheels
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        return lambda text: list(jieba.cut_for_search(text))


def warm_up() -> None:
    """Load the segmenter's dictionary now, so the first request does not pay for it."""
    _segmenter()("预热词典")


def cjk_words(run: str) -> list[str]:
    """jieba search-mode segmentation of one CJK run (word characters only)."""
    return [w for w in (t.strip() for t in _segmenter()(run)) if w and WORD.fullmatch(w)]


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK run (a lone character stands for itself)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def fold(word: str) -> str:
    word = word.lower()
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _latin_terms(text: str, *, drop_stopwords: bool) -> list[str]:
    words = [fold(w) for w in WORD.findall(text)]
    if drop_stopwords:
        words = [w for w in words if w not in STOPWORDS]
    return STEMMER.stemWords(words)


@dataclass(frozen=True, slots=True)
class IndexText:
    """What goes into the full-text index for one record: space-joined terms per column."""

    words: str
    grams: str


def _split(text: str, *, drop_stopwords: bool) -> tuple[list[str], list[str]]:
    words: list[str] = []
    grams: list[str] = []
    pos = 0
    for match in CJK_RUN.finditer(text):
        words.extend(_latin_terms(text[pos : match.start()], drop_stopwords=drop_stopwords))
        run = match.group(0)
        words.extend(cjk_words(run))
        grams.extend(cjk_bigrams(run))
        pos = match.end()
    words.extend(_latin_terms(text[pos:], drop_stopwords=drop_stopwords))
    return words, grams


def index_text(text: str) -> IndexText:
    """Every term of a document, in order (repeats kept: term frequency matters to BM25)."""
    words, grams = _split(text, drop_stopwords=False)
    return IndexText(" ".join(words), " ".join(grams))


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))[:MAX_QUERY_TERMS]


def query_terms(query: str, *, focus: str | None = None) -> QueryTerms:
    """Distinct terms of a query; stopwords are dropped unless nothing else would be left.

    A query of more than MAX_QUERY_TERMS distinct terms (a whole prompt) keeps its first ones, except that the
    terms of `focus` (the part of it that carries the ask, wherever it stands) come first and are marked to be
    kept: a question at the end of a long prompt is not cut off.
    """
    words, grams = _split(query, drop_stopwords=True)
    if not words and not grams:
        words, grams = _split(query, drop_stopwords=False)
    focus_words: list[str] = []
    focus_grams: list[str] = []
    if focus:
        focus_words, focus_grams = _split(focus, drop_stopwords=True)
        focus_grams = [g for g in focus_grams if len(g) == 2]
    # A single CJK character has no bigram of its own; it is looked up as a word only.
    kept_words = _unique(focus_words + words)
    kept_grams = _unique(focus_grams + [g for g in grams if len(g) == 2])
    return QueryTerms(kept_words, kept_grams, frozenset(focus_words + focus_grams) & {*kept_words, *kept_grams})


def fts_or(terms: tuple[str, ...]) -> str:
    """An FTS5 OR expression of quoted terms (terms never contain quotes: they are word runs)."""
    return " OR ".join(f'"{t}"' for t in terms)
