"""Opening a store by URL: the backend is named by the scheme, a bare path is SQLite in that directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from memhub.model import MessageFilter, NewMessage
from memhub.runtime import build_hub, open_store
from memhub.scope import MemoryScope
from memhub.settings import Settings
from memhub.store.factory import BACKENDS, UnknownBackend, split_url
from memhub.store.factory import open_store as open_store_at
from memhub.store.sqlite.store import DB_FILENAME
from tests.store.conftest import BACKENDS as CONTRACT_BACKENDS

SCOPE = MemoryScope("svc", "team", "alice", "agent", "")


def test_a_sqlite_url_and_a_bare_path_open_the_same_data_dir(tmp_path: Path) -> None:
    first = open_store_at(f"sqlite://{tmp_path / 'data'}")
    first.add_messages(SCOPE, "s1", [NewMessage("msg-1", "user", "kept", 1, 1)])
    first.close()
    assert (tmp_path / "data" / DB_FILENAME).is_file()
    second = open_store_at(tmp_path / "data")
    try:
        page, total = second.query_messages(SCOPE, MessageFilter(), 10, 0)
        assert total == 1 and page[0].content == "kept"
    finally:
        second.close()


def test_an_unknown_backend_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(UnknownBackend, match=r"store url: unknown backend 'mysql' \(known: sqlite\)"):
        split_url("mysql://db.example/memhub")
    with pytest.raises(UnknownBackend, match="sqlite:// needs a data directory"):
        split_url("sqlite://")


def test_every_backend_the_factory_opens_runs_the_store_contract_suite() -> None:
    assert set(BACKENDS) == set(CONTRACT_BACKENDS), "add the backend to tests/store/conftest.py: BACKENDS"


def test_the_store_url_setting_is_checked_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="unknown backend 'mysql'"):
        Settings(data_dir=tmp_path, store_url="mysql://db.example/memhub")
    assert Settings(data_dir=tmp_path / "d").store_location() == f"sqlite://{tmp_path / 'd'}"
    assert Settings(data_dir=tmp_path, store_url="  ").store_url is None


def test_the_hub_keeps_memories_where_the_store_url_says(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "files", store_url=f"sqlite://{tmp_path / 'db'}", pipeline_enabled=False)
    hub = build_hub(settings)
    try:
        hub.store.add_messages(SCOPE, "s1", [NewMessage("msg-1", "user", "where am I", 1, 1)])
    finally:
        hub.close()
    assert (tmp_path / "db" / DB_FILENAME).is_file()
    assert not (tmp_path / "files" / DB_FILENAME).exists()
    reopened = open_store(settings)
    try:
        assert reopened.count_messages(SCOPE, MessageFilter()) == 1
    finally:
        reopened.close()
