"""The search channels of the SQLite skill store: BM25 over heads, their vectors, and the name fast path.

Only heads are indexed. Full-text terms are qualified per tenant (a search without a team still reads one
owner's postings); vectors are indexed per (tenant, team), so a search over several teams asks each team's
index with the caller's allowed heads and merges by cosine. The filter applies before every top-k.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np

from memhub.model.query import QueryTerms
from memhub.model.skills import SkillFilter, SkillVersion
from memhub.store.sqlite.fts import rank_to_score
from memhub.store.sqlite.skill_rows import SKILL_FTS, dumps, fts_owner, heads_where, rows_by_rowid, versions_of

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore


class SkillSearch:
    """search_lexical / search_semantic / similarities / names_in of SQLiteSkillStore."""

    if TYPE_CHECKING:  # provided by SQLiteSkillStore
        store: SQLiteStore

        def _snapshot(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def search_lexical(
        self, service_id: str, flt: SkillFilter, terms: QueryTerms, limit: int
    ) -> list[tuple[SkillVersion, float]]:
        where, params = heads_where(service_id, flt)
        with self._snapshot() as con:
            hits = SKILL_FTS.search(con, fts_owner(service_id), terms, where, params, limit, narrowed=True)
            found = versions_of(con, [row for row, _ in hits])
        return [(version, rank_to_score(rank)) for version, (_, rank) in zip(found, hits, strict=True)]

    def _nearest(
        self, con: sqlite3.Connection, allowed: Sequence[sqlite3.Row], vector: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the nearest among `allowed` heads (rows of rowid and scope_key), best first."""
        by_scope: dict[str, list[int]] = {}
        for row in allowed:
            by_scope.setdefault(row["scope_key"], []).append(row["rowid"])
        vectors = self.store._vectors["skill"]
        hits: list[tuple[int, float]] = []
        for scope_key, rowids in by_scope.items():
            hits += vectors.search(con, scope_key, vector, min(limit, len(rowids)), rowids)
        hits.sort(key=lambda hit: -hit[1])
        return hits[:limit]

    def search_semantic(
        self, service_id: str, flt: SkillFilter, vector: np.ndarray, limit: int
    ) -> list[tuple[SkillVersion, float]]:
        self.store._sync_model()
        where, params = heads_where(service_id, flt)
        # Not in one snapshot: loading a scope's vector index opens a read transaction of its own. The winners
        # are checked against the filter again, so a head replaced or deleted meanwhile is never returned.
        con = self.store._reader()
        allowed = con.execute(f"SELECT c.rowid, c.scope_key FROM skill_versions c WHERE {where}", params).fetchall()
        hits = self._nearest(con, allowed, vector, limit)
        with self._snapshot() as snap:
            rows = rows_by_rowid(snap, [k for k, _ in hits], where, params)
            kept = [(rows[k], s) for k, s in hits if k in rows]
            found = versions_of(snap, [row for row, _ in kept])
        return [(version, score) for version, (_, score) in zip(found, kept, strict=True)]

    def similarities(self, service_id: str, vector: np.ndarray, skill_ids: Sequence[str]) -> dict[str, float]:
        if not skill_ids:
            return {}
        self.store._sync_model()
        con = self.store._reader()
        heads = con.execute(
            "SELECT rowid, scope_key, skill_id FROM skill_versions WHERE service_id = ? AND is_head = 1 "
            "AND skill_id IN (SELECT value FROM json_each(?))",
            (service_id, dumps(list(skill_ids))),
        ).fetchall()
        by_rowid = {r["rowid"]: r["skill_id"] for r in heads}
        return {by_rowid[k]: s for k, s in self._nearest(con, heads, vector, len(heads)) if k in by_rowid}

    def names_in(self, service_id: str, flt: SkillFilter, text: str, min_length: int) -> list[SkillVersion]:
        where, params = heads_where(service_id, flt)
        candidates = name_candidates(text, max(min_length, 1))
        with self._snapshot() as con:
            if candidates is not None:
                # Every piece of the text a name could be: looked up in the names index, one probe each.
                named = con.execute(
                    "SELECT rowid FROM skill_versions INDEXED BY skill_head_names "
                    "WHERE service_id = ? AND is_head = 1 AND name IN (SELECT value FROM json_each(?))",
                    (service_id, dumps(candidates)),
                ).fetchall()
            else:
                # A text with long unbroken runs has too many pieces: scan the names instead.
                named = con.execute(
                    "SELECT rowid FROM skill_versions INDEXED BY skill_head_names "
                    "WHERE service_id = ? AND is_head = 1 AND length(name) >= ? AND instr(?, name) > 0",
                    (service_id, max(min_length, 1), text.lower()),
                ).fetchall()
            if not named:
                return []
            rows = con.execute(
                f"SELECT c.* FROM skill_versions c WHERE {where} AND c.rowid IN (SELECT value FROM json_each(?)) "
                "ORDER BY length(c.name) DESC, c.updated_ms DESC, c.rowid DESC",
                [*params, dumps([r[0] for r in named])],
            ).fetchall()
            return versions_of(con, rows)


_NAME_RUN = re.compile(r"[a-z0-9-]+")
MAX_NAME_CHARS = 64
MAX_NAME_CANDIDATES = 4_000


def name_candidates(text: str, min_length: int) -> list[str] | None:
    """Every substring of the lowercased text that could be a skill name, or None when there are too many.

    A name is lowercase letters, digits and hyphens (the SKILL.md name rule), so a name occurring in the text
    lies inside one run of those characters: the substrings of each run between `min_length` and 64 characters.
    """
    found: set[str] = set()
    for run in _NAME_RUN.findall(text.lower()):
        for start in range(len(run) - min_length + 1):
            for end in range(start + min_length, min(len(run), start + MAX_NAME_CHARS) + 1):
                found.add(run[start:end])
            if len(found) > MAX_NAME_CANDIDATES:
                return None
    return sorted(found)
