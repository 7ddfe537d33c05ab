"""The store interface against the SQLite backend: scoping inside the index, migrations, settings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memhub.ids import atomic_id, message_id
from memhub.index.tokenize import query_terms
from memhub.model import AtomicFilter, AuditContext, DocumentRecord, MessageFilter, NewAtomic, NewMessage
from memhub.scope import MemoryScope, ProfileScope
from memhub.store import MemoryStore
from memhub.store.sqlite import store as sqlite_store
from memhub.store.sqlite.store import DB_FILENAME, SQLiteStore
from tests.store.conftest import OpenStore, sqlite_only

A = MemoryScope("svc", "team", "alice", "agent", "")
B = MemoryScope("svc", "team", "bob", "agent", "")
AUDIT = AuditContext("req-0000000000000000", "team", "agent", "alice", "")


def _messages(texts: list[str], start_ms: int = 1_000) -> list[NewMessage]:
    return [NewMessage(message_id(), "user", t, start_ms + i, start_ms + i) for i, t in enumerate(texts)]


def _memories(texts: list[str], type_: str = "persona") -> list[NewAtomic]:
    return [NewAtomic(atomic_id(), type_, t, 50, None, "s", 1_000 + i) for i, t in enumerate(texts)]


@sqlite_only
def test_reopening_applies_no_migration_twice_and_keeps_data(open_store_named: OpenStore) -> None:
    first = open_store_named()
    ids, _ = first.add_messages(A, "s1", _messages(["kept across restarts"]))
    version = first.schema_version()
    first.close()
    second = open_store_named()
    assert second.schema_version() == version >= 1
    page, total = second.query_messages(A, MessageFilter(), 10, 0)
    assert total == 1 and page[0].id == ids[0]
    second.close()


@sqlite_only
def test_database_runs_in_wal_mode(store: SQLiteStore) -> None:
    con = sqlite3.connect(store.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    assert store.path.name == DB_FILENAME


def test_put_setting_only_if_absent_keeps_the_first_value(store: MemoryStore) -> None:
    assert store.put_setting("k", "first", only_if_absent=True) == "first"
    assert store.put_setting("k", "second", only_if_absent=True) == "first"
    assert store.put_setting("k", "third") == "third"
    assert store.get_setting("k") == "third"
    assert store.get_setting("missing") is None


def test_search_is_filtered_by_scope_inside_the_index(store: MemoryStore) -> None:
    # Bob has many better-matching messages; Alice must still get her own hits, never Bob's.
    store.add_messages(B, "s", _messages(["apple apple apple pie"] * 200))
    for session, text in enumerate(["an apple a day", "apple crumble", "nothing related"]):
        store.add_messages(A, f"s{session}", _messages([text]))
    hits = store.search_messages(A, query_terms("apple"), MessageFilter(), 5)
    assert len(hits) == 2
    assert {m.user_id for m, _ in hits} == {"alice"}
    assert all(0 < score < 1 for _, score in hits)


def test_session_filter_and_time_filter_apply_before_the_limit(store: MemoryStore) -> None:
    store.add_messages(A, "old", _messages(["budget meeting notes"] * 30, start_ms=1_000))
    store.add_messages(A, "new", _messages(["budget review"] * 3, start_ms=50_000))
    only_new = store.search_messages(A, query_terms("budget"), MessageFilter(session_id="new"), 10)
    assert len(only_new) == 3 and {m.session_id for m, _ in only_new} == {"new"}
    late = store.search_messages(A, query_terms("budget"), MessageFilter(time_start_ms=40_000), 10)
    assert len(late) == 3


def test_deletes_are_visible_to_the_next_search(store: MemoryStore) -> None:
    ids, _ = store.add_messages(A, "s", _messages(["quarterly roadmap", "roadmap draft"]))
    assert store.delete_messages(A, [ids[0]], []) == 1
    hits = store.search_messages(A, query_terms("roadmap"), MessageFilter(), 10)
    assert [m.id for m, _ in hits] == [ids[1]]
    assert store.delete_messages(B, [ids[1]], []) == 0  # another scope cannot delete it
    assert store.delete_messages(A, [], ["s"]) == 1


def test_idempotency_key_returns_the_first_ids_and_writes_once(store: MemoryStore) -> None:
    first, earlier = store.add_messages(A, "s", _messages(["once"]), idempotency_key="k1", request_hash="h")
    again, earlier_hash = store.add_messages(A, "s", _messages(["once"]), idempotency_key="k1", request_hash="h")
    assert earlier is None and earlier_hash == "h" and again == first
    assert store.count_messages(A, MessageFilter()) == 1


def test_atomic_type_filter_is_inside_the_index(store: MemoryStore) -> None:
    store.add_atomic(A, _memories(["likes green tea"] * 50, "episodic"))
    store.add_atomic(A, _memories(["prefers tea without sugar"] * 3, "persona"))
    hits = store.search_atomic(A, query_terms("tea"), AtomicFilter(type="persona"), 5)
    assert len(hits) == 3 and {a.type for a, _ in hits} == {"persona"}


def test_atomic_update_reindexes_and_audits(store: MemoryStore) -> None:
    (rec,) = store.add_atomic(A, _memories(["works at Initech"]))
    updated = store.update_atomic("svc", rec.id, "works at Globex", "career", 9_999, AUDIT)
    assert updated is not None and updated.version == 1 and updated.scene_name == "career"
    assert store.search_atomic(A, query_terms("Initech"), AtomicFilter(), 5) == []
    assert [a.id for a, _ in store.search_atomic(A, query_terms("Globex"), AtomicFilter(), 5)] == [rec.id]
    (row,) = store.list_audit("svc")
    assert (row["record_id"], row["layer"], row["action"], row["version"]) == (rec.id, "L1", "update", 1)
    assert store.update_atomic("other-svc", rec.id, "x", None, 1, AUDIT) is None


def test_documents_are_scoped_by_team_agent_and_user(store: MemoryStore) -> None:
    mine = ProfileScope("svc", "team", "agent", "user")
    others = [ProfileScope("svc", "team", "agent-2", "user"), ProfileScope("svc", "team", "agent", "user-2")]
    doc = DocumentRecord("svc", "team", "agent", "user", "scene", "a/b.md", "body", "sum", 0, "md5", 1, 1)
    assert store.put_document(doc, AUDIT, expect_exists=True) is None  # write needs an existing file
    assert store.put_document(doc, AUDIT, expect_exists=False) == doc
    assert store.put_document(doc, AUDIT, expect_exists=False) is None  # create refuses a taken path
    for other in others:
        assert store.get_document(other, "scene", "a/b.md") is None
        assert store.list_documents(other, "scene") == []
        assert store.delete_documents(other, "scene", ["a/b.md"], [], AUDIT) == []
    assert [d.path for d in store.list_documents(mine, "scene", "a/")] == ["a/b.md"]
    assert store.delete_documents(mine, "scene", [], ["a/"], AUDIT) == ["a/b.md"]
    assert store.list_documents(mine, "scene") == []


def test_new_data_dir_and_database_are_owner_only(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "fresh" / "data")
    store.add_messages(A, "s", _messages(["private"]))
    assert (tmp_path / "fresh" / "data").stat().st_mode & 0o777 == 0o700
    for name in (DB_FILENAME, DB_FILENAME + "-wal"):
        assert (tmp_path / "fresh" / "data" / name).stat().st_mode & 0o777 == 0o600, name
    store.close()


@sqlite_only
def test_idempotency_keys_expire_after_the_retention_window(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.add_messages(A, "s", _messages(["first"]), idempotency_key="k", request_hash="h")
    monkeypatch.setattr(sqlite_store, "IDEMPOTENCY_RETENTION_MS", -1)  # everything is already old
    _, earlier = store.add_messages(A, "s", _messages(["again"]), idempotency_key="k", request_hash="h2")
    assert earlier is None  # the old key was forgotten, so this is a new write
    assert store.count_messages(A, MessageFilter()) == 2
