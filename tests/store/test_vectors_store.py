"""Vectors, the embedding queue and the L0 context column in the SQLite store.

Vectors here are computed by the test (the fake provider's deterministic token-sum vectors, which
are similar for texts sharing words), so no model runs: these tests are about what the store keeps.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memhub.ids import atomic_id, message_id
from memhub.index.tokenize import index_text, query_terms
from memhub.model import AtomicFilter, AuditContext, EmbeddingModel, EmbeddingTask, MessageFilter, NewAtomic, NewMessage
from memhub.scope import MemoryScope
from memhub.store import MemoryStore
from memhub.store.sqlite.fts import owner_prefix, qualify
from memhub.store.sqlite.schema import MIGRATIONS
from memhub.store.sqlite.store import DB_FILENAME, SQLiteStore
from tests.retrieval.fake_openai import fake_vector
from tests.store.conftest import OpenStore, sqlite_only

DIM = 32
MODEL = EmbeddingModel("test:token-sum", DIM)
OTHER_MODEL = EmbeddingModel("test:other-model", DIM)
A = MemoryScope("svc", "team", "alice", "agent", "")
B = MemoryScope("svc", "team", "bob", "agent", "")
AUDIT = AuditContext("req-0000000000000000", "team", "agent", "alice", "")


def vec(text: str) -> np.ndarray:
    v = fake_vector(text, DIM)
    return (v / np.linalg.norm(v)).astype(np.float32)


def vectors_for(tasks: Sequence[EmbeddingTask]) -> np.ndarray:
    return np.vstack([vec(t.text) for t in tasks]) if tasks else np.zeros((0, DIM), np.float32)


def embed_all(store: MemoryStore, model: EmbeddingModel = MODEL) -> int:
    """What the embedding worker does, until the queue is empty; returns how many vectors were written."""
    written = 0
    while tasks := store.next_embedding_tasks(16):
        written += store.store_embeddings(model, tasks, vectors_for(tasks))
    return written


def vector_rows(store: SQLiteStore) -> tuple[int, int]:
    con = sqlite3.connect(store.path)
    try:
        return (
            con.execute("SELECT COUNT(*) FROM l0_vectors").fetchone()[0],
            con.execute("SELECT COUNT(*) FROM l1_vectors").fetchone()[0],
        )
    finally:
        con.close()


def msgs(texts: Sequence[str], start_ms: int = 1_000) -> list[NewMessage]:
    return [NewMessage(message_id(), "user", t, start_ms + i, start_ms + i) for i, t in enumerate(texts)]


def mems(texts: Sequence[str], type_: str = "persona") -> list[NewAtomic]:
    return [NewAtomic(atomic_id(), type_, t, 50, None, "s", 1_000 + i) for i, t in enumerate(texts)]


def near_messages(store: MemoryStore, scope: MemoryScope, text: str, limit: int = 10) -> list[tuple[str, float]]:
    return [(m.content, s) for m, s in store.vector_search_messages(scope, vec(text), MessageFilter(), limit)]


def near_atomic(store: MemoryStore, scope: MemoryScope, text: str, limit: int = 10) -> list[tuple[str, float]]:
    return [(a.content, s) for a, s in store.vector_search_atomic(scope, vec(text), AtomicFilter(), limit)]


def bm25_messages(store: MemoryStore, scope: MemoryScope, query: str) -> list[str]:
    return [m.content for m, _ in store.search_messages(scope, query_terms(query), MessageFilter(), 20)]


@pytest.fixture
def store(open_store_named: OpenStore) -> MemoryStore:
    s = open_store_named()
    s.reset_embeddings(MODEL)
    return s


# -- the queue ----------------------------------------------------------------------------------
@sqlite_only
def test_every_write_is_queued_and_embedding_empties_the_queue(store: MemoryStore) -> None:
    store.add_messages(A, "s", msgs(["first message", "second message"]))
    store.add_atomic(A, mems(["likes green tea"]))
    assert store.embedding_backlog() == 3
    tasks = store.next_embedding_tasks(10)
    assert [(t.kind, t.text.splitlines()[-1]) for t in tasks] == [
        ("l0", "first message"),
        ("l0", "second message"),
        ("l1", "likes green tea"),
    ]
    assert store.store_embeddings(MODEL, tasks, vectors_for(tasks)) == 3
    assert store.embedding_backlog() == 0
    assert vector_rows(store) == (2, 1)
    assert near_atomic(store, A, "likes green tea")[0][0] == "likes green tea"
    assert near_atomic(store, A, "likes green tea")[0][1] == pytest.approx(1.0, abs=1e-5)


@sqlite_only
def test_a_requeued_record_gets_no_vector_from_its_stale_text(store: MemoryStore) -> None:
    (rec,) = store.add_atomic(A, mems(["works at Initech as a tester"]))
    stale = store.next_embedding_tasks(10)  # the worker read the old text …
    store.update_atomic("svc", rec.id, "works at Globex as a manager", None, 5_000, AUDIT)  # … then it changed
    assert store.store_embeddings(MODEL, stale, vectors_for(stale)) == 0
    assert vector_rows(store) == (0, 0)
    assert near_atomic(store, A, "works at Initech as a tester") == []
    assert store.embedding_backlog() == 1
    (fresh,) = store.next_embedding_tasks(10)
    assert fresh.text == "works at Globex as a manager" and fresh.seq != stale[0].seq
    assert store.store_embeddings(MODEL, [fresh], vectors_for([fresh])) == 1
    ((content, score),) = near_atomic(store, A, "works at Globex as a manager")
    assert content == "works at Globex as a manager" and score == pytest.approx(1.0, abs=1e-5)


def test_an_update_drops_the_current_vector_at_once(store: MemoryStore) -> None:
    (rec,) = store.add_atomic(A, mems(["allergic to peanuts"]))
    embed_all(store)
    assert near_atomic(store, A, "allergic to peanuts")
    store.update_atomic("svc", rec.id, "allergic to shellfish", None, 5_000, AUDIT)
    assert near_atomic(store, A, "allergic to peanuts") == []  # no vector of the old text survives
    assert store.embedding_backlog() == 1
    embed_all(store)
    assert near_atomic(store, A, "allergic to shellfish")[0][0] == "allergic to shellfish"


@sqlite_only
def test_tasks_of_records_deleted_meanwhile_are_skipped(store: MemoryStore) -> None:
    ids, _ = store.add_messages(A, "s", msgs(["soon deleted"]))
    (rec,) = store.add_atomic(A, mems(["also soon deleted"]))
    tasks = store.next_embedding_tasks(10)
    store.delete_messages(A, ids, [])
    store.delete_atomic(A, [rec.id], AUDIT)
    assert store.embedding_backlog() == 0
    assert store.store_embeddings(MODEL, tasks, vectors_for(tasks)) == 0
    assert vector_rows(store) == (0, 0)


def test_deleting_a_message_requeues_the_neighbours_that_embedded_it(store: MemoryStore) -> None:
    ids, _ = store.add_messages(A, "s", msgs(["which book are you reading", "the alchemist again", "nice choice"]))
    embed_all(store)
    store.delete_messages(A, [ids[0]], [])
    # The reply's vector was computed with the deleted question in front of it: gone, and queued again.
    assert "the alchemist again" not in [c for c, _ in near_messages(store, A, "the alchemist again")]
    tasks = store.next_embedding_tasks(10)
    assert "the alchemist again" in [t.text for t in tasks]
    assert all("which book" not in t.text for t in tasks)
    embed_all(store)
    assert near_messages(store, A, "the alchemist again")[0][0] == "the alchemist again"


# -- the model -------------------------------------------------------------------------------------
@sqlite_only
def test_store_embeddings_refuses_another_model_and_writes_nothing(store: MemoryStore) -> None:
    store.add_messages(A, "s", msgs(["one", "two"]))
    store.add_atomic(A, mems(["three"]))
    tasks = store.next_embedding_tasks(10)
    with pytest.raises(ValueError):
        store.store_embeddings(OTHER_MODEL, tasks, vectors_for(tasks))
    wider = EmbeddingModel(MODEL.model_id, DIM * 2)
    with pytest.raises(ValueError):
        store.store_embeddings(wider, tasks, np.zeros((len(tasks), DIM * 2), np.float32))
    with pytest.raises(ValueError):  # vectors that do not fit the model
        store.store_embeddings(MODEL, tasks, np.zeros((len(tasks), DIM - 1), np.float32))
    assert store.embedding_backlog() == 3
    assert vector_rows(store) == (0, 0)
    assert store.embedding_model() == MODEL


@sqlite_only
def test_store_embeddings_refuses_vectors_before_any_model_is_adopted(
    open_store_named: OpenStore,
) -> None:
    fresh = open_store_named("fresh")
    try:
        assert fresh.embedding_model() is None
        fresh.add_messages(A, "s", msgs(["no model yet"]))
        tasks = fresh.next_embedding_tasks(10)
        with pytest.raises(ValueError):
            fresh.store_embeddings(MODEL, tasks, vectors_for(tasks))
        assert fresh.embedding_backlog() == 1 and vector_rows(fresh) == (0, 0)
    finally:
        fresh.close()


@sqlite_only
def test_reset_embeddings_drops_every_vector_and_requeues_every_record(store: MemoryStore) -> None:
    store.add_messages(A, "s", msgs(["alpha message", "beta message"]))
    store.add_messages(B, "s", msgs(["gamma message"]))
    store.add_atomic(A, mems(["delta memory", "epsilon memory"]))
    assert embed_all(store) == 5
    old_tasks_of_no_use = store.next_embedding_tasks(10)
    assert old_tasks_of_no_use == []
    assert near_messages(store, A, "alpha message")

    new_model = EmbeddingModel("test:new-model", DIM * 2)
    store.reset_embeddings(new_model)
    assert store.embedding_model() == new_model
    assert store.embedding_backlog() == 5
    assert vector_rows(store) == (0, 0)
    query = np.ones(DIM * 2, np.float32) / np.sqrt(DIM * 2)
    assert store.vector_search_messages(A, query, MessageFilter(), 10) == []
    assert store.vector_search_atomic(A, query, AtomicFilter(), 10) == []

    tasks = store.next_embedding_tasks(10)
    with pytest.raises(ValueError):  # the old model's vectors are refused from now on
        store.store_embeddings(MODEL, tasks, vectors_for(tasks))
    rng = np.random.default_rng(7)
    new_vectors = rng.standard_normal((len(tasks), DIM * 2)).astype(np.float32)
    new_vectors /= np.linalg.norm(new_vectors, axis=1, keepdims=True)
    assert store.store_embeddings(new_model, tasks, new_vectors) == 5
    assert store.embedding_backlog() == 0
    assert len(store.vector_search_messages(A, query, MessageFilter(), 10)) == 2
    assert len(store.vector_search_messages(B, query, MessageFilter(), 10)) == 1


def test_a_reopened_store_keeps_its_model_and_vectors(open_store_named: OpenStore) -> None:
    first = open_store_named()
    first.reset_embeddings(MODEL)
    first.add_atomic(A, mems(["kept across restarts"]))
    embed_all(first)
    first.close()
    second = open_store_named()
    try:
        assert second.embedding_model() == MODEL
        assert second.embedding_backlog() == 0
        assert near_atomic(second, A, "kept across restarts")[0][0] == "kept across restarts"
    finally:
        second.close()


# -- two processes on one file -------------------------------------------------------------------------
def test_a_second_store_on_the_same_file_sees_the_first_ones_vectors_and_deletes(
    open_store_named: OpenStore,
) -> None:
    first = open_store_named()
    first.reset_embeddings(MODEL)
    second = open_store_named()  # another gateway process on the same data dir
    try:
        ids, _ = first.add_messages(A, "s1", msgs(["we adopted a golden retriever"]))
        (mem,) = first.add_atomic(A, mems(["prefers window seats"]))
        embed_all(first)
        assert near_messages(second, A, "we adopted a golden retriever")[0][0] == "we adopted a golden retriever"
        assert near_atomic(second, A, "prefers window seats")[0][0] == "prefers window seats"

        # `second` now has the scope cached; the first process keeps writing.
        more, _ = first.add_messages(A, "s2", msgs(["the puppy chewed my shoes"]))
        embed_all(first)
        assert "the puppy chewed my shoes" in [c for c, _ in near_messages(second, A, "the puppy chewed my shoes")]

        first.delete_messages(A, ids, [])
        assert "we adopted a golden retriever" not in [c for c, _ in near_messages(second, A, "golden retriever")]
        first.update_atomic("svc", mem.id, "prefers aisle seats", None, 9_000, AUDIT)
        assert near_atomic(second, A, "prefers window seats") == []
        embed_all(first)
        assert near_atomic(second, A, "prefers aisle seats")[0][0] == "prefers aisle seats"

        # And the other way round: what `second` writes, `first` (which has everything cached) sees.
        second.add_atomic(A, mems(["drinks oat milk"]))
        embed_all(second)
        assert near_atomic(first, A, "drinks oat milk")[0][0] == "drinks oat milk"
        assert [c for c, _ in near_messages(first, A, "the puppy chewed my shoes", 5)] == ["the puppy chewed my shoes"]
        assert more
    finally:
        second.close()
        first.close()


def test_a_store_opened_before_the_model_was_adopted_still_sees_vectors(
    open_store_named: OpenStore,
) -> None:
    # Two gateways started together on a fresh data dir: one of them adopts the model first.
    early = open_store_named()
    adopter = open_store_named()
    try:
        adopter.reset_embeddings(MODEL)
        adopter.add_messages(A, "s", msgs(["the train leaves at noon"]))
        embed_all(adopter)
        assert early.embedding_model() == MODEL
        assert near_messages(early, A, "the train leaves at noon")[:1] == [
            ("the train leaves at noon", pytest.approx(1.0, abs=1e-5))
        ]
    finally:
        early.close()
        adopter.close()


def test_a_model_changed_by_another_process_is_followed(open_store_named: OpenStore) -> None:
    serving = open_store_named()
    serving.reset_embeddings(MODEL)
    serving.add_messages(A, "s", msgs(["the train leaves at noon"]))
    embed_all(serving)
    assert near_messages(serving, A, "the train leaves at noon")  # the scope's 32-d index is cached
    reembed = open_store_named()  # `memhub reembed` with a wider model, in another process
    try:
        wide = EmbeddingModel("test:wide", DIM * 2)
        reembed.reset_embeddings(wide)
        tasks = reembed.next_embedding_tasks(10)
        vectors = np.zeros((len(tasks), DIM * 2), np.float32)
        vectors[:, 0] = 1.0
        assert reembed.store_embeddings(wide, tasks, vectors) == 1
        assert serving.embedding_model() == wide
        query = np.zeros(DIM * 2, np.float32)
        query[0] = 1.0
        hits = serving.vector_search_messages(A, query, MessageFilter(), 5)
        assert [(m.content, round(s, 5)) for m, s in hits] == [("the train leaves at noon", 1.0)]
        with pytest.raises(ValueError):  # the serving process's old model is refused from now on
            serving.store_embeddings(MODEL, tasks, vectors_for(tasks))
    finally:
        reembed.close()
        serving.close()


def test_vector_search_never_crosses_scopes(store: MemoryStore) -> None:
    store.add_messages(B, "s", msgs(["golden retriever puppy"] * 40))
    store.add_messages(A, "s", msgs(["my cat sleeps all day"]))
    embed_all(store)
    hits = store.vector_search_messages(A, vec("golden retriever puppy"), MessageFilter(), 10)
    assert [m.user_id for m, _ in hits] == ["alice"]
    b_ids = [m.id for m, _ in store.vector_search_messages(B, vec("golden retriever puppy"), MessageFilter(), 50)]
    assert len(b_ids) == 40
    assert store.message_similarities(A, vec("golden retriever puppy"), b_ids) == {}


def test_above_the_exact_limit_deletes_updates_and_scopes_still_hold(
    open_store_named: OpenStore,
) -> None:
    store = open_store_named(exact_vector_limit=8)  # HNSW from 9 vectors per scope
    store.reset_embeddings(MODEL)
    try:
        texts = [f"note number {i} about topic {i % 7} and subject {i % 5}" for i in range(40)]
        ids, _ = store.add_messages(A, "s", msgs(texts))
        store.add_messages(B, "s", msgs(texts))
        recs = store.add_atomic(A, mems(texts))
        embed_all(store)
        target = texts[13]
        assert near_messages(store, A, target, 1)[0][0] == target
        store.delete_messages(A, [ids[13]], [])
        assert target not in [c for c, _ in near_messages(store, A, target, 40)]
        assert {m.user_id for m, _ in store.vector_search_messages(A, vec(target), MessageFilter(), 40)} == {"alice"}
        store.update_atomic("svc", recs[13].id, "completely different words now", None, 9_999, AUDIT)
        assert recs[13].id not in [a.id for a, _ in store.vector_search_atomic(A, vec(target), AtomicFilter(), 40)]
        embed_all(store)
        assert near_atomic(store, A, "completely different words now", 1)[0][0] == "completely different words now"
    finally:
        store.close()


def test_vector_search_applies_filters_before_the_top_k(store: MemoryStore) -> None:
    store.add_messages(A, "busy", msgs(["budget meeting notes"] * 60, start_ms=1_000))
    store.add_messages(A, "quiet", msgs(["budget review"], start_ms=900_000))
    store.add_atomic(A, mems(["budget meeting notes"] * 60, "episodic"))
    store.add_atomic(A, mems(["budget review"], "persona"))
    embed_all(store)
    query = vec("budget meeting notes")
    by_session = store.vector_search_messages(A, query, MessageFilter(session_id="quiet"), 5)
    assert [m.content for m, _ in by_session] == ["budget review"]
    by_time = store.vector_search_messages(A, query, MessageFilter(time_start_ms=800_000), 5)
    assert [m.content for m, _ in by_time] == ["budget review"]
    by_type = store.vector_search_atomic(A, query, AtomicFilter(type="persona"), 5)
    assert [a.content for a, _ in by_type] == ["budget review"]


# -- the context column ---------------------------------------------------------------------------------
def test_a_reply_is_found_by_the_words_of_the_question_before_it(store: MemoryStore) -> None:
    store.add_messages(A, "s", msgs(["Which novel are you reading these days?", "The Alchemist, again."]))
    store.add_messages(A, "other", msgs(["Lunch was great."]))
    found = bm25_messages(store, A, "novel")
    assert found == ["Which novel are you reading these days?", "The Alchemist, again."]  # own words rank first
    assert bm25_messages(store, B, "novel") == []


def test_context_reaches_two_messages_each_way_within_the_session(store: MemoryStore) -> None:
    texts = ["zebra one", "filler two", "filler three", "filler four", "filler five"]
    store.add_messages(A, "s", msgs(texts))
    store.add_messages(A, "other-session", msgs(["unrelated message"]))
    found = set(bm25_messages(store, A, "zebra"))
    assert found == {"zebra one", "filler two", "filler three"}  # the 2 after it, not the 3rd


def test_a_later_message_joins_the_context_of_the_ones_before_it(store: MemoryStore) -> None:
    store.add_messages(A, "s", msgs(["What did the vet say?"]))
    store.add_messages(A, "s", msgs(["Kiwi needs a gluten-free diet."], start_ms=2_000))  # a separate request
    assert set(bm25_messages(store, A, "gluten")) == {"What did the vet say?", "Kiwi needs a gluten-free diet."}


def test_deleting_the_previous_message_removes_its_words_from_the_reply(store: MemoryStore) -> None:
    ids, _ = store.add_messages(A, "s", msgs(["Which novel are you reading?", "The Alchemist, again.", "Nice."]))
    assert "The Alchemist, again." in bm25_messages(store, A, "novel")
    store.delete_messages(A, [ids[0]], [])
    assert bm25_messages(store, A, "novel") == []
    assert bm25_messages(store, A, "alchemist") == ["The Alchemist, again.", "Nice."]  # survivors still see each other


def test_deleting_a_session_leaves_no_context_in_other_sessions(store: MemoryStore) -> None:
    store.add_messages(A, "gone", msgs(["secret project codename bluebird"]))
    store.add_messages(A, "kept", msgs(["ordinary message", "another ordinary one"]))
    store.delete_messages(A, [], ["gone"])
    assert bm25_messages(store, A, "bluebird") == []
    assert len(bm25_messages(store, A, "ordinary")) == 2


# -- migration from v1 ----------------------------------------------------------------------------------
def _v1_database(data_dir: Path) -> tuple[list[str], list[str]]:
    """A database as memhub v1 left it: only the first migration, rows written the way v1 wrote them."""
    data_dir.mkdir(parents=True)
    con = sqlite3.connect(data_dir / DB_FILENAME, isolation_level=None)
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    first = MIGRATIONS[0]
    assert isinstance(first, str)
    for statement in first.split(";"):
        if statement.strip():
            con.execute(statement)
    con.execute("INSERT INTO schema_version (version) VALUES (1)")
    prefix = owner_prefix(A.key)
    messages = ["Which novel are you reading these days?", "The Alchemist, again.", "我们周末去爬山了。"]
    message_ids = []
    for i, text in enumerate(messages):
        mid = message_id()
        message_ids.append(mid)
        session = "s1" if i < 2 else "s2"
        cur = con.execute(
            "INSERT INTO l0_messages (id, scope_key, service_id, team_id, user_id, agent_id, task_id, session_id, "
            "role, content, metadata_json, recorded_ms, message_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (mid, A.key, A.service_id, A.team_id, A.user_id, A.agent_id, A.task_id, session, "user", text, None, i, i),
        )
        con.execute(
            "INSERT INTO l0_fts (rowid, words, grams) VALUES (?, ?, ?)",
            (cur.lastrowid, *qualify(prefix, index_text(text))),
        )
    memories = ["likes green tea", "works at Initech"]
    memory_ids = []
    for i, text in enumerate(memories):
        aid = atomic_id()
        memory_ids.append(aid)
        cur = con.execute(
            "INSERT INTO l1_atomic (id, scope_key, service_id, team_id, user_id, agent_id, task_id, session_id, "
            "type, content, priority, created_ms, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (aid, A.key, A.service_id, A.team_id, A.user_id, A.agent_id, A.task_id, "s", "persona", text, 50, i, i),
        )
        con.execute(
            "INSERT INTO l1_fts (rowid, words, grams) VALUES (?, ?, ?)",
            (cur.lastrowid, *qualify(prefix, index_text(text))),
        )
    con.close()
    return message_ids, memory_ids


def test_migration_from_v1_keeps_everything_searchable_and_queues_it_for_embedding(tmp_path: Path) -> None:
    message_ids, memory_ids = _v1_database(tmp_path / "v1")
    store = SQLiteStore(tmp_path / "v1")
    try:
        assert store.schema_version() == len(MIGRATIONS)
        assert store.count_messages(A, MessageFilter()) == 3
        # Its own words first, then the question before it (whose context it is); never another session.
        assert bm25_messages(store, A, "Alchemist") == [
            "The Alchemist, again.",
            "Which novel are you reading these days?",
        ]
        assert bm25_messages(store, A, "爬山") == ["我们周末去爬山了。"]
        # The context column is filled for existing messages too.
        assert bm25_messages(store, A, "novel") == ["Which novel are you reading these days?", "The Alchemist, again."]
        assert [a.id for a, _ in store.search_atomic(A, query_terms("tea"), AtomicFilter(), 5)] == [memory_ids[0]]

        assert store.embedding_model() is None
        assert store.embedding_backlog() == 5
        tasks = store.next_embedding_tasks(10)
        assert sorted(t.kind for t in tasks) == ["l0", "l0", "l0", "l1", "l1"]
        assert {t.text.splitlines()[-1] for t in tasks} == {
            "Which novel are you reading these days?",
            "The Alchemist, again.",
            "我们周末去爬山了。",
            "likes green tea",
            "works at Initech",
        }
        store.reset_embeddings(MODEL)  # the first start with an embedder adopts its model
        assert embed_all(store) == 5
        assert near_atomic(store, A, "works at Initech")[0][0] == "works at Initech"

        # New writes after the migration behave like any others.
        new_ids, _ = store.add_messages(A, "s1", msgs(["I finished it last night."], start_ms=10))
        assert store.embedding_backlog() == 1
        assert "I finished it last night." in bm25_messages(store, A, "Alchemist")  # context of its predecessor
        assert store.delete_messages(A, [message_ids[0], *new_ids], []) == 2
    finally:
        store.close()
    again = SQLiteStore(tmp_path / "v1")  # reopening migrates nothing twice
    try:
        assert again.schema_version() == len(MIGRATIONS)
        assert again.count_messages(A, MessageFilter()) == 2
    finally:
        again.close()
