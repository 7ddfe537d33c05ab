"""A search query as the store receives it: its distinct terms, already tokenized."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """Distinct terms of a query, for the words column and the CJK bigram column."""

    words: tuple[str, ...]
    grams: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.grams
