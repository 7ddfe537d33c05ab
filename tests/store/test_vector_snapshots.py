"""Vector index snapshots of the SQLite store: a restart loads a large scope from disk, never a stale or foreign one.

Every store here is a real SQLite file; "a restart" is a new `SQLiteStore` on the same directory, "another
process" a second one open at the same time. The thresholds are lowered (snapshots from 30 vectors, HNSW from 20)
so a graph is built, saved and restored in tests' time; which path loaded an index is what `vector_loads` counts.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memhub.model import AuditContext, ClearTarget, EmbeddingModel, MessageFilter
from memhub.runtime import build_hub, embedding_runtime
from memhub.scope import MemoryScope
from memhub.settings import Settings
from memhub.store.sqlite.store import DB_FILENAME, SQLiteStore
from memhub.store.sqlite.vector_snapshots import SUFFIX, SnapshotMeta, VectorSnapshots
from memhub.store.sqlite.vectors import SnapshotPolicy
from tests.retrieval.fake_openai import FakeOpenAI
from tests.store.test_vectors_store import DIM, MODEL, A, B, embed_all, msgs, vec

EXACT_LIMIT = 20  # HNSW above 20 vectors
POLICY = SnapshotPolicy(min_vectors=30, refresh_seconds=0)
AUDIT = AuditContext("req-0000000000000000", "team", "agent", "alice", "")
TEXTS = [f"note {i} about topic {i % 7} and subject {i % 5} in week {i % 3}" for i in range(60)]
QUERIES = [TEXTS[3], TEXTS[41], "topic 2 and subject 4", "week 1"]
OTHER_AGENT = MemoryScope("svc", "team", "alice", "another-agent", "")

OpenStore = Callable[..., SQLiteStore]


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[OpenStore]:
    opened: list[SQLiteStore] = []

    def open_at(name: str = "data", policy: SnapshotPolicy = POLICY) -> SQLiteStore:
        store = SQLiteStore(tmp_path / name, exact_vector_limit=EXACT_LIMIT, snapshots=policy)
        opened.append(store)
        return store

    yield open_at
    for store in opened:
        store.close()


def searches(store: SQLiteStore, scope: MemoryScope = A) -> list[list[tuple[str, float]]]:
    return [
        [(m.content, round(s, 5)) for m, s in store.vector_search_messages(scope, vec(q), MessageFilter(), 10)]
        for q in QUERIES
    ]


def filled(
    store: SQLiteStore, texts: list[str] = TEXTS, scope: MemoryScope = A, model: EmbeddingModel = MODEL
) -> SQLiteStore:
    """The scope with a vector per text, loaded once (from SQL) and settled: its graph built and its snapshot
    written."""
    store.reset_embeddings(model)
    store.add_messages(scope, "s", msgs(texts))
    embed_all(store, model)
    searches(store, scope)
    assert store.settle_vectors(120)
    return store


def snapshots_of(store: SQLiteStore) -> VectorSnapshots:
    database_id = store.get_setting("vectors.database_id")
    assert database_id
    return VectorSnapshots.beside(store.path, database_id)


def meta_of(store: SQLiteStore, scope: MemoryScope = A) -> SnapshotMeta | None:
    """The scope's snapshot as its meta file describes it (without checking it against the database)."""
    path = store.path.with_name(DB_FILENAME + SUFFIX)
    metas = [p for p in path.glob("l0-*.meta.json") if json.loads(p.read_text())["scope_key"] == scope.key]
    if not metas:
        return None
    doc = json.loads(metas[0].read_text())
    return snapshots_of(store).find("l0", scope.key, epoch=doc["epoch"], model_id=doc["model_id"], dim=doc["dim"])


# -- used after a restart ----------------------------------------------------------------------------------
def test_a_restart_loads_the_scope_from_its_snapshot_with_the_same_results(
    open_store: OpenStore, caplog: pytest.LogCaptureFixture
) -> None:
    first = filled(open_store())
    before = searches(first)
    meta = meta_of(first)
    assert meta is not None and meta.count == len(TEXTS) and meta.graph is not None  # saved with its graph
    first.close()

    caplog.set_level(logging.INFO, logger="memhub.index.vectors")
    again = open_store()
    assert searches(again) == before
    assert again.vector_loads() == {("l0", "snapshot"): 1}
    assert again.settle_vectors(60)
    assert "vector graph restored: 60 vectors" in caplog.text
    assert "vector graph built" not in caplog.text  # the saved graph was used, not rebuilt
    assert searches(again) == before

    from_sql = open_store(policy=SnapshotPolicy(enabled=False))
    assert searches(from_sql) == before
    assert from_sql.vector_loads() == {("l0", "sql"): 1}


def test_small_scopes_get_no_snapshot(open_store: OpenStore) -> None:
    store = filled(open_store(), TEXTS[:29])
    assert meta_of(store) is None
    store.close()
    again = open_store()
    searches(again)
    assert again.vector_loads() == {("l0", "sql"): 1}


def test_a_scope_below_the_exact_limit_is_saved_when_loaded_from_sql(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "data", exact_vector_limit=100, snapshots=POLICY)  # no graph at 60 vectors
    try:
        filled(store)
        meta = meta_of(store)
        assert meta is not None and meta.graph is None and meta.count == len(TEXTS)
    finally:
        store.close()


def test_a_changed_scope_is_saved_again_and_its_changes_survive_the_restart(open_store: OpenStore) -> None:
    first = filled(open_store())
    old = meta_of(first)
    assert old is not None
    first.add_messages(A, "s", msgs(["a brand new remark about sailing boats"], start_ms=90_000))
    embed_all(first)
    assert first.settle_vectors(60)
    new = meta_of(first)
    assert new is not None and new.epoch > old.epoch and new.count == len(TEXTS) + 1
    first.close()
    again = open_store()
    hits = again.vector_search_messages(A, vec("a brand new remark about sailing boats"), MessageFilter(), 1)
    assert [m.content for m, _ in hits] == ["a brand new remark about sailing boats"]
    assert again.vector_loads() == {("l0", "snapshot"): 1}


# -- never used when it is not the database's state --------------------------------------------------------
def test_a_snapshot_behind_another_processs_write_is_not_used(open_store: OpenStore) -> None:
    first = filled(open_store())
    other = open_store()  # another gateway on the same file
    other.add_messages(A, "s", msgs(["written by the other process"], start_ms=90_000))
    embed_all(other)
    stale = meta_of(first)
    assert stale is not None
    first.close()
    other.close()

    again = open_store()
    hits = again.vector_search_messages(A, vec("written by the other process"), MessageFilter(), 1)
    assert [m.content for m, _ in hits] == ["written by the other process"]
    assert again.vector_loads() == {("l0", "sql"): 1}
    assert not (again.path.with_name(DB_FILENAME + SUFFIX) / stale.data).exists()  # stale for good: deleted


def test_a_snapshot_of_another_database_is_not_used_even_at_the_same_epoch(
    open_store: OpenStore, tmp_path: Path
) -> None:
    original = filled(open_store("original"))
    meta = meta_of(original)
    assert meta is not None
    original.close()
    # A new database given the same number of writes (so the same epochs) of other texts, then the first
    # database's snapshot directory put beside it.
    other_texts = [f"completely different words {i} for row {i * 7}" for i in range(len(TEXTS))]
    replaced = open_store("replaced", policy=SnapshotPolicy(enabled=False))
    filled(replaced, other_texts)
    assert replaced.settle_vectors(60)
    expected = searches(replaced)
    replaced.close()
    target = tmp_path / "replaced" / (DB_FILENAME + SUFFIX)
    assert not target.exists()
    (tmp_path / "original" / (DB_FILENAME + SUFFIX)).rename(target)

    again = open_store("replaced")
    assert searches(again) == expected
    assert again.vector_loads() == {("l0", "sql"): 1}
    assert not (target / meta.data).exists()


def corrupt_matrix(store: SQLiteStore, meta: SnapshotMeta) -> None:
    path = store.path.with_name(DB_FILENAME + SUFFIX) / meta.data
    data = bytearray(path.read_bytes())
    data[meta.sections["matrix"].offset + 5] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate_data(store: SQLiteStore, meta: SnapshotMeta) -> None:
    path = store.path.with_name(DB_FILENAME + SUFFIX) / meta.data
    path.write_bytes(path.read_bytes()[: meta.sections["graph"].offset + 10])


def garble_meta(store: SQLiteStore, meta: SnapshotMeta) -> None:
    for path in store.path.with_name(DB_FILENAME + SUFFIX).glob("l0-*.meta.json"):
        path.write_text('{"format": 1, "epoch": ')


@pytest.mark.parametrize("damage", [corrupt_matrix, truncate_data, garble_meta])
def test_a_corrupt_snapshot_is_deleted_and_the_scope_loads_from_sql(
    open_store: OpenStore, damage: Callable[[SQLiteStore, SnapshotMeta], None], caplog: pytest.LogCaptureFixture
) -> None:
    first = filled(open_store())
    before = searches(first)
    meta = meta_of(first)
    assert meta is not None
    first.close()
    damage(first, meta)

    caplog.set_level(logging.WARNING)
    again = open_store()
    assert searches(again) == before
    assert again.vector_loads() == {("l0", "sql"): 1}
    assert "corrupt" in caplog.text or "unusable" in caplog.text
    assert again.settle_vectors(120)
    rewritten = meta_of(again)  # the graph built from the SQL rows is saved anew, and the damaged files are gone
    assert rewritten is not None and rewritten.data != meta.data
    assert not (again.path.with_name(DB_FILENAME + SUFFIX) / meta.data).exists()


def test_a_corrupt_saved_graph_is_rebuilt_from_the_snapshots_rows(
    open_store: OpenStore, caplog: pytest.LogCaptureFixture
) -> None:
    first = filled(open_store())
    before = searches(first)
    meta = meta_of(first)
    assert meta is not None
    first.close()
    path = first.path.with_name(DB_FILENAME + SUFFIX) / meta.data
    data = bytearray(path.read_bytes())
    data[meta.sections["graph"].offset + meta.sections["graph"].size // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    caplog.set_level(logging.INFO, logger="memhub.index.vectors")
    again = open_store()
    assert searches(again) == before  # exact until the graph is there
    assert again.vector_loads() == {("l0", "snapshot"): 1}  # the rows were sound
    assert again.settle_vectors(120)
    assert "saved vector graph not used" in caplog.text and "vector graph built: 60 vectors" in caplog.text
    assert searches(again) == before
    rewritten = meta_of(again)
    assert rewritten is not None and rewritten.data != meta.data and not path.exists()


@pytest.mark.parametrize("model", [MODEL, EmbeddingModel("test:another-model", DIM)], ids=["reembed", "new-model"])
def test_reembedding_makes_the_snapshot_unusable(open_store: OpenStore, model: EmbeddingModel) -> None:
    first = filled(open_store())
    assert meta_of(first) is not None
    # What `memhub reembed` does (`--force` with the same model, or after a model change), with vectors that
    # rank differently: each message now gets the vector of other words.
    first.reset_embeddings(model)
    assert meta_of(first) is None  # deleted with the vectors it held
    while tasks := first.next_embedding_tasks(16):
        first.store_embeddings(model, tasks, np.vstack([vec("again " + t.text.splitlines()[-1]) for t in tasks]))
    first.close()

    again = open_store()
    hits = again.vector_search_messages(A, vec("again " + TEXTS[7]), MessageFilter(), 1)
    assert [(m.content, round(s, 5)) for m, s in hits] == [(TEXTS[7], 1.0)]
    assert again.vector_loads() == {("l0", "sql"): 1}


def test_a_cleared_scope_is_not_brought_back_by_its_snapshot(open_store: OpenStore) -> None:
    first = filled(open_store())
    first.clear_agent_memory([ClearTarget(A.service_id, A.team_id, A.agent_id, "chat-memory-1", AUDIT)])
    first.close()
    again = open_store()
    assert searches(again) == [[] for _ in QUERIES]
    assert again.vector_loads() == {("l0", "sql"): 1}


def test_the_start_deletes_snapshots_no_scope_can_use_without_loading_them(open_store: OpenStore) -> None:
    first = filled(open_store())
    first.add_messages(OTHER_AGENT, "s", msgs(TEXTS))
    embed_all(first)
    searches(first, OTHER_AGENT)
    assert first.settle_vectors(120)
    meta = meta_of(first, A)
    assert meta is not None and meta_of(first, OTHER_AGENT) is not None
    first.clear_agent_memory([ClearTarget(A.service_id, A.team_id, A.agent_id, "chat-memory-1", AUDIT)])
    first.close()
    again = open_store()
    again.warm_vectors(0)
    assert again.wait_warm(60)
    assert again.vector_loads() == {}
    assert meta_of(again, A) is None and not (again.path.with_name(DB_FILENAME + SUFFIX) / meta.data).exists()
    assert meta_of(again, OTHER_AGENT) is not None  # the other agent's scope did not change


def test_a_store_that_missed_another_processs_write_does_not_claim_it_by_writing_next(
    open_store: OpenStore,
) -> None:
    first = filled(open_store())
    other = open_store()
    other.add_messages(A, "other", msgs(["only the other process wrote this"], start_ms=90_000))
    embed_all(other)
    # `first` still holds the scope at the epoch before; its own write comes next.
    first.add_messages(A, "mine", msgs(["and then the first one wrote this"], start_ms=91_000))
    embed_all(first)
    for store in (first, other):
        hits = store.vector_search_messages(A, vec("only the other process wrote this"), MessageFilter(), 1)
        assert [m.content for m, _ in hits] == ["only the other process wrote this"]
    assert first.settle_vectors(60)
    first.close()
    other.close()
    again = open_store()
    hits = again.vector_search_messages(A, vec("only the other process wrote this"), MessageFilter(), 1)
    assert [m.content for m, _ in hits] == ["only the other process wrote this"]


# -- the start-up warm ----------------------------------------------------------------------------------------
def test_the_warm_loads_the_scopes_written_last(open_store: OpenStore) -> None:
    first = open_store()
    first.reset_embeddings(MODEL)
    first.add_messages(B, "s", msgs(TEXTS))
    embed_all(first)
    ids, _ = first.add_messages(A, "s", msgs(TEXTS))  # A's vectors are written last …
    embed_all(first)
    first.delete_messages(A, ids[:1], [])  # … and once more (so A comes first even within one millisecond)
    embed_all(first)
    first.close()

    again = open_store()
    again.warm_vectors(1)
    assert again.wait_warm(60)
    assert again.vector_loads() == {("l0", "sql"): 1}
    searches(again, A)  # loaded already
    assert again.vector_loads() == {("l0", "sql"): 1}
    searches(again, B)  # not warmed
    assert again.vector_loads() == {("l0", "sql"): 2}

    off = open_store()
    off.warm_vectors(0)
    assert off.wait_warm(60) and off.vector_loads() == {}


def test_a_search_during_the_warm_load_waits_for_it_instead_of_loading_again(
    open_store: OpenStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = filled(open_store())
    expected = searches(first)
    first.close()
    started, release = threading.Event(), threading.Event()
    read_rows = VectorSnapshots.read_rows

    def held_read_rows(self: VectorSnapshots, meta: SnapshotMeta) -> object:
        started.set()
        assert release.wait(60)
        return read_rows(self, meta)

    monkeypatch.setattr(VectorSnapshots, "read_rows", held_read_rows)
    again = open_store()
    again.warm_vectors(4)
    assert started.wait(60)  # the warm thread is inside the scope's load
    results: list[list[list[tuple[str, float]]]] = []
    searcher = threading.Thread(target=lambda: results.append(searches(again)))
    searcher.start()
    vectors = again._vectors["l0"]
    for _ in range(6000):  # until the search is waiting on the warm load (each check waits up to 10 ms)
        if vectors.waiting_for_load(A.key):
            break
        searcher.join(0.01)
    assert vectors.waiting_for_load(A.key) == 1
    release.set()
    searcher.join(60)
    assert again.wait_warm(60)
    assert again.vector_loads() == {("l0", "snapshot"): 1}
    assert results == [expected]


def test_the_hub_warms_the_latest_scopes_at_start_when_it_has_an_embedder(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        settings = Settings(
            data_dir=tmp_path / "data",
            pipeline_enabled=False,
            vector_warm_scopes=2,
            embedding_provider="openai",
            embedding_model="fake-embed",
            embedding_base_url=fake.base_url,
            embedding_dimensions=DIM,
        )
        model = EmbeddingModel("openai:fake-embed", DIM)
        filled(SQLiteStore(settings.data_dir, exact_vector_limit=EXACT_LIMIT, snapshots=POLICY), model=model).close()
        for embedder in (True, False):
            store = SQLiteStore(settings.data_dir, exact_vector_limit=EXACT_LIMIT, snapshots=POLICY)
            hub = build_hub(settings, store, embedding=embedding_runtime(settings, store) if embedder else None)
            try:
                hub.start(pipeline=False, knowledge=False)
                assert store.wait_warm(60)
                # BM25 alone (no embedder) never searches vectors: nothing to warm.
                assert store.vector_loads() == ({("l0", "snapshot"): 1} if embedder else {})
            finally:
                hub.close()


def test_the_warm_setting() -> None:
    assert Settings().vector_warm_scopes == 4
    assert Settings(vector_warm_scopes=0).vector_warm_scopes == 0
    with pytest.raises(ValueError, match="vector_warm_scopes"):
        Settings(vector_warm_scopes=-1)
