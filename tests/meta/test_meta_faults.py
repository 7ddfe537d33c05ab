"""Faults on the management plane: a database locked by another process."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memhub.store.sqlite.store import DB_FILENAME
from tests.conftest import build_gateway
from tests.meta.org import Org, table_snapshot


def test_a_foreign_lock_refuses_management_writes_retryably_but_never_authentication(tmp_path: Path) -> None:
    gw = build_gateway(tmp_path / "data", db_busy_timeout_ms=200)
    try:
        org = Org(gw)
        alice = org.user("alice")
        org.join(org.team_id, org.admin, alice)
        agent = org.default_agent(org.team_id, alice)
        fresh = org.ok(alice, "/v3/meta/user-key/create", {"name": "never used"})["key_value"]
        before = table_snapshot(gw)
        other = sqlite3.connect(gw.data_dir / DB_FILENAME, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # a second gateway or a backup tool mid-transaction
        try:
            # A key's first use would record last_used_at; the lock only skips that bookkeeping.
            scope = {"team_id": org.team_id, "agent_id": agent}
            counted = org.ok(fresh, "/v3/conversation/count", scope)
            assert counted == {"total": 0}
            assert org.ok(None, "/v3/meta/auth/verify", {"user_key": fresh})["valid"] is True
            # A management write waits for the lock, then gives up: 503, retryable, nothing written.
            envelope = org.call(alice, "/v3/meta/team/create", {"name": "t", "owner_user_id": alice.user_id}).json()
            assert envelope["code"] == 503 and envelope["data"] == {"retryable": True}
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert table_snapshot(gw) == before
        assert org.ok(alice, "/v3/meta/team/create", {"name": "t", "owner_user_id": alice.user_id})["name"] == "t"
    finally:
        gw.close()
