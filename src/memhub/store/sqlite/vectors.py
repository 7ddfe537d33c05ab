"""Per-scope vector indexes over the float32 BLOBs of one SQLite vector table.

SQLite holds the vectors; each scope's `VectorIndex` (exact scan, or HNSW once the scope is large)
is built from them on the scope's first vector search and kept in memory. Every scope has one index
of its own, so a vector search is filtered by scope by construction, never a global top-k followed
by a filter.

Staying in step with the database:
- This process's writes change the cached index inside the write transaction, before COMMIT, and
  move its epoch forward with the database's `vector_epochs` row. A search that reads the database
  epoch just before that COMMIT sees an index that is at least as new, which is harmless: added
  vectors show up a moment early, deleted ones vanish a moment early.
- Another process's writes (a second gateway on the same file) move only the database epoch. A
  search that finds the database ahead of its cache reloads that scope.
- A rolled-back write drops every cached index (`forget_all`); they reload on demand.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memhub.index.vectors import VectorIndex


@dataclass(slots=True)
class _Cached:
    index: VectorIndex
    epoch: int


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as stored: little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors as an (n, dim) float32 matrix."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim).astype(np.float32, copy=False)


class ScopeVectors:
    """The cached indexes of one kind of record (`l0` messages or `l1` memories)."""

    def __init__(self, kind: str, vector_table: str, content_table: str, *, exact_limit: int) -> None:
        self.kind = kind
        self.vector_table = vector_table
        self.content_table = content_table
        self.exact_limit = exact_limit
        self.dim = 0
        self._cached: dict[str, _Cached] = {}
        self._lock = threading.Lock()

    # -- epochs ------------------------------------------------------------------------------
    def db_epoch(self, con: sqlite3.Connection, scope_key: str) -> int:
        """The scope's change counter as the connection's snapshot sees it."""
        row = con.execute(
            "SELECT epoch FROM vector_epochs WHERE kind = ? AND scope_key = ?", (self.kind, scope_key)
        ).fetchone()
        return row[0] if row else 0

    def _bump(self, con: sqlite3.Connection, scope_key: str) -> int:
        row = con.execute(
            "INSERT INTO vector_epochs (kind, scope_key, epoch) VALUES (?, ?, 1) "
            "ON CONFLICT (kind, scope_key) DO UPDATE SET epoch = epoch + 1 RETURNING epoch",
            (self.kind, scope_key),
        ).fetchone()
        return int(row[0])

    # -- writes (inside the writer's transaction) ----------------------------------------------
    def upsert(self, con: sqlite3.Connection, scope_key: str, keys: Sequence[int], vectors: np.ndarray) -> None:
        """Store vectors of one scope's records and apply them to the cached index."""
        con.executemany(
            f"INSERT INTO {self.vector_table} (rowid, vector) VALUES (?, ?) "
            "ON CONFLICT (rowid) DO UPDATE SET vector = excluded.vector",
            [(int(k), to_blob(v)) for k, v in zip(keys, vectors, strict=True)],
        )
        epoch = self._bump(con, scope_key)
        with self._lock:
            cached = self._cached.get(scope_key)
            if cached is not None:
                cached.index.upsert(np.asarray(keys, dtype=np.int64), vectors)
                cached.epoch = epoch

    def remove(self, con: sqlite3.Connection, scope_key: str, keys: Sequence[int]) -> None:
        """Delete the vectors of some of a scope's records (deleted, or their text changed)."""
        if not keys:
            return
        con.executemany(f"DELETE FROM {self.vector_table} WHERE rowid = ?", [(int(k),) for k in keys])
        epoch = self._bump(con, scope_key)
        with self._lock:
            cached = self._cached.get(scope_key)
            if cached is not None:
                cached.index.remove(np.asarray(keys, dtype=np.int64))
                cached.epoch = epoch

    def forget_all(self) -> None:
        """Drop every cached index (after a rollback, or when the model changes)."""
        with self._lock:
            cached, self._cached = self._cached, {}
        for entry in cached.values():
            entry.index.close()

    # -- reads ---------------------------------------------------------------------------------
    def index(self, con: sqlite3.Connection, scope_key: str) -> VectorIndex | None:
        """The scope's index, loaded or reloaded when the database is ahead; None without vectors."""
        if not self.dim:
            return None
        epoch = self.db_epoch(con, scope_key)
        if epoch == 0:
            return None
        with self._lock:
            cached = self._cached.get(scope_key)
            if cached is not None and cached.epoch >= epoch:
                return cached.index
        return self._load(con, scope_key)

    def _load(self, con: sqlite3.Connection, scope_key: str) -> VectorIndex:
        con.execute("BEGIN")  # the epoch and the vectors come from one snapshot
        try:
            epoch = self.db_epoch(con, scope_key)
            rows = con.execute(
                f"SELECT v.rowid, v.vector FROM {self.content_table} c JOIN {self.vector_table} v "
                "ON v.rowid = c.rowid WHERE c.scope_key = ?",
                (scope_key,),
            ).fetchall()
        finally:
            con.execute("COMMIT")
        index = VectorIndex(self.dim, exact_limit=self.exact_limit)
        if rows:
            keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            index.upsert(keys, from_blobs([r[1] for r in rows], self.dim))
        with self._lock:
            current = self._cached.get(scope_key)
            if current is not None and current.epoch >= epoch:
                index.close()  # another thread loaded (or a writer advanced) it meanwhile
                return current.index
            self._cached[scope_key] = _Cached(index, epoch)
            if current is not None:
                current.index.close()
        return index

    def search(
        self,
        con: sqlite3.Connection,
        scope_key: str,
        query: np.ndarray,
        limit: int,
        allowed: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) best first; `allowed` restricts the candidates before the top-k."""
        index = self.index(con, scope_key)
        if index is None or limit <= 0:
            return []
        keys = None if allowed is None else np.asarray(allowed, dtype=np.int64)
        if keys is not None and len(keys) == 0:
            return []
        return index.search(query, limit, allowed=keys)

    def close(self) -> None:
        """Stop background index builds."""
        self.forget_all()
