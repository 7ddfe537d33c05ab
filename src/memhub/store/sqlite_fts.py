"""BM25 search over FTS5 with owner-qualified terms and term pruning.

Filtering inside the index: every indexed term is prefixed with a short key of its owner's scope
(`x<12 hex>hike`), so each scope has posting lists of its own. A search reads only its scope's
postings — no global top-k followed by a filter, and no AND with a scope-wide posting list (which
cost ~4 ms at 100k documents). The exact scope is still checked on the joined row, so a prefix
collision can never leak a record. Term statistics (df, hence idf) are per scope as a bonus.

Term pruning: FTS5 computes bm25() for every document that matches, so a query term found in a
large share of a scope costs time in proportion to that share while adding little to the ranking
(its IDF is low). Terms are taken rarest first while the postings they bring stay under a budget
(the rarest is always taken). When terms were left out, a wider set of candidates is fetched and
the left-out terms are scored on those candidates in Python with the same BM25 formula (at average
length), so a document holding every query term still ranks first. Re-running a MATCH per
candidate rowid inside FTS5 costs about a millisecond each, hence Python. When even the rarest
term is over the budget (a query of only very common words), ranking is bounded to that term's
newest postings: FTS5 walks postings in rowid order cheaply without ranking, and a rowid floor
then limits the ranked set, so latency stays flat however large the scope grows.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhub.retrieval.tokenize import IndexText, QueryTerms, fts_or

POSTING_BUDGET = 4_000
RESCORE_FACTOR = 8
MIN_RESCORE = 64
_COLUMN_WEIGHTS = {"words": 1.0, "grams": 0.5}  # bigrams back up the words
_WEIGHTS = "1.0, 0.5"
_K1 = 1.2  # FTS5's bm25() constant


def owner_prefix(scope_key: str) -> str:
    """The fixed-length prefix that qualifies every term of one owner."""
    return "x" + hashlib.blake2b(scope_key.encode(), digest_size=6).hexdigest()


def qualify(prefix: str, text: IndexText) -> tuple[str, str]:
    """Index columns (words, grams) with every term qualified by the owner prefix."""
    return (
        " ".join(prefix + t for t in text.words.split()),
        " ".join(prefix + t for t in text.grams.split()),
    )


def rank_to_score(rank: float) -> float:
    """FTS5 bm25() is negative, better matches more negative; map it to (0, 1), higher is better."""
    r = max(-rank, 0.0)
    return r / (1.0 + r)


@dataclass(frozen=True, slots=True)
class FtsIndex:
    """One FTS5 table (words, grams) whose rowids are the rowids of a content table."""

    fts: str
    vocab: str
    content: str

    def _document_frequencies(
        self, con: sqlite3.Connection, prefix: str, terms: QueryTerms
    ) -> dict[tuple[str, str], int]:
        wanted = {("words", prefix + t): t for t in terms.words} | {("grams", prefix + t): t for t in terms.grams}
        qualified = sorted({term for _, term in wanted})
        marks = ",".join("?" * len(qualified))
        rows = con.execute(f"SELECT term, col, doc FROM {self.vocab} WHERE term IN ({marks})", qualified)
        return {(col, wanted[(col, term)]): doc for term, col, doc in rows if (col, term) in wanted}

    def _plan(
        self, con: sqlite3.Connection, prefix: str, terms: QueryTerms
    ) -> tuple[QueryTerms, dict[tuple[str, str], int], int]:
        """Terms to match on (rarest first, within budget), the left-out terms with their df, and
        the df of the rarest term (0 when no term occurs)."""
        present = sorted(self._document_frequencies(con, prefix, terms).items(), key=lambda item: item[1])
        kept: list[tuple[str, str]] = []
        spent = 0
        for key, count in present:
            if kept and spent + count > POSTING_BUDGET:
                break
            kept.append(key)
            spent += count
        left_out = dict(present[len(kept) :])
        words = tuple(t for c, t in kept if c == "words")
        grams = tuple(t for c, t in kept if c == "grams")
        return QueryTerms(words, grams), left_out, (present[0][1] if present else 0)

    @staticmethod
    def _expression(prefix: str, terms: QueryTerms) -> str:
        parts = []
        if terms.words:
            parts.append(f"words : ({fts_or(tuple(prefix + t for t in terms.words))})")
        if terms.grams:
            parts.append(f"grams : ({fts_or(tuple(prefix + t for t in terms.grams))})")
        return " OR ".join(parts)

    def _left_out_scores(
        self,
        con: sqlite3.Connection,
        rowids: Sequence[int],
        prefix: str,
        left_out: dict[tuple[str, str], int],
        total_docs: int,
    ) -> dict[int, float]:
        """BM25 contribution of the left-out terms to each candidate, at average document length.

        Term frequencies come from the terms already stored in the index, not a second tokenizing.
        """
        marks = ",".join("?" * len(rowids))
        stored = con.execute(f"SELECT rowid, words, grams FROM {self.fts} WHERE rowid IN ({marks})", list(rowids))
        weights = {
            (col, prefix + term): _COLUMN_WEIGHTS[col] * max(math.log((total_docs - df + 0.5) / (df + 0.5)), 1e-6)
            for (col, term), df in left_out.items()
        }
        scores: dict[int, float] = {}
        for rowid, words, grams in stored:
            tf = {"words": Counter(words.split()), "grams": Counter(grams.split())}
            score = 0.0
            for (col, term), weight in weights.items():
                count = tf[col][term]
                if count:
                    score += weight * count * (_K1 + 1) / (count + _K1)
            scores[rowid] = score
        return scores

    def _newest_postings_floor(self, con: sqlite3.Connection, expression: str) -> int:
        row = con.execute(
            f"SELECT rowid FROM {self.fts} WHERE {self.fts} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (expression, POSTING_BUDGET - 1),
        ).fetchone()
        return 0 if row is None else row[0]

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
        plan, left_out, rarest_df = self._plan(con, prefix, terms)
        if plan.empty:  # no query term occurs in this scope
            return []
        fetch = max(limit * RESCORE_FACTOR, MIN_RESCORE) if left_out else limit
        expression = self._expression(prefix, plan)
        floor = self._newest_postings_floor(con, expression) if rarest_df > POSTING_BUDGET else 0
        if narrowed:
            # Session/time/type filters must apply before the top-k, so rank the joined rows.
            sql = (
                f"SELECT c.*, bm25({self.fts}, {_WEIGHTS}) AS rank_ FROM {self.fts} "
                f"JOIN {self.content} c ON c.rowid = {self.fts}.rowid "
                f"WHERE {self.fts} MATCH ? AND {self.fts}.rowid >= ? AND {where} ORDER BY rank_ LIMIT ?"
            )
            rows = con.execute(sql, [expression, floor, *params, fetch]).fetchall()
        else:
            # The owner prefix already confines matches to the scope: rank inside FTS5 alone, then
            # join only the winners (joining first would drag every match's row through the sort).
            # `where` still checks the exact scope, so a prefix collision can never leak a record.
            sql = (
                f"SELECT c.*, f.rank_ FROM (SELECT rowid, bm25({self.fts}, {_WEIGHTS}) AS rank_ FROM {self.fts} "
                f"WHERE {self.fts} MATCH ? AND rowid >= ? ORDER BY rank_ LIMIT ?) f "
                f"JOIN {self.content} c ON c.rowid = f.rowid WHERE {where} ORDER BY f.rank_"
            )
            rows = con.execute(sql, [expression, floor, fetch, *params]).fetchall()
        if not left_out:
            return [(r, r["rank_"]) for r in rows]
        # FTS5's idf uses the table's row count; the largest rowid stands in for it (same magnitude).
        largest_df = max(left_out.values())
        total_docs = max(con.execute(f"SELECT max(rowid) FROM {self.content}").fetchone()[0] or 1, largest_df)
        extra = self._left_out_scores(con, [r["rowid"] for r in rows], prefix, left_out, total_docs)
        rescored = [(r, r["rank_"] - extra.get(r["rowid"], 0.0)) for r in rows]
        rescored.sort(key=lambda item: item[1])
        return rescored[:limit]
