"""Faults: a database locked by another process degrades to a retryable 503 with nothing written."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memhub.store.sqlite.store import DB_FILENAME
from tests.conftest import Gateway

MESSAGE = {"session_id": "s", "messages": [{"role": "user", "content": "written once the lock is gone"}]}


def test_write_during_a_foreign_lock_is_503_retryable_and_writes_nothing(make_gateway: Callable[..., Gateway]) -> None:
    gw = make_gateway("locked", db_busy_timeout_ms=200)
    other = sqlite3.connect(gw.data_dir / DB_FILENAME, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # e.g. a second gateway or a backup tool mid-transaction
    try:
        envelope = gw.fails("/v3/conversation/add", MESSAGE, 503)
        assert envelope["data"] == {"retryable": True}
        assert "retry" in envelope["message"]
        # Readers are not blocked by a writer in WAL mode.
        assert gw.ok("/v3/conversation/count")["total"] == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert gw.ok("/v3/conversation/add", MESSAGE)["total_count"] == 1
    assert gw.ok("/v3/conversation/count")["total"] == 1
