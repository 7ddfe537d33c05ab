"""Text → index terms, CJK-aware.

SQLite's unicode61 tokenizer turns a whole Chinese clause into one token, so Chinese text is
segmented here first (jieba `cut_for_search`, the Rust `rjieba` when installed). Every CJK run
also yields character bigrams in a separate column, so a short Chinese query that the
segmenter splits differently from the document still finds it instead of silently returning
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"[^\W_]+|[{_CJK}]", re.UNICODE)
_QUERY_WORD = re.compile(r"[^\W_]+", re.UNICODE)

# Words that match most English documents; dropping them from OR queries keeps BM25 fast and sharp.
_STOPWORDS = frozenset(
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


def has_cjk(text: str) -> bool:
    """True when the text contains at least one CJK ideograph."""
    return _CJK_RUN.search(text) is not None


def cjk_words(run: str) -> list[str]:
    """jieba search-mode segmentation of one CJK run."""
    return [w for w in (t.strip() for t in _segmenter()(run)) if w]


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of one CJK run (a lone character stands for itself)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@dataclass(frozen=True, slots=True)
class IndexText:
    """What goes into the full-text index for one record."""

    words: str
    grams: str


def index_text(text: str) -> IndexText:
    """Words column (CJK segmented, the rest as is) and the CJK bigram column."""
    if not has_cjk(text):
        return IndexText(words=text, grams="")
    grams: list[str] = []

    def segment(match: re.Match[str]) -> str:
        run = match.group(0)
        grams.extend(cjk_bigrams(run))
        return " " + " ".join(cjk_words(run)) + " "

    return IndexText(words=_CJK_RUN.sub(segment, text), grams=" ".join(grams))


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """Terms of a search query, for the words column and the bigram column."""

    words: tuple[str, ...]
    grams: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.grams


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))[:MAX_QUERY_TERMS]


def query_terms(query: str) -> QueryTerms:
    """Split a query into word terms (stopwords dropped unless nothing else is left) and bigrams."""
    words: list[str] = []
    grams: list[str] = []
    pos = 0
    for match in _CJK_RUN.finditer(query):
        words.extend(_QUERY_WORD.findall(query[pos : match.start()]))
        run = match.group(0)
        words.extend(w for w in cjk_words(run) if _QUERY_WORD.fullmatch(w))
        if len(run) >= 2:
            grams.extend(cjk_bigrams(run))
        pos = match.end()
    words.extend(_QUERY_WORD.findall(query[pos:]))
    lowered = [w.lower() for w in words]
    content = [w for w in lowered if w not in _STOPWORDS]
    return QueryTerms(words=_unique(content or lowered), grams=_unique(grams))


def fts_or(terms: tuple[str, ...]) -> str:
    """An FTS5 OR expression of quoted terms (terms never contain quotes: they are word runs)."""
    return " OR ".join(f'"{t}"' for t in terms)
