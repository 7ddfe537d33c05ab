"""Mining persistence of the SQLite skill store: per-session buffers of turns, and the archives cut from them.

An archive and the pipeline job that mines it (kind `skill`, target the archive id) are written in one
transaction, together with the buffer the archive was cut from: a crash leaves either all of them or none,
so no archive waits without its job and no turn is both buffered and archived. An append's idempotency key is
recorded in that transaction too, so an append replayed after a crash finds it and adds nothing.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from memhub.model.skills import Archive, ArchiveDraft, BufferState, BufferUpdate, BufferWrite, KeyReused, SessionKey
from memhub.store.sqlite.pipeline import insert_job
from memhub.store.sqlite.skill_rows import dumps

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore

_BUFFER_KEY = "service_id = ? AND team_id = ? AND agent_id = ? AND user_id = ? AND session_id = ?"
# How long a session remembers the idempotency keys of its appends (as L0 keeps its keys).
KEY_RETENTION_MS = 7 * 24 * 3600 * 1000


def archive_id() -> str:
    """`sar-` + 16 hex."""
    return "sar-" + secrets.token_hex(8)


def _key(key: SessionKey) -> tuple[str, str, str, str, str]:
    return (key.service_id, key.team_id, key.agent_id, key.user_id, key.session_id)


def _archive(row: sqlite3.Row) -> Archive:
    return Archive(
        service_id=row["service_id"],
        archive_id=row["archive_id"],
        team_id=row["team_id"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        task_ref=row["task_ref"],
        reason=row["reason"],
        messages=tuple(json.loads(row["messages_json"])),
        max_iterations=row["max_iterations"],
        note=row["note"],
        created_ms=row["created_ms"],
        job_seq=row["job_seq"],
    )


def _read_buffer(con: sqlite3.Connection, key: SessionKey) -> tuple[list[Mapping[str, object]], BufferState]:
    row = con.execute(
        f"SELECT messages_json, tool_calls, bytes FROM skill_buffers WHERE {_BUFFER_KEY}", _key(key)
    ).fetchone()
    if row is None:
        return [], BufferState(0, 0, 0)
    messages = json.loads(row["messages_json"])
    return messages, BufferState(len(messages), row["tool_calls"], row["bytes"])


class SkillMining:
    """update_buffer / buffer / add_archive / archive / recent_archives of SQLiteSkillStore."""

    if TYPE_CHECKING:  # provided by SQLiteSkillStore
        store: SQLiteStore

    def update_buffer(
        self,
        key: SessionKey,
        now_ms: int,
        decide: Callable[[list[Mapping[str, object]], BufferState], BufferUpdate],
        *,
        idempotency_key: str | None = None,
        request_hash: str = "",
    ) -> BufferWrite:
        with self.store._write() as con:
            if idempotency_key is not None:
                con.execute("DELETE FROM skill_buffer_keys WHERE created_ms < ?", (now_ms - KEY_RETENTION_MS,))
                seen = con.execute(
                    f"SELECT request_hash FROM skill_buffer_keys WHERE {_BUFFER_KEY} AND key = ?",
                    (*_key(key), idempotency_key),
                ).fetchone()
                if seen is not None:
                    if seen[0] != request_hash:
                        raise KeyReused(idempotency_key)
                    return BufferWrite(replayed=True)
                con.execute(
                    "INSERT INTO skill_buffer_keys (service_id, team_id, agent_id, user_id, session_id, key, "
                    "request_hash, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*_key(key), idempotency_key, request_hash, now_ms),
                )
            messages, state = _read_buffer(con, key)
            # Asked under the write lock: no other append to the session can slip between the read and the write.
            update = decide(messages, state)
            if update.messages:
                con.execute(
                    "INSERT INTO skill_buffers (service_id, team_id, agent_id, user_id, session_id, messages_json, "
                    "tool_calls, bytes, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (service_id, team_id, agent_id, user_id, session_id) DO UPDATE SET "
                    "messages_json = excluded.messages_json, tool_calls = excluded.tool_calls, "
                    "bytes = excluded.bytes, updated_ms = excluded.updated_ms",
                    (*_key(key), dumps(list(update.messages)), update.tool_calls, update.bytes, now_ms),
                )
            else:
                con.execute(f"DELETE FROM skill_buffers WHERE {_BUFFER_KEY}", _key(key))
            if update.archive is None:
                return BufferWrite()
            return BufferWrite(self._cut(con, key, update.archive, now_ms))

    def buffer(self, key: SessionKey) -> tuple[list[Mapping[str, object]], BufferState]:
        return _read_buffer(self.store._reader(), key)

    def add_archive(self, key: SessionKey, draft: ArchiveDraft, now_ms: int) -> Archive:
        with self.store._write() as con:
            return self._cut(con, key, draft, now_ms)

    @staticmethod
    def _cut(con: sqlite3.Connection, key: SessionKey, draft: ArchiveDraft, now_ms: int) -> Archive:
        """Insert the archive and its mining job (in the caller's transaction)."""
        aid = archive_id()
        scope = {
            "service_id": key.service_id,
            "team_id": key.team_id,
            "agent_id": key.agent_id,
            "user_id": key.user_id,
            "session_id": key.session_id,
            "archive_id": aid,
        }
        seq = insert_job(con, key.service_id, "skill", aid, scope, now_ms)
        con.execute(
            "INSERT INTO skill_archives (service_id, archive_id, team_id, agent_id, user_id, session_id, task_ref, "
            "reason, messages_json, max_iterations, note, created_ms, job_seq) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key.service_id,
                aid,
                key.team_id,
                key.agent_id,
                key.user_id,
                key.session_id,
                draft.task_ref,
                draft.reason,
                dumps(list(draft.messages)),
                draft.max_iterations,
                draft.note,
                now_ms,
                seq,
            ),
        )
        row = con.execute(
            "SELECT * FROM skill_archives WHERE service_id = ? AND archive_id = ?", (key.service_id, aid)
        ).fetchone()
        return _archive(row)

    def archive(self, service_id: str, archive_id: str) -> Archive | None:
        row = (
            self.store._reader()
            .execute("SELECT * FROM skill_archives WHERE service_id = ? AND archive_id = ?", (service_id, archive_id))
            .fetchone()
        )
        return None if row is None else _archive(row)

    def recent_archives(self, service_id: str, team_id: str, agent_id: str, limit: int) -> list[Archive]:
        rows = self.store._reader().execute(
            "SELECT * FROM skill_archives WHERE service_id = ? AND team_id = ? AND agent_id = ? "
            "ORDER BY created_ms DESC, seq DESC LIMIT ?",
            (service_id, team_id, agent_id, limit),
        )
        return [_archive(r) for r in rows]
