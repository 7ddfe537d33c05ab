"""A search query as the store receives it: its distinct terms, already tokenized."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """Distinct terms of a query, for the words column and the CJK bigram column."""

    words: tuple[str, ...]
    grams: tuple[str, ...]
    # Terms of the part of a long query most likely to hold its ask (memhub.retrieval.query_focus): when the store
    # searches a long query by its rarest terms only, these are kept whatever their frequency.
    focus: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.words and not self.grams
