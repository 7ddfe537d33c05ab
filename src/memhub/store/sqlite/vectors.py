"""Per-scope vector indexes over the float32 BLOBs of one SQLite vector table.

SQLite holds the vectors; each scope's `VectorIndex` (exact scan, or HNSW once the scope is large)
is loaded on the scope's first vector search and kept in memory. Every scope has one index
of its own, so a vector search is filtered by scope by construction, never a global top-k followed
by a filter.

Loading: from the scope's snapshot (vector_snapshots.py) when there is one of this database at the
scope's epoch as the loading read transaction sees it, with the same model and dimension; else from
the SQL rows. A snapshot that fails its checks is deleted and the rows are read instead. One load per
scope at a time: a search that finds the scope loading (the start-up warm, another search) waits
for that load and uses its index.

Snapshots are written in the background (`SnapshotWriter`) for scopes of at least
`SNAPSHOT_MIN_VECTORS`: when a graph build publishes, when such a scope was loaded from SQL and no
build will follow, and `SNAPSHOT_REFRESH_SECONDS` after the first change since the last snapshot.
Only a state the database has committed is written: the index's epoch must equal the committed
epoch, and the index must not have changed, nor been dropped (a rollback), while it was copied.

Staying in step with the database:
- This process's writes change the cached index inside the write transaction, before COMMIT, and
  move its epoch forward with the database's `vector_epochs` row, if the index was at the epoch just
  before (otherwise it missed another process's change and is left behind, to be reloaded). A search
  that reads the database epoch just before that COMMIT sees an index that is at least as new, which
  is harmless: added vectors show up a moment early, deleted ones vanish a moment early.
- Another process's writes (a second gateway on the same file) move only the database epoch. A
  search that finds the database ahead of its cache reloads that scope.
- A rolled-back write drops every cached index (`forget_all`); they reload on demand.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memhub.index.vectors import GraphSource, VectorIndex
from memhub.store.sqlite.snapshot_writer import SnapshotWriter
from memhub.store.sqlite.vector_snapshots import SnapshotCorrupt, SnapshotMeta, VectorSnapshots
from memhub.timeutil import now_ms

log = logging.getLogger(__name__)

# Scopes with fewer vectors get no snapshot: their rows load from SQL in tens of milliseconds.
SNAPSHOT_MIN_VECTORS = 5_000
# A changed scope's snapshot is rewritten this long after its first change since the last one: a busy
# scope's ~240 MB (at 100k vectors) is not rewritten more often than this.
SNAPSHOT_REFRESH_SECONDS = 600.0
# A snapshot whose epoch is not committed yet (this process's write transaction is still open) is retried.
_UNCOMMITTED_RETRY_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """Whether and when scope snapshots are used and written."""

    enabled: bool = True
    min_vectors: int = SNAPSHOT_MIN_VECTORS
    refresh_seconds: float = SNAPSHOT_REFRESH_SECONDS


DEFAULT_SNAPSHOTS = SnapshotPolicy()


@dataclass(slots=True)
class _Cached:
    index: VectorIndex
    epoch: int
    snapshot_epoch: int = 0  # the epoch of the snapshot on disk that holds this index's state; 0: none
    snapshot_builds: int = 0  # the index's graph_builds when that snapshot was taken: a newer graph is worth saving

    def saved(self) -> bool:
        return self.snapshot_epoch == self.epoch and self.snapshot_builds == self.index.graph_builds


@dataclass(slots=True)
class _Loading:
    """A load in progress: other threads wanting the scope wait for it."""

    done: threading.Event = field(default_factory=threading.Event)
    waiters: int = 0


def to_blob(vector: np.ndarray) -> bytes:
    """A vector as stored: little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors as a writable (n, dim) float32 matrix (joined into a bytearray: one copy, not two)."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    joined = bytearray().join(blobs)
    return np.frombuffer(joined, dtype="<f4").reshape(len(blobs), dim).astype(np.float32, copy=False)


class ScopeVectors:
    """The cached indexes of one kind of record (`l0` messages, `l1` memories, skills)."""

    def __init__(
        self,
        kind: str,
        vector_table: str,
        content_table: str,
        *,
        exact_limit: int,
        snapshots: VectorSnapshots | None = None,
        writer: SnapshotWriter | None = None,
        reader: Callable[[], sqlite3.Connection] | None = None,
        policy: SnapshotPolicy = DEFAULT_SNAPSHOTS,
    ) -> None:
        self.kind = kind
        self.vector_table = vector_table
        self.content_table = content_table
        self.exact_limit = exact_limit
        self.dim = 0
        self.model_id = ""
        # How each index was loaded, "snapshot" or "sql" (diagnostics and tests).
        self.loads: Counter[str] = Counter()
        self._snapshots = snapshots if policy.enabled else None
        self._writer = writer
        self._reader = reader
        self._policy = policy
        self._cached: dict[str, _Cached] = {}
        self._loading: dict[str, _Loading] = {}
        self._closed = False
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
            "INSERT INTO vector_epochs (kind, scope_key, epoch, changed_ms) VALUES (?, ?, 1, ?) "
            "ON CONFLICT (kind, scope_key) DO UPDATE SET epoch = epoch + 1, changed_ms = excluded.changed_ms "
            "RETURNING epoch",
            (self.kind, scope_key, now_ms()),
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
                self._advance(scope_key, cached, epoch)

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
                self._advance(scope_key, cached, epoch)

    def _advance(self, scope_key: str, cached: _Cached, epoch: int) -> None:
        """The cached index took this write; it is at the new epoch only if it was at the one before. Caller holds
        the lock."""
        if cached.epoch != epoch - 1:
            return  # another process changed the scope since it was loaded: the next search reloads it
        cached.epoch = epoch
        if len(cached.index) >= self._policy.min_vectors:
            self._request_snapshot(scope_key, self._policy.refresh_seconds)

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
        while True:
            with self._lock:
                cached = self._cached.get(scope_key)
                if cached is not None and cached.epoch >= epoch:
                    return cached.index
                loading = self._loading.get(scope_key)
                if loading is None:
                    loading = self._loading[scope_key] = _Loading()
                    break
                loading.waiters += 1
            loading.done.wait()  # and then, most likely, its index is the one wanted
        try:
            return self._load(con, scope_key)
        finally:
            with self._lock:
                del self._loading[scope_key]
            loading.done.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the background work (graph builds, restores) of every cached index; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            indexes = [cached.index for cached in self._cached.values()]
        for index in indexes:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not index.wait_ready(left):
                return False
        return True

    def waiting_for_load(self, scope_key: str) -> int:
        """How many threads wait for the scope's load in progress (tests)."""
        with self._lock:
            loading = self._loading.get(scope_key)
            return 0 if loading is None else loading.waiters

    def _load(self, con: sqlite3.Connection, scope_key: str) -> VectorIndex:
        index, epoch, source = self._read(con, scope_key)
        with self._lock:
            self.loads[source] += 1
            current = self._cached.get(scope_key)
            if self._closed or (current is not None and current.epoch >= epoch):
                index.close()  # a writer advanced it meanwhile (or the store closed)
                return current.index if current is not None else index
            self._cached[scope_key] = _Cached(index, epoch, snapshot_epoch=epoch if source == "snapshot" else 0)
            if current is not None:
                current.index.close()
            if source == "sql" and len(index) >= self._policy.min_vectors:
                # Saved now unless a build runs (its end asks again itself; a tiny scope's build may even have
                # ended before the index got here). One from its snapshot is on disk already.
                self._request_snapshot(scope_key, 0.0)
        return index

    def _read(self, con: sqlite3.Connection, scope_key: str, *, snapshot: bool = True) -> tuple[VectorIndex, int, str]:
        """The scope's index and the epoch it is at, from its snapshot or else from SQL, and which it was."""
        snapshots = self._snapshots if snapshot else None
        con.execute("BEGIN")  # the epoch and the vectors (or the snapshot's check) come from one snapshot
        try:
            epoch = self.db_epoch(con, scope_key)
            meta = None
            if snapshots is not None:
                meta = snapshots.find(self.kind, scope_key, epoch=epoch, model_id=self.model_id, dim=self.dim)
            rows = None if meta is not None else self._rows(con, scope_key)
        finally:
            con.execute("COMMIT")
        if meta is not None:
            assert snapshots is not None
            index = self._from_snapshot(snapshots, meta)
            if index is not None:
                return index, epoch, "snapshot"
            return self._read(con, scope_key, snapshot=False)
        assert rows is not None
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        index = VectorIndex.of_rows(
            self.dim,
            keys,
            from_blobs([r[1] for r in rows], self.dim),
            exact_limit=self.exact_limit,
            on_graph_built=self._on_graph_built(scope_key),
        )
        return index, epoch, "sql"

    def _rows(self, con: sqlite3.Connection, scope_key: str) -> list[sqlite3.Row]:
        # The rowids first, then the vectors in rowid order: a join walks the scope's index in time order, which
        # reads the vector table's pages in random order once records were updated or scopes interleave
        # (100k vectors, cold cache: 0.9 s against 2.4 s).
        return con.execute(
            f"SELECT rowid, vector FROM {self.vector_table} "
            f"WHERE rowid IN (SELECT rowid FROM {self.content_table} WHERE scope_key = ?)",
            (scope_key,),
        ).fetchall()

    def _from_snapshot(self, snapshots: VectorSnapshots, meta: SnapshotMeta) -> VectorIndex | None:
        started = time.perf_counter()
        try:
            rows = snapshots.read_rows(meta)
        except SnapshotCorrupt as exc:
            log.warning("vector snapshot of %s scope unusable (%s): deleted, loading from SQL", self.kind, exc)
            snapshots.delete(meta)
            return None
        graph = None
        if meta.graph is not None:

            def unusable(exc: Exception) -> None:
                snapshots.delete(meta)  # the rows were good: the index builds a new graph, then a new snapshot

            graph = GraphSource(
                read=lambda: snapshots.read_graph(meta),
                pending=rows.pending,
                recent=rows.recent,
                tombstones=meta.graph["tombstones"],
                size=meta.graph["size"],
                on_failure=unusable,
            )
        index = VectorIndex.of_rows(
            self.dim,
            rows.keys,
            rows.matrix,
            graph=graph,
            exact_limit=self.exact_limit,
            on_graph_built=self._on_graph_built(meta.scope_key),
        )
        log.info(
            "%s vectors of a scope loaded from its snapshot in %.3f s (%d)",
            self.kind,
            time.perf_counter() - started,
            len(index),
        )
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

    # -- snapshots -------------------------------------------------------------------------------
    def _on_graph_built(self, scope_key: str) -> Callable[[], None]:
        return lambda: self._request_snapshot(scope_key, 0.0)

    def _request_snapshot(self, scope_key: str, delay: float) -> None:
        if self._snapshots is not None and self._writer is not None:
            self._writer.request((self.kind, scope_key), lambda: self._write_snapshot(scope_key), delay)

    def _write_snapshot(self, scope_key: str) -> float | None:
        """Write the scope's snapshot if its cached index holds a committed state not on disk yet (in the writer's
        thread); returns when to try again, or None."""
        snapshots, writer, reader = self._snapshots, self._writer, self._reader
        if snapshots is None or writer is None or reader is None:
            return None
        with self._lock:
            cached = self._cached.get(scope_key)
            if cached is None or cached.saved() or len(cached.index) < self._policy.min_vectors:
                return None
            epoch, version, model_id = cached.epoch, cached.index.version, self.model_id
        committed = self.db_epoch(reader(), scope_key)
        if committed < epoch:
            return _UNCOMMITTED_RETRY_SECONDS  # this process's write is not committed yet
        if committed > epoch:
            return None  # the index is behind: the next search reloads it, and that asks for a snapshot
        started = time.perf_counter()
        state = cached.index.export(version)
        if state is None:
            return None  # changed meanwhile (that change asked again), or a build runs (its end asks again)
        with self._lock:
            if self._cached.get(scope_key) is not cached:
                return None  # dropped meanwhile: a rollback may have undone what it held
        if not snapshots.write(
            self.kind, scope_key, epoch=epoch, model_id=model_id, state=state, stop=lambda: writer.stopping
        ):
            return None
        with self._lock:
            if epoch >= cached.snapshot_epoch:
                cached.snapshot_epoch, cached.snapshot_builds = epoch, state.graph_builds
        log.info(
            "%s vector snapshot written: %d vectors%s in %.2f s",
            self.kind,
            state.keys.shape[0],
            " with graph" if state.graph is not None else "",
            time.perf_counter() - started,
        )
        return None

    def close(self) -> None:
        """Stop background index builds."""
        with self._lock:
            self._closed = True
        self.forget_all()
