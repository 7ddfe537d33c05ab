"""L1 atomic memories in the SQLite store: a part of SQLiteStore, in its own module to keep both small.

The methods run on a SQLiteStore (they use its connections, embedding queue, vector caches and
audit helper); `_insert_atomic`, `_retire_version` and `_atomic` are also used by the pipeline
store inside its own transactions.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memhub.index.tokenize import index_text
from memhub.model.query import QueryTerms
from memhub.model.records import AtomicFilter, AtomicRecord, AuditContext, EmbeddingKind, NewAtomic
from memhub.scope import MemoryScope
from memhub.store.sqlite.fts import FtsIndex, owner_prefix, qualify, rank_to_score
from memhub.store.sqlite.util import chunks, json_or_none
from memhub.timeutil import now_ms

_ATOMIC_FTS = FtsIndex(fts="l1_fts", vocab="l1_vocab", content="l1_atomic")


class AtomicTables:
    """add / get / update / query / count / search / delete of L1 memories."""

    if TYPE_CHECKING:  # provided by SQLiteStore
        _vectors: dict[str, Any]

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _reader(self) -> sqlite3.Connection: ...
        def _enqueue(self, con: sqlite3.Connection, kind: EmbeddingKind, refs: Sequence[int]) -> None: ...
        def _reembed(
            self, con: sqlite3.Connection, kind: EmbeddingKind, scope_key: str, refs: Sequence[int]
        ) -> None: ...
        def _count(self, table: str, where: str, params: Sequence[Any]) -> int: ...
        def _page(
            self, table: str, where: str, params: Sequence[Any], order_by: str, limit: int, offset: int
        ) -> tuple[list[sqlite3.Row], int]: ...
        def _audit(self, con: sqlite3.Connection, *args: Any) -> None: ...

    @staticmethod
    def _atomic(row: sqlite3.Row) -> AtomicRecord:
        return AtomicRecord(
            id=row["id"],
            service_id=row["service_id"],
            team_id=row["team_id"],
            user_id=row["user_id"],
            agent_id=row["agent_id"],
            task_id=row["task_id"],
            session_id=row["session_id"],
            type=row["type"],
            content=row["content"],
            priority=row["priority"],
            scene_name=row["scene_name"],
            version=row["version"],
            created_ms=row["created_ms"],
            updated_ms=row["updated_ms"],
            source_message_ids=tuple(json.loads(row["source_ids_json"])),
            metadata=json.loads(row["metadata_json"]) if row["metadata_json"] else None,
        )

    def add_atomic(self, scope: MemoryScope, records: Sequence[NewAtomic]) -> list[AtomicRecord]:
        with self._write() as con:
            return self._insert_atomic(con, scope, records)

    def _insert_atomic(
        self, con: sqlite3.Connection, scope: MemoryScope, records: Sequence[NewAtomic]
    ) -> list[AtomicRecord]:
        """Insert L1 memories inside the caller's transaction (indexed, queued for embedding)."""
        if not records:
            return []
        key = scope.key
        prefix = owner_prefix(key)
        for rec in records:
            cur = con.execute(
                "INSERT INTO l1_atomic (id, scope_key, service_id, team_id, user_id, agent_id, task_id, "
                "session_id, type, content, priority, scene_name, version, source_ids_json, metadata_json, "
                "created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
                (
                    rec.id,
                    key,
                    scope.service_id,
                    scope.team_id,
                    scope.user_id,
                    scope.agent_id,
                    scope.task_id,
                    rec.session_id,
                    rec.type,
                    rec.content,
                    rec.priority,
                    rec.scene_name,
                    json.dumps(list(rec.source_message_ids)),
                    json_or_none(rec.metadata),
                    rec.created_ms,
                    rec.created_ms,
                ),
            )
            words = qualify(prefix, index_text(rec.content))
            con.execute("INSERT INTO l1_fts (rowid, words, grams) VALUES (?, ?, ?)", (cur.lastrowid, *words))
            self._enqueue(con, "l1", [cur.lastrowid])
        marks = ",".join("?" * len(records))
        rows = con.execute(
            f"SELECT * FROM l1_atomic WHERE id IN ({marks}) ORDER BY rowid", [r.id for r in records]
        ).fetchall()
        return [self._atomic(r) for r in rows]

    def _retire_version(
        self, con: sqlite3.Connection, row: sqlite3.Row, superseded_by: str, reason: str, at_ms: int
    ) -> None:
        """Keep the version a change replaces in l1_history: nothing is overwritten in place."""
        con.execute(
            "INSERT INTO l1_history (id, service_id, scope_key, version, type, content, priority, scene_name, "
            "source_ids_json, metadata_json, valid_from_ms, valid_to_ms, superseded_by, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row["id"],
                row["service_id"],
                row["scope_key"],
                row["version"],
                row["type"],
                row["content"],
                row["priority"],
                row["scene_name"],
                row["source_ids_json"],
                row["metadata_json"],
                row["updated_ms"],
                at_ms,
                superseded_by,
                reason,
            ),
        )

    def get_atomic(self, service_id: str, atomic_id: str) -> AtomicRecord | None:
        row = (
            self._reader()
            .execute("SELECT * FROM l1_atomic WHERE service_id = ? AND id = ?", (service_id, atomic_id))
            .fetchone()
        )
        return None if row is None else self._atomic(row)

    def update_atomic(
        self,
        service_id: str,
        atomic_id: str,
        content: str,
        scene_name: str | None,
        now_ms: int,
        audit: AuditContext,
    ) -> AtomicRecord | None:
        plain = index_text(content)
        with self._write() as con:
            row = con.execute(
                "SELECT rowid, * FROM l1_atomic WHERE service_id = ? AND id = ?", (service_id, atomic_id)
            ).fetchone()
            if row is None:
                return None
            new_scene = scene_name if scene_name is not None else row["scene_name"]
            self._retire_version(con, row, atomic_id, "update", now_ms)
            con.execute(
                "UPDATE l1_atomic SET content = ?, scene_name = ?, version = version + 1, updated_ms = ? "
                "WHERE rowid = ?",
                (content, new_scene, now_ms, row["rowid"]),
            )
            con.execute("DELETE FROM l1_fts WHERE rowid = ?", (row["rowid"],))
            con.execute(
                "INSERT INTO l1_fts (rowid, words, grams) VALUES (?, ?, ?)",
                (row["rowid"], *qualify(owner_prefix(row["scope_key"]), plain)),
            )
            self._reembed(con, "l1", row["scope_key"], [row["rowid"]])
            self._audit(con, service_id, atomic_id, "L1", "update", row["version"] + 1, now_ms, audit)
            updated = con.execute("SELECT * FROM l1_atomic WHERE rowid = ?", (row["rowid"],)).fetchone()
        return self._atomic(updated)

    @staticmethod
    def _atomic_where(scope: MemoryScope, flt: AtomicFilter, alias: str = "") -> tuple[str, list[Any]]:
        p = f"{alias}." if alias else ""
        clauses = [f"{p}scope_key = ?"]
        params: list[Any] = [scope.key]
        if flt.type is not None:
            clauses.append(f"{p}type = ?")
            params.append(flt.type)
        if flt.time_start_ms is not None:
            clauses.append(f"{p}updated_ms >= ?")
            params.append(flt.time_start_ms)
        if flt.time_end_ms is not None:
            clauses.append(f"{p}updated_ms <= ?")
            params.append(flt.time_end_ms)
        return " AND ".join(clauses), params

    def query_atomic(
        self, scope: MemoryScope, flt: AtomicFilter, limit: int, offset: int
    ) -> tuple[list[AtomicRecord], int]:
        where, params = self._atomic_where(scope, flt)
        rows, total = self._page("l1_atomic", where, params, "updated_ms DESC, rowid DESC", limit, offset)
        return [self._atomic(r) for r in rows], total

    def count_atomic(self, scope: MemoryScope, flt: AtomicFilter) -> int:
        return self._count("l1_atomic", *self._atomic_where(scope, flt))

    def search_atomic(
        self, scope: MemoryScope, terms: QueryTerms, flt: AtomicFilter, limit: int
    ) -> list[tuple[AtomicRecord, float]]:
        where, params = self._atomic_where(scope, flt, alias="c")
        hits = _ATOMIC_FTS.search(
            self._reader(), scope.key, terms, where, params, limit, narrowed=flt != AtomicFilter()
        )
        return [(self._atomic(row), rank_to_score(rank)) for row, rank in hits]

    def delete_atomic(self, scope: MemoryScope, ids: Sequence[str], audit: AuditContext) -> list[AtomicRecord]:
        deleted: list[AtomicRecord] = []
        stamp = now_ms()
        with self._write() as con:
            for chunk in chunks(list(ids), 500):
                marks = ",".join("?" * len(chunk))
                rows = con.execute(
                    f"SELECT rowid, * FROM l1_atomic WHERE +scope_key = ? AND id IN ({marks})", [scope.key, *chunk]
                ).fetchall()
                self._vectors["l1"].remove(con, scope.key, [row["rowid"] for row in rows])
                for row in rows:
                    con.execute("DELETE FROM l1_atomic WHERE rowid = ?", (row["rowid"],))
                    con.execute("DELETE FROM l1_fts WHERE rowid = ?", (row["rowid"],))
                    con.execute("DELETE FROM embedding_queue WHERE kind = 'l1' AND ref = ?", (row["rowid"],))
                    self._audit(con, scope.service_id, row["id"], "L1", "delete", row["version"], stamp, audit)
                    deleted.append(self._atomic(row))
        return deleted
