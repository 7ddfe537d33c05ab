"""In-memory vector index for ONE scope of one collection: exact numpy search, HNSW (usearch) when large.

The store keeps one `VectorIndex` per scope, so scope filtering happens by construction: a search never
ranks vectors of other tenants and then filters them away (which would silently return fewer than k hits).
SQLite (float32 BLOBs) is the source of truth; this index is a cache that can always be rebuilt from it.

Exact path (always available, always correct)
    A contiguous float32 matrix (capacity doubles when full, so appends are amortised O(1)), an int64 key
    array and a key → row dict. Removal moves the last row into the hole, O(1). A search is one
    matrix-vector product plus `np.argpartition`: ~6-12 ms for 100k × 384 on 2 cores, which is fine for
    the sizes agent memory usually has. With `allowed` (keys the caller permits: session/time/type
    filters) only those rows are scored, so the result is the best k *among the allowed keys*.

Approximate path (scopes larger than `exact_limit`)
    A background thread builds an HNSW graph (usearch, connectivity 16, expansion_add 128) from the rows;
    searches stay exact until it is ready, then go through the graph.
    - The graph stores float16 vectors and only *proposes* candidates: we ask for many more than k
      (max(8k, 256); usearch also uses that count as the search beam width) and re-score them exactly with
      the float32 rows before taking the top k. int8 graphs (a quarter of the memory) missed vectors far
      from the rest of the graph too often; see _MIN_CANDIDATES.
    - Mutations are visible to the very next search. A remove is applied to the graph at once (usearch
      `remove` is cheap). Inserting into the graph is slow (~0.3 ms per vector), so upserted keys are first
      removed from the graph and put in a *pending* set; searches score pending keys exactly next to the
      graph candidates, and the background thread moves them into the graph in small batches.
    - While a build runs, every key touched by a mutation (including keys moved by a swap-remove) is
      journaled; the builder skips journaled keys and, when it publishes the graph, removes them from it
      and marks the ones that still exist as pending. So nothing written during a build is lost and
      nothing removed during it comes back.
    - The graph is dropped when the scope shrinks below `exact_limit / 2` (hysteresis, so a scope hovering
      around the limit does not rebuild over and over) and rebuilt when removals/updates have left more
      tombstones in it than live vectors.
    - Filtered ANN: a small allowed set (≤ `exact_limit` rows) is scored exactly; a large one is searched
      in the graph with oversampling, keeping allowed hits and widening ×4 until there are enough of them,
      else falling back to an exact scan of the allowed rows.
    If `usearch` cannot be imported the index stays exact forever (logged once).

Saving and restoring (the store's snapshots)
    `export` copies the rows, and the graph as usearch serialises it with the keys it does not serve on its own
    (pending, recently added), unless a build is running. `of_rows` makes an index of rows whose keys are known to
    be distinct without upsert's per-key work; given a saved graph, the background thread restores it as if it
    were a build (mutations meanwhile are journaled and settled when it is published), and searches stay exact
    until then. A saved graph that cannot be read, or is not the graph this index would build, is reported to
    the caller and a new one is built from the rows. usearch holds the GIL while it saves or restores a graph
    (70-120 ms at 100k vectors): the process's other threads pause that long, once per restore and per save.

Thread safety
    A writer-preferring readers/writer lock: searches share it (numpy releases the GIL, so they really run
    in parallel), mutations and the background graph updates take it exclusively. A search therefore always
    sees one consistent state, and a key whose `remove` has returned is never returned. The graph lookup
    itself is serialised by a small mutex, because the usearch binding reuses one scratch context for all
    single-query searches.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memhub.background import lower_thread_priority

log = logging.getLogger(__name__)

try:  # optional: without it every search is exact, which is correct, only slower for big scopes
    from usearch.index import Index as _UsearchIndex
except Exception:  # pragma: no cover - exercised only where usearch is missing
    _UsearchIndex = None

_warned_no_usearch = False

AnnDType = Literal["i8", "f16", "f32"]

_CONNECTIVITY = 16
_EXPANSION_ADD = 128
# usearch searches with beam width max(expansion_search, count), so asking for `count` candidates sets
# the beam per query without touching shared index state (expansion_search is a property of the index).
_EXPANSION_SEARCH = 64
# 256 candidates and an f16 graph: with 128 or with int8 vectors, a vector far from everything else in
# the graph (a new topic, inserted after the build) was sometimes not found even as its own nearest
# neighbour (2 runs in 20 of the mutation test); with both, none in 20. Costs ~1 ms and 2x graph memory.
_MIN_CANDIDATES = 256
_CANDIDATES_PER_K = 8
# Filtered ANN: widen the graph search ×4 up to this many candidates, then an exact scan is cheaper.
_MAX_FILTERED_CANDIDATES = 2048
# Vectors moved from `pending` into the graph per exclusive-lock hold (~0.3 ms each): keeps searches'
# waits around 10 ms while a backlog drains.
_DRAIN_BATCH = 32
# Keys added to a graph after it was built are also scored exactly, the newest this many: HNSW can miss
# a node inserted late far from the rest (a new topic), which then would never be found as its own
# neighbour (seen 1 run in ~40 with a fresh 550-vector cluster). Once late additions exceed a quarter of
# the index, the graph is rebuilt from all rows.
_RECENT_EXACT = 2048
# Rows the builder adds per step (copied under the read lock, added unlocked). Cancellation (close, shrink)
# is checked between steps, so this bounds how long a cancelled build keeps a core busy: ~0.3-1 s.
_BUILD_CHUNK = 1024
# An allowed set up to this size is mapped to rows through the dict; larger ones through a sorted key array.
_DICT_LOOKUP_MAX = 2048


@dataclass(frozen=True, slots=True)
class GraphState:
    """An HNSW graph as usearch serialises it, with what the index knows about it beyond the graph itself."""

    data: bytes | bytearray
    pending: np.ndarray  # int64 live keys whose current vector is not in the graph
    recent: np.ndarray  # int64 keys added to the graph after its build, oldest first
    tombstones: int  # removals since the build, still traversed by searches
    size: int  # live vectors in the graph


@dataclass(frozen=True, slots=True)
class IndexState:
    """A copy of an index's contents: its rows as it holds them (float32) and its graph, if it has one."""

    keys: np.ndarray  # int64 (n,)
    matrix: np.ndarray  # float32 (n, dim), row i is the vector of keys[i]
    graph: GraphState | None
    graph_builds: int  # the index's `graph_builds` when copied


@dataclass(frozen=True, slots=True)
class GraphSource:
    """A saved graph to restore in the background instead of building one.

    `read` returns usearch's serialisation (raising when it cannot: missing, truncated, checksum); `on_failure` is
    told when the graph could not be used, after which the index builds a new one from its rows.
    """

    read: Callable[[], bytes | bytearray]
    pending: np.ndarray
    recent: np.ndarray
    tombstones: int
    size: int
    on_failure: Callable[[Exception], None]


class _RWLock:
    """Many readers or one writer; a waiting writer blocks new readers so mutations cannot starve."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


def _as_keys(keys: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(keys)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise ValueError(f"keys must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"keys must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def _to_usearch_keys(keys: np.ndarray) -> np.ndarray:
    # usearch keys are uint64; viewing keeps negative rowids distinct and round-trips exactly.
    return np.ascontiguousarray(keys, dtype=np.int64).view(np.uint64)


def _sorted_unique(keys: np.ndarray) -> np.ndarray:
    # Callers usually pass rowids already sorted (ORDER BY rowid): checking is O(n), np.unique would sort/hash.
    if keys.shape[0] < 2 or bool(np.all(keys[1:] > keys[:-1])):
        return keys
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))]


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest scores, best first."""
    n = scores.shape[0]
    part = np.argpartition(scores, n - k)[n - k :] if k < n else np.arange(n)
    return part[np.argsort(-scores[part], kind="stable")]


class VectorIndex:
    """Cosine top-k over the (L2-normalised) vectors of one scope. See the module docstring."""

    def __init__(
        self,
        dim: int,
        *,
        exact_limit: int = 20_000,
        ann_threads: int = 1,
        ann_dtype: AnnDType = "f16",
        on_graph_built: Callable[[], None] | None = None,
    ) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = int(dim)
        self._exact_limit = max(1, int(exact_limit))
        self._ann_threads = max(1, int(ann_threads))
        self._ann_dtype: AnnDType = ann_dtype
        # Called in the background thread after a build publishes its graph (the store saves a snapshot then).
        self._on_graph_built = on_graph_built
        self._lock = _RWLock()
        # usearch's Python binding releases the GIL but runs every single-query search in its per-thread
        # context 0 (and calls reserve() first), so two threads searching the same graph at once would share
        # scratch buffers. Graph searches (~1 ms) are serialised; the exact re-scoring still runs in parallel.
        self._graph_search_lock = threading.Lock()

        # Exact store. Rows [0, _n) are live; capacity grows by doubling.
        self._mat = np.empty((0, self._dim), dtype=np.float32)
        self._keys = np.empty(0, dtype=np.int64)
        self._n = 0
        self._row: dict[int, int] = {}
        self._version = 0  # bumped by every mutation; invalidates the sorted-keys cache
        self._sorted: tuple[int, np.ndarray, np.ndarray] | None = None

        # ANN state; all fields are guarded by the write lock.
        self._graph: Any = None  # published usearch Index, or None
        self._pending: set[int] = set()  # live keys whose current vector is not (yet) in the graph
        self._recent: dict[int, None] = {}  # keys added to the graph after its build, oldest first
        self._tombstones = 0  # graph removals since the graph was built
        self._want_build = False
        self._build_gen = 0  # bumped to cancel a running build
        self._journal: set[int] | None = None  # keys touched since the running build started; None = no build
        self._restore: GraphSource | None = None  # a saved graph waiting to be restored by the background thread
        self._graph_builds = 0  # graphs built (not restored) and published
        self._closed = False
        self._ann_failed = False  # set when a background build failed: stay exact rather than retry forever
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        # Wakes the worker when the index is garbage-collected, so it notices and exits at once.
        weakref.finalize(self, self._wake.set)

        global _warned_no_usearch
        if _UsearchIndex is None and not _warned_no_usearch:
            _warned_no_usearch = True
            log.warning("usearch is not installed: vector search stays exact (slower for large scopes)")

    # ------------------------------------------------------------------ properties

    def __len__(self) -> int:
        return self._n

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def approximate(self) -> bool:
        """True when searches currently go through the ANN graph."""
        return self._graph is not None

    @property
    def graph_builds(self) -> int:
        """How many graphs this index built and published (a restored one does not count)."""
        return self._graph_builds

    @property
    def version(self) -> int:
        """Moves on with every upsert and remove: `export(version)` copies only the state it was read with."""
        return self._version

    # ------------------------------------------------------------------ bulk load, export

    @classmethod
    def of_rows(
        cls,
        dim: int,
        keys: Sequence[int] | np.ndarray,
        matrix: np.ndarray,
        *,
        graph: GraphSource | None = None,
        exact_limit: int = 20_000,
        ann_threads: int = 1,
        ann_dtype: AnnDType = "f16",
        on_graph_built: Callable[[], None] | None = None,
    ) -> VectorIndex:
        """An index of rows with distinct keys (a scope as stored), without upsert's per-key work; the matrix is
        taken over, not copied, when it is a writable float32 array. With `graph`, the saved graph is restored in
        the background instead of building one (searches are exact until then)."""
        index = cls(
            dim, exact_limit=exact_limit, ann_threads=ann_threads, ann_dtype=ann_dtype, on_graph_built=on_graph_built
        )
        karr = _as_keys(keys)
        mat = np.asarray(matrix, dtype=np.float32)
        if mat.ndim != 2 or mat.shape != (karr.shape[0], index._dim):
            raise ValueError(f"matrix must have shape ({karr.shape[0]}, {index._dim}), got {mat.shape}")
        if not (mat.flags.writeable and mat.flags.c_contiguous):
            mat = mat.copy()  # mutations write rows in place
        if not (karr.flags.writeable and karr.flags.c_contiguous):
            karr = karr.copy()
        row = dict(zip(karr.tolist(), range(karr.shape[0]), strict=True))
        if len(row) != karr.shape[0]:
            raise ValueError("keys must be distinct")
        with index._lock.write():
            index._mat, index._keys, index._n, index._row = mat, karr, karr.shape[0], row
            index._version += 1
            usable = _UsearchIndex is not None and index._n >= index._exact_limit // 2
            if graph is not None and usable:
                index._restore = graph
                index._ensure_worker()
                index._wake.set()
            index._after_mutation()
        return index

    def export(self, version: int) -> IndexState | None:
        """A copy of the rows and the graph, if the index is still at `version` and no build or restore is under
        way (its graph would soon be replaced); None otherwise. Blocks mutations while it copies."""
        with self._lock.read():
            if self._version != version or self._closed:
                return None
            if self._want_build or self._journal is not None or self._restore is not None:
                return None
            n = self._n
            keys, matrix = self._keys[:n].copy(), self._mat[:n].copy()
            graph = None
            if self._graph is not None:
                with self._graph_search_lock:  # the binding's search scratch space is shared; saving is a read
                    data = self._graph.save()
                graph = GraphState(
                    data=data,
                    pending=np.fromiter(self._pending, dtype=np.int64, count=len(self._pending)),
                    recent=np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)),
                    tombstones=self._tombstones,
                    size=len(self._graph),
                )
            builds = self._graph_builds
        return IndexState(keys, matrix, graph, builds)

    # ------------------------------------------------------------------ mutations

    def upsert(self, keys: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        """Insert or replace vectors (already L2-normalised, shape (n, dim)) under int64 keys."""
        karr = _as_keys(keys)
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim == 1 and karr.shape[0] == 1:
            vecs = vecs.reshape(1, -1)
        if vecs.ndim != 2 or vecs.shape[1] != self._dim:
            raise ValueError(f"vectors must have shape (n, {self._dim}), got {vecs.shape}")
        if vecs.shape[0] != karr.shape[0]:
            raise ValueError(f"{karr.shape[0]} keys but {vecs.shape[0]} vectors")
        if not karr.shape[0]:
            return
        uniq, first_in_reversed = np.unique(karr[::-1], return_index=True)
        if uniq.shape[0] != karr.shape[0]:  # a key repeated within one batch: the last vector wins
            keep = np.sort(karr.shape[0] - 1 - first_in_reversed)
            karr, vecs = karr[keep], vecs[keep]

        self._grow_for(karr.shape[0])
        with self._lock.write():
            touched = karr.tolist()
            existing = [key for key in touched if key in self._row]
            self._reserve(self._n + len(touched) - len(existing))
            rows = np.empty(len(touched), dtype=np.int64)
            n = self._n
            for i, key in enumerate(touched):
                row = self._row.get(key)
                if row is None:
                    row = n
                    n += 1
                    self._row[key] = row
                    self._keys[row] = key
                rows[i] = row
            self._mat[rows] = vecs
            self._n = n
            self._version += 1

            if self._graph is not None:
                if existing:  # an update is remove + add: the old vector must never be proposed again
                    self._graph_remove(np.asarray(existing, dtype=np.int64))
                self._pending.update(touched)
            if self._journal is not None:
                self._journal.update(touched)
            self._after_mutation()

    def remove(self, keys: Sequence[int] | np.ndarray) -> None:
        """Remove keys; unknown keys are ignored. Visible to the next search."""
        karr = _as_keys(keys)
        if not karr.shape[0]:
            return
        with self._lock.write():
            removed: list[int] = []
            moved: list[int] = []
            for key in karr.tolist():
                row = self._row.pop(key, None)
                if row is None:
                    continue
                removed.append(key)
                last = self._n - 1
                if row != last:  # fill the hole with the last row: O(1), keeps rows contiguous
                    last_key = int(self._keys[last])
                    self._mat[row] = self._mat[last]
                    self._keys[row] = last_key
                    self._row[last_key] = row
                    moved.append(last_key)
                self._n = last
            if not removed:
                return
            self._version += 1
            if self._graph is not None:
                self._graph_remove(np.asarray(removed, dtype=np.int64))
                self._pending.difference_update(removed)
                for key in removed:
                    self._recent.pop(key, None)
            if self._journal is not None:
                # A moved key may jump from rows the builder has not read yet into rows it already read:
                # journaling it makes the publish step re-add it instead of losing it.
                self._journal.update(removed)
                self._journal.update(moved)
            self._after_mutation()

    def _grow_for(self, extra: int) -> None:
        """Make room for `extra` more rows, copying under the *read* lock so searches go on meanwhile (a
        100k × 384 matrix is 150 MB; the copy takes tens of ms, far longer on a cold VM). The new arrays
        are swapped in only if no mutation happened during the copy; otherwise `_reserve` grows in-lock."""
        with self._lock.read():
            cap, n, version = self._mat.shape[0], self._n, self._version
            if n + extra <= cap:
                return
            new_cap = max(n + extra, 2 * cap, 64)
            mat = np.empty((new_cap, self._dim), dtype=np.float32)
            mat[:n] = self._mat[:n]
            keys = np.empty(new_cap, dtype=np.int64)
            keys[:n] = self._keys[:n]
        with self._lock.write():
            if self._version == version and self._mat.shape[0] < new_cap:
                self._mat, self._keys = mat, keys

    def _reserve(self, needed: int) -> None:
        cap = self._mat.shape[0]
        if needed <= cap:
            return
        new_cap = max(needed, 2 * cap, 64)
        mat = np.empty((new_cap, self._dim), dtype=np.float32)
        mat[: self._n] = self._mat[: self._n]
        keys = np.empty(new_cap, dtype=np.int64)
        keys[: self._n] = self._keys[: self._n]
        self._mat, self._keys = mat, keys

    def _graph_remove(self, keys: np.ndarray) -> None:
        removed = self._graph.remove(_to_usearch_keys(keys))
        self._tombstones += int(np.sum(removed))

    def _after_mutation(self) -> None:
        """Start, cancel or drop the ANN graph according to the new size. Caller holds the write lock."""
        if _UsearchIndex is None or self._closed or self._ann_failed:
            return
        n = self._n
        if n < self._exact_limit // 2:
            if self._graph is not None or self._journal is not None or self._want_build or self._restore is not None:
                self._drop_graph()
            return
        building = self._journal is not None or self._want_build or self._restore is not None
        if self._graph is None:
            if n > self._exact_limit and not building:
                self._request_build()
        elif self._pending:
            self._ensure_worker()
            self._wake.set()
        # Tombstones are still traversed by searches and dilute the graph: rebuild once they outnumber
        # live nodes (the old graph keeps serving until the new one is published).
        if self._graph is not None and not building and self._tombstones > max(n, self._exact_limit):
            self._request_build()

    def _request_build(self) -> None:
        self._want_build = True
        self._ensure_worker()
        self._wake.set()

    def _drop_graph(self) -> None:
        self._graph = None
        self._pending.clear()
        self._recent.clear()
        self._tombstones = 0
        self._want_build = False
        self._restore = None
        self._journal = None
        self._build_gen += 1  # a running build sees this and stops

    # ------------------------------------------------------------------ background worker

    def _ensure_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            # The thread holds only a weak reference, so a store that drops an index without close() does
            # not leak it (nor its matrix) through the worker.
            self._worker = threading.Thread(
                target=_worker_main, args=(weakref.ref(self), self._wake), name="memhub-vector-ann", daemon=True
            )
            self._worker.start()

    def _work_step(self) -> bool:
        """Do one unit of background work; False when there is nothing to do."""
        with self._lock.write():
            if self._closed:
                return False
            restore = self._restore
            if restore is not None:
                self._restore = None
                self._build_gen += 1
                self._journal = set()
                gen = self._build_gen
            elif self._want_build:
                self._want_build = False
                self._build_gen += 1
                self._journal = set()
                gen = self._build_gen
                n0 = self._n
            elif self._graph is not None and self._pending:
                return self._drain_pending()
            else:
                return False
        if restore is not None:
            self._restore_graph(gen, restore)
        else:
            self._build(gen, n0)
        return True

    def _drain_pending(self) -> bool:
        """Move a batch of pending keys into the graph; True when it did. Caller holds the write lock: the
        vector read and the graph insert must be atomic with respect to a concurrent upsert of the same key."""
        batch = [self._pending.pop() for _ in range(min(_DRAIN_BATCH, len(self._pending)))]
        rows = [self._row[key] for key in batch]
        self._graph.add(_to_usearch_keys(np.asarray(batch, dtype=np.int64)), self._mat[rows], threads=self._ann_threads)
        for key in batch:
            self._recent.pop(key, None)
            self._recent[key] = None
        if len(self._recent) > max(_RECENT_EXACT, self._n // 4) and self._journal is None:
            self._want_build = True  # this loop picks it up next
        return True

    def _new_graph(self) -> Any:
        assert _UsearchIndex is not None
        return _UsearchIndex(
            ndim=self._dim,
            metric="ip",  # vectors are normalised, so inner product is cosine without the extra norms
            dtype=self._ann_dtype,
            connectivity=_CONNECTIVITY,
            expansion_add=_EXPANSION_ADD,
            expansion_search=_EXPANSION_SEARCH,
        )

    def _build(self, gen: int, n0: int) -> None:
        """Build a graph from rows [0, n0) without blocking searches or mutations, then publish it."""
        graph = self._new_graph()
        started = time.perf_counter()
        start = 0
        while True:
            with self._lock.read():
                if gen != self._build_gen or self._closed:
                    return
                # Rows >= n0 only ever hold keys inserted after the build started (keys move only towards
                # lower rows), and those are journaled.
                end = min(start + _BUILD_CHUNK, n0, self._n)
                if start >= end:
                    break
                keys = self._keys[start:end].copy()
                vecs = self._mat[start:end].copy()
                journal = self._journal
                if journal:  # journaled keys are settled at publish time; adding them now could duplicate
                    keep = np.fromiter((k not in journal for k in keys.tolist()), dtype=bool, count=keys.shape[0])
                    keys, vecs = keys[keep], vecs[keep]
            if keys.shape[0]:
                graph.add(_to_usearch_keys(keys), vecs, threads=self._ann_threads)
            start = end

        with self._lock.write():
            if gen != self._build_gen or self._closed or self._journal is None:
                return
            journal = self._journal
            if journal:
                graph.remove(_to_usearch_keys(np.fromiter(journal, dtype=np.int64, count=len(journal))))
            self._pending = {key for key in journal if key in self._row}
            self._recent = {}
            self._graph = graph
            self._tombstones = 0
            self._journal = None
            self._graph_builds += 1
            pending = len(self._pending)
        log.info(
            "vector graph built: %d vectors in %.1f s (%d pending)", len(graph), time.perf_counter() - started, pending
        )
        if self._on_graph_built is not None:
            try:
                self._on_graph_built()
            except Exception:  # the graph is published and serving; only its snapshot is lost
                log.exception("after the vector graph build")

    def _restore_graph(self, gen: int, source: GraphSource) -> None:
        """Load a saved graph and publish it like a build; on any failure, tell the source and build one instead."""
        started = time.perf_counter()
        try:
            assert _UsearchIndex is not None
            graph = _UsearchIndex.restore(source.read())
            expected = self._new_graph()
            same = graph is not None and all(
                getattr(graph, name) == getattr(expected, name) for name in ("ndim", "dtype", "metric", "connectivity")
            )
            if not same:
                raise ValueError("the saved graph is not the one this index builds (dimension, dtype, metric, degree)")
            if len(graph) != source.size:
                raise ValueError(f"the saved graph holds {len(graph)} vectors, its snapshot says {source.size}")
        except Exception as exc:
            log.warning("saved vector graph not used (%s): building one from the vectors", exc)
            source.on_failure(exc)
            with self._lock.write():
                if gen == self._build_gen and not self._closed:
                    self._journal = None
                    self._after_mutation()  # requests the build when the scope is large enough
            return

        with self._lock.write():
            if gen != self._build_gen or self._closed or self._journal is None:
                return
            journal = self._journal
            removed = 0
            if journal:  # changed while the graph loaded: out of it, and scored exactly until re-added
                keys = np.fromiter(journal, dtype=np.int64, count=len(journal))
                removed = int(np.sum(graph.remove(_to_usearch_keys(keys))))
            live = self._row
            self._pending = {key for key in itertools.chain(source.pending.tolist(), journal) if key in live}
            self._recent = {key: None for key in source.recent.tolist() if key in live and key not in journal}
            self._graph = graph
            self._tombstones = source.tombstones + removed
            self._journal = None
            self._after_mutation()
        log.info("vector graph restored: %d vectors in %.2f s", len(graph), time.perf_counter() - started)

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Block until no build is pending or running and no pending keys wait for the graph (for tests and
        benchmarks). Returns False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock.read():
                idle = (
                    _UsearchIndex is None
                    or self._closed
                    or self._ann_failed
                    or (
                        not self._want_build
                        and self._restore is None
                        and self._journal is None
                        and (self._graph is None or not self._pending)
                    )
                )
            if idle:
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def close(self, *, wait: bool = False) -> None:
        """Stop background work and drop the graph; the index keeps answering (exactly).

        Returns at once: a running build stops after its current chunk (≤ ~1 s). `wait=True` also joins the
        worker thread (tests)."""
        with self._lock.write():
            self._closed = True
            self._drop_graph()
        self._wake.set()
        worker = self._worker
        if wait and worker is not None and worker is not threading.current_thread():
            worker.join(timeout=60)

    # ------------------------------------------------------------------ search

    def search(self, query: np.ndarray, k: int, *, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """Best-first (key, cosine similarity) pairs, at most k. `allowed` (int64 keys) restricts the
        candidates *before* ranking: the result is the best k among the allowed keys."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self._dim:
            raise ValueError(f"query must have dimension {self._dim}, got {q.shape[0]}")
        norm = float(np.linalg.norm(q))
        if norm > 0 and abs(norm - 1.0) > 1e-4:  # stored vectors are unit length: unit query => cosine
            q = q / norm
        if k <= 0:
            return []
        allowed_keys = None
        if allowed is not None:
            allowed_keys = _sorted_unique(_as_keys(allowed))
            if not allowed_keys.shape[0]:
                return []

        with self._lock.read():
            if not self._n:
                return []
            graph = self._graph
            if allowed_keys is None:
                if graph is None or k * _CANDIDATES_PER_K >= self._n:
                    return self._exact(q, k, None)
                return self._ann(q, k, graph)
            # Unknown keys in `allowed` are rare; its size decides without paying for the row mapping.
            if graph is None or allowed_keys.shape[0] <= self._exact_limit:
                return self._exact(q, k, self._rows_of(allowed_keys))
            return self._ann_filtered(q, k, graph, allowed_keys)

    def _rows_of(self, keys: np.ndarray) -> np.ndarray:
        """Rows of the given (unique) keys; unknown keys are skipped. Caller holds the read lock."""
        if keys.shape[0] <= _DICT_LOOKUP_MAX:
            get = self._row.get
            return np.fromiter((r for r in (get(key) for key in keys.tolist()) if r is not None), dtype=np.int64)
        cache = self._sorted
        if cache is None or cache[0] != self._version:
            # Readers may race to build this; each builds the same thing and the tuple swap is atomic.
            order = np.argsort(self._keys[: self._n], kind="stable")
            cache = (self._version, self._keys[: self._n][order], order)
            self._sorted = cache
        _, sorted_keys, order = cache
        if not sorted_keys.shape[0]:
            return np.empty(0, dtype=np.int64)
        pos = np.searchsorted(sorted_keys, keys)
        pos[pos == sorted_keys.shape[0]] = 0
        hit = sorted_keys[pos] == keys
        return order[pos[hit]].astype(np.int64, copy=False)

    def _exact(self, q: np.ndarray, k: int, rows: np.ndarray | None) -> list[tuple[int, float]]:
        n = self._n
        if rows is None:
            scores = self._mat[:n] @ q
            best = _top_k(scores, k)
            return list(zip(self._keys[best].tolist(), scores[best].tolist(), strict=True))
        if not rows.shape[0]:
            return []
        # Gathering many rows copies them first; then one full product plus a gather of scores is cheaper.
        scores = (self._mat[:n] @ q)[rows] if rows.shape[0] * 4 > n else self._mat[rows] @ q
        best = _top_k(scores, k)
        return list(zip(self._keys[rows[best]].tolist(), scores[best].tolist(), strict=True))

    def _rescore(self, q: np.ndarray, k: int, keys: np.ndarray) -> list[tuple[int, float]]:
        """Exact float32 scores for candidate keys (unknown keys skipped, duplicates merged), top k."""
        get = self._row.get
        rows = np.fromiter((r for r in (get(key) for key in keys.tolist()) if r is not None), dtype=np.int64)
        if not rows.shape[0]:
            return []
        rows = np.unique(rows)  # a pending key can also come back from the graph
        scores = self._mat[rows] @ q
        best = _top_k(scores, k)
        return list(zip(self._keys[rows[best]].tolist(), scores[best].tolist(), strict=True))

    def _pending_keys(self) -> np.ndarray:
        """Keys the graph may not find: not yet in it, or added to it late (newest `_RECENT_EXACT`)."""
        recent = min(len(self._recent), _RECENT_EXACT)
        late = np.fromiter(itertools.islice(reversed(self._recent), recent), dtype=np.int64, count=recent)
        pending = np.fromiter(self._pending, dtype=np.int64, count=len(self._pending))
        return np.concatenate([pending, late]) if recent else pending

    def _graph_search(self, graph: Any, q: np.ndarray, count: int) -> np.ndarray:
        with self._graph_search_lock:
            found = graph.search(q, count, threads=1)
        return np.asarray(found.keys).view(np.int64)

    def _ann(self, q: np.ndarray, k: int, graph: Any) -> list[tuple[int, float]]:
        if len(self._pending) * 4 > self._n:
            # A bulk write is still draining into the graph: re-scoring that many pending keys costs as much
            # as the exact scan, which needs no per-key Python work.
            return self._exact(q, k, None)
        count = max(_CANDIDATES_PER_K * k, _MIN_CANDIDATES)
        keys = self._graph_search(graph, q, count)
        if self._pending or self._recent:  # not in the graph, or in it only lately: scored exactly
            keys = np.concatenate([keys, self._pending_keys()])
        return self._rescore(q, k, keys)

    def _ann_filtered(self, q: np.ndarray, k: int, graph: Any, allowed_keys: np.ndarray) -> list[tuple[int, float]]:
        base = max(_CANDIDATES_PER_K * k, _MIN_CANDIDATES)
        # About |allowed| / n of the graph's candidates will be allowed: ask for enough that `base` of them
        # are, i.e. as many allowed candidates as an unfiltered search re-scores, for the same recall.
        count = max(base, -(-base * self._n // allowed_keys.shape[0]))
        # Half of that is enough to stop widening; fewer means the allowed keys lie far from the query.
        wanted = base // 2
        while count <= _MAX_FILTERED_CANDIDATES and count < len(graph):
            keys = self._graph_search(graph, q, count)
            pos = np.searchsorted(allowed_keys, keys)
            pos[pos == allowed_keys.shape[0]] = 0
            hits = keys[allowed_keys[pos] == keys]
            if hits.shape[0] >= wanted:
                if self._pending or self._recent:  # they bypass the graph; only the allowed ones may be ranked
                    hits = np.concatenate([hits, np.intersect1d(self._pending_keys(), allowed_keys)])
                return self._rescore(q, k, hits)
            count *= 4
        # Beyond ~2k candidates a graph search costs as much as scanning the allowed rows exactly.
        return self._exact(q, k, self._rows_of(allowed_keys))


def _worker_main(ref: weakref.ReferenceType[VectorIndex], wake: threading.Event) -> None:
    """Background loop: builds graphs and drains pending keys. Exits when the index is closed or collected."""
    lower_thread_priority()
    while True:
        wake.wait(timeout=60.0)  # the finalizer / close() set it; the timeout is only a safety net
        wake.clear()  # cleared before looking for work, so a mutation after this point wakes us again
        index = ref()
        if index is None or index._closed:
            return
        try:
            while index._work_step():
                pass
        except Exception:  # a failed build must not kill searches: log, drop the graph, stay exact
            log.exception("vector index background work failed; falling back to exact search")
            with index._lock.write():
                index._ann_failed = True
                index._drop_graph()
        del index
