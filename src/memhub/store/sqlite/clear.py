"""Clearing an agent's whole memory in the SQLite store: a part of SQLiteStore, in its own module.

A chat-memory asset stands for one (team, agent); its L0/L1 records are spread over every user
and task that talked to the agent, and its L2/L3 over every user's profile, so they are found by
the owner columns, not by one scope key.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memhub.model.records import ClearedMemory, ClearTarget, EmbeddingKind
from memhub.store.sqlite.util import chunks, drop_rows
from memhub.timeutil import now_ms

CANCELLED = "cancelled: the agent's chat memory was cleared"
_LAYERS = ("L0", "L1", "L2", "L3")
_OWNER = "service_id = ? AND agent_id = ? AND team_id = ?"  # the order of the l0/l1 by-profile indexes


class ClearTables:
    """clear_agent_memory: L0–L3 (every user's), vectors, history and pipeline state of (team, agent)s, in one
    transaction."""

    if TYPE_CHECKING:  # provided by SQLiteStore
        _vectors: dict[str, Any]

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _audit(self, con: sqlite3.Connection, *args: Any) -> None: ...

    def clear_agent_memory(self, targets: Sequence[ClearTarget]) -> list[ClearedMemory]:
        stamp = now_ms()
        # One write transaction for every target: an error anywhere rolls all of them back (and
        # _write drops the cached vector indexes the rolled-back removals touched).
        with self._write() as con:
            return [self._clear_one(con, target, stamp) for target in targets]

    def _clear_one(self, con: sqlite3.Connection, t: ClearTarget, stamp: int) -> ClearedMemory:
        owner = (t.service_id, t.agent_id, t.team_id)
        l0, l0_keys = self._drop_records(con, "l0", "l0_messages", "l0_fts", owner)
        l1, l1_keys = self._drop_records(con, "l1", "l1_atomic", "l1_fts", owner)
        session_keys = {
            r[0]
            for r in con.execute(
                "SELECT scope_key FROM pipeline_sessions WHERE service_id = ? AND agent_id = ? AND team_id = ?", owner
            )
        }
        # Retired L1 versions hold the old text of the memories: a clear that kept them would not clear.
        for chunk in chunks(sorted(l0_keys | l1_keys | session_keys), 500):
            marks = ",".join("?" * len(chunk))
            history = f"DELETE FROM l1_history WHERE service_id = ? AND scope_key IN ({marks})"
            con.execute(history, [t.service_id, *chunk])
        # Every user's profile of the (team, agent): their scene files and persona.
        documents = con.execute(f"DELETE FROM profile_documents WHERE {_OWNER}", owner).rowcount
        cancelled = self._settle_pipeline(con, t, owner, stamp)
        for layer in _LAYERS:
            self._audit(con, t.service_id, t.record_id, layer, "clear", None, stamp, t.audit)
        return ClearedMemory(l0_deleted=l0, l1_deleted=l1, profile_deleted=documents, jobs_cancelled=cancelled)

    def _drop_records(
        self, con: sqlite3.Connection, kind: EmbeddingKind, table: str, fts: str, owner: tuple[str, str, str]
    ) -> tuple[int, set[str]]:
        """Delete every row of the (team, agent) with its full-text entry, vector and queue entry."""
        by_scope: dict[str, list[int]] = {}
        for rowid, scope_key in con.execute(f"SELECT rowid, scope_key FROM {table} WHERE {_OWNER}", owner):
            by_scope.setdefault(scope_key, []).append(rowid)
        deleted = 0
        for scope_key, rowids in by_scope.items():
            # Every record of these scopes goes, so no surviving L0 neighbour needs its context refreshed.
            self._vectors[kind].remove(con, scope_key, rowids)
            deleted += drop_rows(con, table, fts, kind, rowids)
        return deleted, set(by_scope)

    @staticmethod
    def _settle_pipeline(con: sqlite3.Connection, t: ClearTarget, owner: tuple[str, str, str], stamp: int) -> int:
        """Forget the (team, agent)'s extraction progress and settle its open jobs unrun.

        A running job loses its lease: its worker's commit (commit_l1, after_l2/l3, and the lease check
        before L2/L3 writes) finds the job no longer its own and writes nothing. Sessions and the
        profile start afresh with the next conversation/add.
        """
        cancelled = con.execute(
            "UPDATE pipeline_jobs SET state = 'done', lease_owner = NULL, lease_expires_ms = NULL, last_error = ?, "
            "finished_ms = ?, updated_ms = ? WHERE service_id = ? AND state IN ('pending', 'running') "
            "AND json_extract(scope_json, '$.team_id') = ? AND json_extract(scope_json, '$.agent_id') = ?",
            (CANCELLED, stamp, stamp, t.service_id, t.team_id, t.agent_id),
        ).rowcount
        con.execute(f"DELETE FROM pipeline_sessions WHERE {_OWNER}", owner)
        con.execute(f"DELETE FROM pipeline_profiles WHERE {_OWNER}", owner)
        return cancelled
