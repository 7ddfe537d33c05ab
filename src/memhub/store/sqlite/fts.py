"""BM25 search over FTS5 with owner-qualified terms and bounded work per query.

Filtering inside the index: every indexed term is prefixed with a short key of its owner's scope
(`x<12 hex>hike`), so each scope has posting lists of its own. A search reads only its scope's
postings — no global top-k followed by a filter, and no AND with a scope-wide posting list (which
cost ~4 ms at 100k documents). The exact scope is still checked on the joined row, so a prefix
collision can never leak a record. Term statistics (df, hence idf) are per scope as a bonus.

Bounded work: FTS5 computes bm25() for every matching document, so a term found in a large share
of a scope costs time in proportion to that share while adding little to the ranking (low IDF).
When the postings of all query terms exceed a budget, the search gathers candidates cheaply
instead of ranking everything:

1. the best documents by the rarest terms that fit in the budget (ranked by FTS5),
2. the newest documents that contain every query term (an AND walked in rowid order, no ranking),

and scores the candidates in Python with exactly FTS5's bm25 (same N, average length, idf and
column weights), so scores agree with the unbounded path and a document holding every query term
is never lost behind the cut. If even the rarest term is over the budget, source 1 ranks only that
term's newest postings (FTS5 walks postings in rowid order cheaply; a rowid floor then bounds the
ranked set), so latency stays flat however large a scope grows. A query of more than MAX_QUERY_TERMS distinct
terms (a whole prompt) is searched by its rarest ones, so a long prompt costs about what a question does.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memhub.index.tokenize import IndexText, fts_or
from memhub.model.query import QueryTerms

POSTING_BUDGET = 4_000
# A query with more distinct terms than this (a whole prompt used as the query) is searched by its rarest ones:
# common words add little to BM25 and each one costs postings and scoring work.
MAX_QUERY_TERMS = 32
CANDIDATE_FACTOR = 2
MIN_CANDIDATES = 64
_K1, _B = 1.2, 0.75  # FTS5's bm25() constants

Term = tuple[str, str]  # (column, unqualified term)


@dataclass(frozen=True, slots=True)
class FtsColumn:
    """One column of an FTS table: its bm25 weight and which query terms are looked up in it."""

    name: str
    weight: float
    terms: Literal["words", "grams"]


WORDS = FtsColumn("words", 1.0, "words")
GRAMS = FtsColumn("grams", 0.5, "grams")  # CJK bigrams back up the segmented words
# The words of neighbouring turns, so a reply is found by the question it answers ("Which book?"
# → "The Alchemist"). Weighted low: a turn's own words must still win. Tuned on LoCoMo (bench/locomo.py).
CONTEXT = FtsColumn("context", 0.3, "words")


def owner_prefix(scope_key: str) -> str:
    """The fixed-length prefix that qualifies every term of one owner."""
    return "x" + hashlib.blake2b(scope_key.encode(), digest_size=6).hexdigest()


def qualify(prefix: str, text: IndexText) -> tuple[str, str]:
    """Index columns (words, grams) with every term qualified by the owner prefix."""
    return qualify_terms(prefix, text.words), qualify_terms(prefix, text.grams)


def qualify_terms(prefix: str, terms: str) -> str:
    """Space-joined terms, each qualified by the owner prefix."""
    return " ".join(prefix + t for t in terms.split())


def rank_to_score(rank: float) -> float:
    """FTS5 bm25() is negative, better matches more negative; map it to (0, 1), higher is better."""
    r = max(-rank, 0.0)
    return r / (1.0 + r)


def _varints(blob: bytes) -> list[int]:
    """Decode SQLite varints (big-endian 7-bit groups; a 9th byte carries 8 bits)."""
    values: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


@dataclass(frozen=True, slots=True)
class FtsIndex:
    """One FTS5 table whose rowids are the rowids of a content table."""

    fts: str
    vocab: str
    content: str
    columns: tuple[FtsColumn, ...] = (WORDS, GRAMS)

    @property
    def _weights(self) -> str:
        return ", ".join(str(c.weight) for c in self.columns)

    def _column_terms(self, terms: QueryTerms) -> list[Term]:
        return [(c.name, t) for c in self.columns for t in (terms.words if c.terms == "words" else terms.grams)]

    # -- statistics ------------------------------------------------------------------------
    def _document_frequencies(self, con: sqlite3.Connection, prefix: str, terms: QueryTerms) -> dict[Term, int]:
        wanted = {(col, prefix + t): t for col, t in self._column_terms(terms)}
        qualified = sorted({term for _, term in wanted})
        marks = ",".join("?" * len(qualified))
        rows = con.execute(f"SELECT term, col, doc FROM {self.vocab} WHERE term IN ({marks})", qualified)
        return {(col, wanted[(col, term)]): doc for term, col, doc in rows if (col, term) in wanted}

    def _totals(self, con: sqlite3.Connection) -> tuple[int, float]:
        """Row count and average row length in tokens, from FTS5's own averages record."""
        row = con.execute(f"SELECT block FROM {self.fts}_data WHERE id = 1").fetchone()
        values = _varints(bytes(row[0])) if row and row[0] else []
        n_rows = values[0] if values else 0
        return n_rows, (sum(values[1:]) / n_rows if n_rows else 0.0)

    # -- expressions -------------------------------------------------------------------------
    def _any_of(self, prefix: str, terms: Sequence[Term]) -> str:
        parts = []
        for col in self.columns:
            mine = tuple(prefix + t for c, t in terms if c == col.name)
            if mine:
                parts.append(f"{col.name} : ({fts_or(mine)})")
        return " OR ".join(parts)

    @staticmethod
    def _all_of(prefix: str, terms: Sequence[Term]) -> str:
        """Every distinct term, each found in any of the columns it is looked up in."""
        columns: dict[str, list[str]] = {}
        for col, term in terms:
            columns.setdefault(term, []).append(col)
        return " AND ".join(f'{{{" ".join(cols)}}} : "{prefix}{term}"' for term, cols in columns.items())

    # -- search ------------------------------------------------------------------------------
    def search(
        self,
        con: sqlite3.Connection,
        scope_key: str,
        terms: QueryTerms,
        where: str,
        params: Sequence[Any],
        limit: int,
        *,
        narrowed: bool,
    ) -> list[tuple[sqlite3.Row, float]]:
        """Rows of the content table (alias `c` in `where`) with their bm25 rank, best first.

        `where` must check the scope; `narrowed` says it also filters further (session, time, type).
        """
        if terms.empty:
            return []
        prefix = owner_prefix(scope_key)
        df = self._document_frequencies(con, prefix, terms)
        # Rarest first; absent terms cannot match.
        present = _rarest_terms(sorted(df, key=df.__getitem__), terms.focus)
        if not present:
            return []
        if sum(df.values()) <= POSTING_BUDGET:
            return self._ranked(con, self._any_of(prefix, present), 0, where, params, limit, narrowed)
        return self._bounded(con, prefix, present, df, where, params, limit, narrowed)

    def _ranked(
        self,
        con: sqlite3.Connection,
        expression: str,
        floor: int,
        where: str,
        params: Sequence[Any],
        limit: int,
        narrowed: bool,
        columns: str = "c.*",
    ) -> list[tuple[sqlite3.Row, float]]:
        """FTS5 ranks every match (above a rowid floor) and the best rows are joined."""
        if narrowed:
            # Session/time/type filters must apply before the top-k, so rank the joined rows.
            sql = (
                f"SELECT {columns}, bm25({self.fts}, {self._weights}) AS rank_ FROM {self.fts} "
                f"JOIN {self.content} c ON c.rowid = {self.fts}.rowid "
                f"WHERE {self.fts} MATCH ? AND {self.fts}.rowid >= ? AND {where} ORDER BY rank_ LIMIT ?"
            )
            rows = con.execute(sql, [expression, floor, *params, limit]).fetchall()
        else:
            # The owner prefix already confines matches to the scope: rank inside FTS5 alone, then
            # join only the winners (joining first would drag every match's row through the sort).
            # `where` still checks the exact scope, so a prefix collision can never leak a record.
            sql = (
                f"SELECT {columns}, f.rank_ FROM (SELECT rowid, bm25({self.fts}, {self._weights}) AS rank_ "
                f"FROM {self.fts} WHERE {self.fts} MATCH ? AND rowid >= ? ORDER BY rank_ LIMIT ?) f "
                f"JOIN {self.content} c ON c.rowid = f.rowid WHERE {where} ORDER BY f.rank_"
            )
            rows = con.execute(sql, [expression, floor, limit, *params]).fetchall()
        return [(r, r["rank_"]) for r in rows]

    def _bounded(
        self,
        con: sqlite3.Connection,
        prefix: str,
        present: list[Term],
        df: dict[Term, int],
        where: str,
        params: Sequence[Any],
        limit: int,
        narrowed: bool,
    ) -> list[tuple[sqlite3.Row, float]]:
        """Gather candidates within the budget, then score them exactly with every term."""
        kept: list[Term] = []
        spent = 0
        for term in present:
            if kept and spent + df[term] > POSTING_BUDGET:
                break
            kept.append(term)
            spent += df[term]
        fetch = max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
        rare = self._any_of(prefix, kept)
        floor = self._newest_floor(con, rare, where, params, narrowed) if spent > POSTING_BUDGET else 0
        # Only rowids here: the few winners' rows are read once, after exact scoring.
        ranked = self._ranked(con, rare, floor, where, params, fetch, narrowed, columns="c.rowid")
        candidates = {r["rowid"] for r, _ in ranked}
        if len({term for _, term in present}) > 1:
            candidates |= self._newest_with_all(con, self._all_of(prefix, present), where, params, fetch)
        if not candidates:
            return []
        scores = self._bm25(con, prefix, sorted(candidates), present, df)
        best = sorted(scores, key=scores.__getitem__)[:limit]
        marks = ",".join("?" * len(best))
        # NOT INDEXED: look the few winners up by rowid; the planner would otherwise walk the scope index.
        sql = f"SELECT c.* FROM {self.content} AS c NOT INDEXED WHERE c.rowid IN ({marks}) AND {where}"
        rows = con.execute(sql, [*best, *params])
        ranked = [(r, scores[r["rowid"]]) for r in rows]
        ranked.sort(key=lambda item: item[1])
        return ranked

    def _newest_floor(
        self, con: sqlite3.Connection, expression: str, where: str, params: Sequence[Any], narrowed: bool
    ) -> int:
        """The rowid above which the expression's newest POSTING_BUDGET matches (passing the filters) lie."""
        if narrowed:
            sql = (
                f"SELECT {self.fts}.rowid FROM {self.fts} JOIN {self.content} c ON c.rowid = {self.fts}.rowid "
                f"WHERE {self.fts} MATCH ? AND {where} ORDER BY {self.fts}.rowid DESC LIMIT 1 OFFSET ?"
            )
            row = con.execute(sql, [expression, *params, POSTING_BUDGET - 1]).fetchone()
        else:
            sql = f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?"
            row = con.execute(sql, (expression, POSTING_BUDGET - 1)).fetchone()
        return 0 if row is None else row[0]

    def _newest_with_all(
        self, con: sqlite3.Connection, expression: str, where: str, params: Sequence[Any], fetch: int
    ) -> set[int]:
        sql = (
            f"SELECT {self.fts}.rowid FROM {self.fts} JOIN {self.content} c ON c.rowid = {self.fts}.rowid "
            f"WHERE {self.fts} MATCH ? AND {where} ORDER BY {self.fts}.rowid DESC LIMIT ?"
        )
        return {r[0] for r in con.execute(sql, [expression, *params, fetch])}

    def _bm25(
        self, con: sqlite3.Connection, prefix: str, rowids: Sequence[int], terms: Sequence[Term], df: dict[Term, int]
    ) -> dict[int, float]:
        """FTS5's bm25() for the given rows, computed from the terms stored in the index."""
        n_rows, avg_len = self._totals(con)
        idf = {t: max(math.log((n_rows - df[t] + 0.5) / (df[t] + 0.5)), 1e-6) for t in terms}
        marks = ",".join("?" * len(rowids))
        scores: dict[int, float] = {}
        names = [c.name for c in self.columns]
        weights = {c.name: c.weight for c in self.columns}
        sql = f"SELECT rowid, {', '.join(names)} FROM {self.fts} WHERE rowid IN ({marks})"
        # Per column, the query's tokens as stored (owner prefix + term) → the term.
        wanted: dict[str, dict[str, str]] = {}
        for col, term in terms:
            wanted.setdefault(col, {})[prefix + term] = term
        for rowid, *texts in con.execute(sql, list(rowids)):
            # One split per column, then a set lookup per token: a long prompt's 32 terms (64 with the context
            # column) counted by substring would scan each row once per term. Every stored token is one
            # space-separated qualified term, so the split gives FTS5's own token count and whole tokens only.
            length = 0
            freqs: dict[Term, int] = {}
            for name, text in zip(names, texts, strict=True):
                if not text:
                    continue
                tokens = text.split()
                length += len(tokens)
                lookup = wanted.get(name)
                if lookup:
                    for token in [t for t in tokens if t in lookup]:
                        key = (name, lookup[token])
                        freqs[key] = freqs.get(key, 0) + 1
            norm = _K1 * (1 - _B + _B * length / avg_len) if avg_len else _K1
            score = 0.0
            for key, count in freqs.items():
                freq = weights[key[0]] * count
                score += idf[key] * freq * (_K1 + 1) / (freq + norm)
            scores[rowid] = -score
        return scores


def _rarest_terms(present: list[Term], focus: frozenset[str] = frozenset()) -> list[Term]:
    """The (column, term) pairs of at most MAX_QUERY_TERMS distinct terms, rarest first: every term of the query's
    focus (its ask), then the rarest of the others."""
    distinct = list(dict.fromkeys(term for _, term in present))
    if len(distinct) <= MAX_QUERY_TERMS:
        return present
    kept = {term for term in distinct if term in focus}
    for term in distinct:
        if len(kept) >= MAX_QUERY_TERMS:
            break
        kept.add(term)
    return [pair for pair in present if pair[1] in kept]
