"""VectorIndex: exact search against brute force, the ANN path (build, recall, live mutations, filters,
shrinking back), and concurrent searches with mutations."""

from __future__ import annotations

import gc
import random
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from memhub.index import vectors as vectors_mod
from memhub.index.vectors import VectorIndex

pytest.importorskip("usearch")


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _random(n: int, dim: int, seed: int) -> np.ndarray:
    return _unit(np.random.default_rng(seed).standard_normal((n, dim)))


def _clustered(n: int, dim: int = 128, *, latent: int = 32, clusters: int = 400, seed: int = 0) -> np.ndarray:
    """Gaussian clusters in a low-dimensional latent space, projected up, plus isotropic noise: closer to
    real embeddings than isotropic Gaussians (which are the worst case for any graph index)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, latent))
    proj = rng.standard_normal((latent, dim)) / np.sqrt(latent)
    z = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, latent))
    return _unit(z @ proj + 0.5 * rng.standard_normal((n, dim)))


def _brute(data: dict[int, np.ndarray], q: np.ndarray, k: int, allowed: set[int] | None = None) -> list[int]:
    """Ground truth: score every (allowed) vector, sort."""
    keys, mat = _stacked(data)
    scores = mat @ q if mat.shape[0] else np.empty(0, dtype=np.float32)
    if allowed is not None:
        keep = np.isin(keys, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        keys, scores = keys[keep], scores[keep]
    order = np.argsort(-scores, kind="stable")[:k]
    return keys[order].tolist()


_stack_cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}


def _stacked(data: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    # Tests call the ground truth hundreds of times on the same data: stacking 8,000 rows each time would
    # dominate the runtime. The cache key covers every key and row object, so a mutated dict misses.
    keys = np.fromiter(data, dtype=np.int64, count=len(data))
    ident = keys.tobytes() + np.fromiter((id(v) for v in data.values()), np.int64, count=len(data)).tobytes()
    hit = _stack_cache.get(ident)
    if hit is None:
        _stack_cache.clear()
        mat = np.stack(list(data.values())) if data else np.empty((0, 0), dtype=np.float32)
        hit = _stack_cache[ident] = (keys, mat)
    return hit


def _keys(result: list[tuple[int, float]]) -> list[int]:
    return [key for key, _ in result]


@pytest.fixture
def make_index() -> Iterator[Any]:
    made: list[VectorIndex] = []

    def make(dim: int, **kwargs: Any) -> VectorIndex:
        index = VectorIndex(dim, **kwargs)
        made.append(index)
        return index

    yield make
    for index in made:
        index.close(wait=True)


# ---------------------------------------------------------------------------------------------- exact


def test_exact_top_k_equals_brute_force(make_index: Any) -> None:
    x = _random(1500, 32, seed=1)
    keys = np.arange(10, 10 + len(x), dtype=np.int64) * 7  # non-contiguous keys
    index = make_index(32)
    index.upsert(keys, x)
    data = dict(zip(keys.tolist(), x, strict=True))
    assert len(index) == 1500 and not index.approximate
    for q in _random(30, 32, seed=2):
        got = index.search(q, 10)
        assert _keys(got) == _brute(data, q, 10)
        for key, score in got:
            assert score == pytest.approx(float(data[key] @ q), abs=1e-5)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)


def test_small_edge_cases(make_index: Any) -> None:
    index = make_index(8)
    q = _random(1, 8, seed=3)[0]
    assert index.search(q, 5) == []
    x = _random(3, 8, seed=4)
    index.upsert([-5, 0, 2**40], x)  # negative and large keys are fine
    assert sorted(_keys(index.search(q, 10))) == [-5, 0, 2**40]
    assert index.search(q, 0) == []
    assert index.search(x[0], 1)[0][0] == -5
    # An unnormalised query still yields cosine similarities.
    assert index.search(3.0 * x[1], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    # A key repeated in one batch: the last vector wins.
    y = _random(2, 8, seed=5)
    index.upsert([7, 7], y)
    assert len(index) == 4
    assert index.search(y[1], 1)[0] == (7, pytest.approx(1.0, abs=1e-5))


def test_dimension_and_shape_errors(make_index: Any) -> None:
    index = make_index(16)
    with pytest.raises(ValueError):
        index.upsert([1], _random(1, 15, seed=0))
    with pytest.raises(ValueError):
        index.upsert([1, 2], _random(3, 16, seed=0))
    index.upsert([1], _random(1, 16, seed=0))
    with pytest.raises(ValueError):
        index.search(_random(1, 17, seed=0)[0], 3)
    with pytest.raises(ValueError):
        VectorIndex(0)


def test_allowed_is_applied_before_top_k(make_index: Any) -> None:
    x = _random(5000, 24, seed=6)
    index = make_index(24)
    index.upsert(np.arange(5000), x)
    data = dict(enumerate(x))
    q = _random(1, 24, seed=7)[0]
    ranking = _brute(data, q, 5000)
    for size in (15, 300, 3000):  # small sets use the dict lookup, the large one the sorted-keys path
        worst = set(ranking[-size:])  # every allowed key ranks below the global top-k
        allowed = np.array([*worst, 10**9, -1, *list(worst)[:5]], dtype=np.int64)  # unknown keys and duplicates
        got = index.search(q, 10, allowed=allowed)
        assert _keys(got) == _brute(data, q, 10, worst)
        assert not set(_keys(got)) & set(ranking[:10])
    assert _keys(index.search(q, 10, allowed=np.array([ranking[-1]]))) == [ranking[-1]]
    assert index.search(q, 10, allowed=np.array([], dtype=np.int64)) == []
    assert index.search(q, 10, allowed=np.array([10**9])) == []


def test_upsert_replaces_and_remove_is_immediate(make_index: Any) -> None:
    x = _random(200, 16, seed=8)
    index = make_index(16)
    index.upsert(np.arange(200), x)
    new = _random(1, 16, seed=9)[0]
    index.upsert([5], new[None, :])
    assert len(index) == 200
    assert index.search(new, 1)[0] == (5, pytest.approx(1.0, abs=1e-5))
    assert all(key != 5 or score < 0.99 for key, score in index.search(x[5], 5))

    index.remove([17, 18, 10**6])  # unknown key ignored
    assert len(index) == 198
    for key in (17, 18):
        assert key not in _keys(index.search(x[key], 198))


def test_swap_remove_keeps_other_vectors(make_index: Any) -> None:
    rng = random.Random(10)
    x = _random(1000, 16, seed=10)
    index = make_index(16)
    for start in range(0, 1000, 37):  # many small appends exercise the capacity doubling
        index.upsert(np.arange(start, min(start + 37, 1000)), x[start : start + 37])
    assert index._mat.shape[0] < 2 * 1000  # grown by doubling, not per add
    doomed = rng.sample(range(1000), 600)
    for i in range(0, 600, 50):
        index.remove(doomed[i : i + 50])
    alive = sorted(set(range(1000)) - set(doomed))
    assert len(index) == len(alive)
    for key in alive:
        assert index.search(x[key], 1)[0] == (key, pytest.approx(1.0, abs=1e-5))
    data = {key: x[key] for key in alive}
    for q in _random(10, 16, seed=11):
        assert _keys(index.search(q, 10)) == _brute(data, q, 10)


# ---------------------------------------------------------------------------------------------- ANN

DIM = 128
N = 8000
LIMIT = 2000


def _recall(index: VectorIndex, data: dict[int, np.ndarray], queries: np.ndarray, k: int = 10) -> float:
    hits = 0
    for q in queries:
        hits += len(set(_keys(index.search(q, k))) & set(_brute(data, q, k)))
    return hits / (k * len(queries))


def _ann_index(make_index: Any, n: int = N, seed: int = 0) -> tuple[VectorIndex, dict[int, np.ndarray], np.ndarray]:
    x = _clustered(n + 200, DIM, seed=seed)
    index = make_index(DIM, exact_limit=LIMIT, ann_threads=2)
    index.upsert(np.arange(n), x[:n])
    return index, dict(enumerate(x[:n])), x[n:]


def _assert_graph_consistent(index: VectorIndex) -> None:
    """Graph ∪ pending holds exactly the live keys: nothing lost, nothing resurrected."""
    graph_keys = set(np.asarray(index._graph.keys).view(np.int64).tolist())
    live = set(index._row)
    assert graph_keys <= live
    assert graph_keys | index._pending == live


def test_ann_build_and_recall(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index)
    # Until the graph is ready searches are exact.
    assert _keys(index.search(queries[0], 10)) == _brute(data, queries[0], 10)
    assert index.wait_ready(60)
    assert index.approximate
    _assert_graph_consistent(index)
    recall = _recall(index, data, queries)
    assert recall >= 0.98, recall
    for key, score in index.search(queries[1], 10):  # scores are exact float32 cosines after re-scoring
        assert score == pytest.approx(float(data[key] @ queries[1]), abs=1e-5)


class _GatedGraph:
    """Wraps the usearch graph; its second `add` blocks until released, pausing the build mid-way."""

    def __init__(self, inner: Any, entered: threading.Event, release: threading.Event) -> None:
        self._inner, self._entered, self._release, self._adds = inner, entered, release, 0

    def add(self, *args: Any, **kwargs: Any) -> Any:
        self._adds += 1
        if self._adds == 2:
            self._entered.set()
            assert self._release.wait(30)
        return self._inner.add(*args, **kwargs)

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_ann_mutations_during_build_are_not_lost(make_index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    entered, release = threading.Event(), threading.Event()
    real_new_graph = VectorIndex._new_graph
    monkeypatch.setattr(vectors_mod, "_BUILD_CHUNK", 1000)  # explicit: the comments below count rows
    monkeypatch.setattr(VectorIndex, "_new_graph", lambda self: _GatedGraph(real_new_graph(self), entered, release))

    index, data, _ = _ann_index(make_index)
    assert entered.wait(30)  # rows 0..999 added, rows 1000..1999 read, the rest not yet
    assert not index.approximate
    old = np.stack([data[k] for k in range(N)])
    removed = [*range(50, 200), *range(1500, 1600), *range(6000, 6200)]  # read, being added, not read yet
    updated = [*range(300, 400), *range(4000, 4100)]
    # Removed, then inserted again: they land in rows the builder has not reached, so it must not add them
    # a second time.
    reinserted = list(range(0, 50))
    inserted = list(range(10_000, 10_300))
    new_vectors = _clustered(550, DIM, seed=99)
    try:
        index.remove(removed + reinserted)  # swap-removes move keys from unread rows into read ones
        index.upsert(updated + inserted[:100], new_vectors[:300])
        index.upsert(inserted[100:] + reinserted, new_vectors[300:])
    finally:
        release.set()
    for key in removed:
        del data[key]
    data.update(zip(updated + inserted + reinserted, new_vectors, strict=True))

    assert index.wait_ready(60)
    assert index.approximate
    assert len(index) == len(data)
    _assert_graph_consistent(index)
    assert not index._pending  # wait_ready also waits for the pending keys to reach the graph
    for key in removed + updated + reinserted:
        for hit, score in index.search(old[key], 10):
            assert hit in data and hit not in removed
            assert score == pytest.approx(float(data[hit] @ old[key]), abs=1e-5)
    for key in updated + inserted + reinserted:
        assert index.search(data[key], 1)[0] == (key, pytest.approx(1.0, abs=1e-5))


def test_ann_mutations_after_build_visible_at_once(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index, seed=1)
    assert index.wait_ready(60) and index.approximate
    rng = np.random.default_rng(13)
    x = np.stack([data[k] for k in range(N)])

    # Remove the current top hits of some queries: they must not come back on the next search.
    for q in queries[:20]:
        top = _keys(index.search(q, 10))
        index.remove(top[:3])
        for key in top[:3]:
            del data[key]
        after = _keys(index.search(q, 10))
        assert not set(top[:3]) & set(after)
        assert after[:7] == top[3:]

    # Move keys to new vectors: found at the new position immediately (pending), and after they reach
    # the graph; never at the old one. The drain is held back first, so the pending path is really used.
    index._drain_pending = lambda: False  # type: ignore[method-assign]
    moved = rng.choice(sorted(data), 200, replace=False).tolist()
    new_vectors = _clustered(200, DIM, seed=77)
    index.upsert(moved, new_vectors)
    data.update(zip(moved, new_vectors, strict=True))
    for phase in ("pending", "graph"):
        if phase == "pending":
            assert set(moved) <= index._pending
        for key in moved[:100]:
            assert index.search(data[key], 1)[0] == (key, pytest.approx(1.0, abs=1e-5)), phase
            assert all(s < 0.999 or hit != key for hit, s in index.search(x[key], 3))
        # Pending keys obey `allowed` too.
        allowed = np.array(sorted(set(data) - {moved[0]}))
        assert moved[0] not in _keys(index.search(data[moved[0]], 10, allowed=allowed))
        if phase == "pending":
            del index._drain_pending  # let the worker move them into the graph
            index._wake.set()
            assert index.wait_ready(60)
    assert not index._pending
    _assert_graph_consistent(index)
    assert _recall(index, data, queries[20:]) >= 0.98


def test_ann_allowed(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index, seed=2)
    assert index.wait_ready(60) and index.approximate
    rng = np.random.default_rng(14)
    small = set(rng.choice(N, LIMIT // 2, replace=False).tolist())  # scored exactly
    large = set(rng.choice(N, N // 2, replace=False).tolist())  # graph with oversampling
    hits_small = hits_large = 0
    for q in queries[:100]:
        got = _keys(index.search(q, 10, allowed=np.array(sorted(small))))
        assert got == _brute(data, q, 10, small)
        hits_small += len(got)
        got = _keys(index.search(q, 10, allowed=np.array(sorted(large))))
        assert len(got) == 10 and set(got) <= large
        hits_large += len(set(got) & set(_brute(data, q, 10, large)))
    assert hits_large / (10 * 100) >= 0.98

    # A large allowed set far from the query: the graph search widens, then falls back to exact.
    q = queries[150]
    ranking = _brute(data, q, N)
    far = set(ranking[-(LIMIT + 500) :])
    assert _keys(index.search(q, 10, allowed=np.array(sorted(far)))) == _brute(data, q, 10, far)

    # Pending (upserted, not yet in the graph) keys obey the filter too.
    index.upsert([50_000, 50_001], np.stack([q, q]))
    got = _keys(index.search(q, 10, allowed=np.array([*sorted(large), 50_001])))
    assert got[0] == 50_001 and 50_000 not in got


def _restored(state: Any, read: Any = None, failures: list[Exception] | None = None) -> VectorIndex:
    """An index made of an export, its saved graph restored in the background (through `read` when given)."""
    graph = state.graph
    source = vectors_mod.GraphSource(
        read=read or (lambda: graph.data),
        pending=graph.pending,
        recent=graph.recent,
        tombstones=graph.tombstones,
        size=graph.size,
        on_failure=(failures if failures is not None else []).append,
    )
    return VectorIndex.of_rows(DIM, state.keys, state.matrix, graph=source, exact_limit=LIMIT, ann_threads=2)


def test_an_exported_index_restores_with_its_graph_and_answers_the_same(make_index: Any) -> None:
    index, _, queries = _ann_index(make_index)
    assert index.wait_ready(60) and index.approximate
    index.remove(list(range(100)))  # tombstones and pending keys are saved too
    index._drain_pending = lambda: False  # type: ignore[method-assign]
    index.upsert(list(range(100, 150)), _clustered(50, DIM, seed=5))
    assert index._pending
    state = index.export(index.version)
    assert state is not None and state.graph is not None and state.graph.pending.shape[0] == 50
    assert index.export(index.version - 1) is None  # only the state it was asked for
    restored = _restored(state)
    try:
        assert not restored.approximate  # exact until the graph is back
        expected = [index.search(q, 10) for q in queries[:20]]
        assert restored.wait_ready(60) and restored.approximate
        assert restored.graph_builds == 0  # restored, not built
        _assert_graph_consistent(restored)
        got = [restored.search(q, 10) for q in queries[:20]]
        assert [_keys(r) for r in got] == [_keys(r) for r in expected]
    finally:
        restored.close(wait=True)


def test_mutations_during_a_graph_restore_are_not_lost(make_index: Any) -> None:
    index, data, _ = _ann_index(make_index)
    assert index.wait_ready(60)
    state = index.export(index.version)
    assert state is not None and state.graph is not None
    entered, release = threading.Event(), threading.Event()

    def held_read() -> bytes | bytearray:
        entered.set()
        assert release.wait(30)
        return state.graph.data

    restored = _restored(state, held_read)
    try:
        assert entered.wait(30)
        removed, updated, inserted = list(range(0, 200)), list(range(500, 600)), list(range(20_000, 20_100))
        new_vectors = _clustered(200, DIM, seed=42)
        restored.remove(removed)
        restored.upsert(updated + inserted, new_vectors)
        release.set()
        for key in removed:
            del data[key]
        data.update(zip(updated + inserted, new_vectors, strict=True))
        assert restored.wait_ready(60) and restored.approximate
        _assert_graph_consistent(restored)
        for key in updated + inserted:
            assert restored.search(data[key], 1)[0] == (key, pytest.approx(1.0, abs=1e-5))
        x = np.stack([state.matrix[k] for k in removed[:50]])
        for q in x:
            assert not set(_keys(restored.search(q, 10))) & set(removed)
    finally:
        release.set()
        restored.close(wait=True)


def test_an_unreadable_saved_graph_is_reported_and_built_anew(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index)
    assert index.wait_ready(60)
    state = index.export(index.version)
    assert state is not None and state.graph is not None

    def unreadable() -> bytes:
        raise OSError("gone")

    failures: list[Exception] = []
    restored = _restored(state, unreadable, failures)
    try:
        assert restored.wait_ready(60) and restored.approximate
        assert [str(e) for e in failures] == ["gone"] and restored.graph_builds == 1
        assert _recall(restored, data, queries[:50]) >= 0.98
    finally:
        restored.close(wait=True)


def test_shrinking_goes_back_to_exact(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index, n=5000, seed=3)
    assert index.wait_ready(60) and index.approximate
    index.remove(range(0, 3000))  # 2000 left: above LIMIT / 2, the graph stays (hysteresis)
    assert index.approximate
    index.remove(range(3000, 4100))  # 900 left
    assert not index.approximate
    remaining = {k: v for k, v in data.items() if k >= 4100}
    for q in queries[:20]:
        assert _keys(index.search(q, 10)) == _brute(remaining, q, 10)
    # Growing again rebuilds the graph.
    index.upsert(np.arange(20_000, 24_000), _clustered(4000, DIM, seed=5))
    assert index.wait_ready(60) and index.approximate
    _assert_graph_consistent(index)


# ---------------------------------------------------------------------------------------------- threads


@pytest.mark.parametrize("start", [N, LIMIT - 200], ids=["approximate", "crossing-threshold"])
def test_concurrent_searches_and_mutations(make_index: Any, start: int) -> None:
    x = _clustered(start + 3000, DIM, seed=4)
    index = make_index(DIM, exact_limit=LIMIT, ann_threads=1)
    index.upsert(np.arange(start), x[:start])
    if start > LIMIT:
        assert index.wait_ready(60) and index.approximate

    removed: set[int] = set()
    removed_lock = threading.Lock()
    errors: list[BaseException] = []
    stop = threading.Event()
    searches = [0]

    def writer() -> None:
        try:
            rng = random.Random(1)
            alive = list(range(start))
            next_key = start
            for round_ in range(60):
                # Keep the writer from finishing before the searchers got going (a loaded machine may
                # starve them): each round waits for a few searches, so mutations and searches interleave.
                deadline = time.monotonic() + 60  # a failure bound only: searchers that stopped are an error
                while searches[0] < 4 * round_ and time.monotonic() < deadline and not errors:
                    time.sleep(0.001)
                doomed = [alive.pop(rng.randrange(len(alive))) for _ in range(20)]
                index.remove(doomed)
                with removed_lock:  # published only after remove() returned
                    removed.update(doomed)
                fresh = list(range(next_key, next_key + 50))
                index.upsert(fresh, x[next_key : next_key + 50])
                next_key += 50
                alive.extend(fresh)
                update = rng.sample(alive, 10)
                index.upsert(update, _clustered(10, DIM, seed=next_key))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def searcher(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                with removed_lock:
                    gone = set(removed)
                q = x[rng.integers(0, start)]
                allowed = rng.integers(0, start + 3000, 3000) if rng.random() < 0.3 else None
                got = index.search(q, 10, allowed=allowed)
                assert len(got) <= 10
                assert not gone & set(_keys(got)), "a removed key came back"
                if allowed is not None:
                    assert set(_keys(got)) <= set(allowed.tolist())
                searches[0] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[0]
    assert searches[0] >= 200
    assert index.wait_ready(60)
    if start < LIMIT:
        assert len(index) > LIMIT and index.approximate
    _assert_graph_consistent(index)
    for key in random.Random(2).sample(sorted(index._row), 200):
        assert index.search(index._mat[index._row[key]].copy(), 1)[0][0] == key


def test_close_stops_background_work(make_index: Any) -> None:
    index, data, queries = _ann_index(make_index, n=4000, seed=6)
    index.close()  # may interrupt the build; does not wait for it (how fast it returns is not timed here)
    assert not index.approximate
    assert index.wait_ready(1)
    index.close(wait=True)
    assert index._worker is None or not index._worker.is_alive()
    assert _keys(index.search(queries[0], 10)) == _brute(data, queries[0], 10)


def test_without_usearch_stays_exact(make_index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors_mod, "_UsearchIndex", None)
    x = _random(600, 16, seed=15)
    index = make_index(16, exact_limit=100)
    index.upsert(np.arange(600), x)
    assert index.wait_ready(1) and not index.approximate and index._worker is None
    data = dict(enumerate(x))
    assert _keys(index.search(x[3], 10)) == _brute(data, x[3], 10)


def test_dropped_index_releases_its_worker(make_index: Any) -> None:
    index = VectorIndex(16, exact_limit=100)
    index.upsert(np.arange(300), _random(300, 16, seed=16))
    assert index.wait_ready(30) and index.approximate
    worker, ref = index._worker, weakref.ref(index)
    assert worker is not None
    del index
    gc.collect()
    assert ref() is None  # the worker thread holds no strong reference
    worker.join(10)
    assert not worker.is_alive()
