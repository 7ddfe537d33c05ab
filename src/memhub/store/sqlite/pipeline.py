"""SQLite implementation of the pipeline store (memhub.store.pipeline), on the memory store's connections."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memhub.index.tokenize import index_text
from memhub.model.pipeline import (
    Job,
    JobKind,
    JobScope,
    L1Batch,
    L1Outcome,
    LeaseLost,
    PersonaDue,
    PipelineCounts,
    ProfileProgress,
    Replayed,
    Revision,
    SchedulePolicy,
)
from memhub.model.records import AtomicRecord
from memhub.scope import MemoryScope, ProfileScope
from memhub.store.pipeline import PipelineStore
from memhub.store.sqlite.fts import owner_prefix, qualify

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore

# The sessions `SessionsDue` describes (its values: max rounds, min rounds, idle before); a session held
# after a dead-lettered L1 job waits for a message newer than the failure (or a replay).
_DUE_SESSIONS = (
    "SELECT * FROM pipeline_sessions WHERE last_rowid > l1_cursor "
    "AND (l1_dead_rowid IS NULL OR last_rowid > l1_dead_rowid) "
    "AND (pending_rounds >= MAX(MIN(threshold, ?), ?) OR flush = 1 OR last_message_ms <= ?) LIMIT ?"
)
_DUE_PROFILES = "SELECT * FROM pipeline_profiles WHERE l2_due_ms IS NOT NULL AND l2_due_ms <= ? LIMIT ?"
_DUE_JOBS = (
    "SELECT seq FROM pipeline_jobs WHERE (state = 'pending' AND run_after_ms <= ?) "
    "OR (state = 'running' AND lease_expires_ms <= ?) ORDER BY run_after_ms, seq LIMIT ?"
)


def session_target(scope_key: str, session_id: str) -> str:
    """The job target of one conversation."""
    return f"{scope_key}/{session_id}"


def _hold_session(con: sqlite3.Connection, target: str, held: bool) -> None:
    """Stop (or resume) opening L1 jobs for the conversation `target` names until it has newer messages."""
    scope_key, _, session_id = target.partition("/")  # scope keys never hold a "/"; session ids may
    con.execute(
        "UPDATE pipeline_sessions SET l1_dead_rowid = CASE WHEN ? THEN last_rowid END "
        "WHERE scope_key = ? AND session_id = ?",
        (held, scope_key, session_id),
    )


def note_session_activity(
    con: sqlite3.Connection, scope: MemoryScope, session_id: str, last_rowid: int, user_rounds: int, now_ms: int
) -> None:
    """Called in the transaction that stores L0 messages: the session has new work (durably)."""
    con.execute(
        "INSERT INTO pipeline_sessions (scope_key, session_id, service_id, team_id, user_id, agent_id, task_id, "
        "last_rowid, pending_rounds, last_message_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (scope_key, session_id) DO UPDATE SET last_rowid = MAX(last_rowid, excluded.last_rowid), "
        "pending_rounds = pending_rounds + excluded.pending_rounds, last_message_ms = excluded.last_message_ms",
        (
            scope.key,
            session_id,
            scope.service_id,
            scope.team_id,
            scope.user_id,
            scope.agent_id,
            scope.task_id,
            last_rowid,
            user_rounds,
            now_ms,
        ),
    )


def insert_job(
    con: sqlite3.Connection, service_id: str, kind: JobKind | str, target: str, scope: dict[str, str], at_ms: int
) -> int | None:
    """Open a job in the caller's transaction; its seq, or None when one is already open for the target."""
    cur = con.execute(
        "INSERT OR IGNORE INTO pipeline_jobs (service_id, kind, target, scope_json, state, run_after_ms, "
        "created_ms, updated_ms) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?)",
        (service_id, kind, target, json.dumps(scope, sort_keys=True), at_ms, at_ms, at_ms),
    )
    return cur.lastrowid if cur.rowcount > 0 else None


def _job(row: sqlite3.Row) -> Job:
    return Job(
        seq=row["seq"],
        service_id=row["service_id"],
        kind=row["kind"],
        target=row["target"],
        scope=json.loads(row["scope_json"]),
        state=row["state"],
        attempts=row["attempts"],
        run_after_ms=row["run_after_ms"],
        last_error=row["last_error"],
        created_ms=row["created_ms"],
        updated_ms=row["updated_ms"],
        lease_owner=row["lease_owner"],
        lease_expires_ms=row["lease_expires_ms"],
    )


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _visible(scope: JobScope | None) -> tuple[str, list[str]]:
    """` AND (…)` keeping only the jobs of `scope` (nothing for None), for the pipeline_jobs_by_target index.

    An L1 job's target is `<scope key>/<session id>`: every target of a scope key sorts in
    [key + "/", key + "0"), since "0" follows "/".
    """
    if scope is None:
        return "", []
    parts: list[str] = []
    params: list[str] = []
    for key in scope.memory_keys:
        parts.append("(kind = 'l1' AND target >= ? AND target < ?)")
        params += [session_target(key, ""), key + "0"]
    if scope.profile_keys:
        parts.append(f"(kind IN ('l2', 'l3') AND target IN ({_marks(scope.profile_keys)}))")
        params += scope.profile_keys
    return f" AND ({' OR '.join(parts) or '0'})", params


def _profile_job_scope(profile: ProfileScope) -> dict[str, str]:
    """The isolation ids an L2/L3 job acts under: the profile's owner."""
    p = profile
    return {"service_id": p.service_id, "team_id": p.team_id, "agent_id": p.agent_id, "user_id": p.user_id}


def _progress(row: sqlite3.Row) -> ProfileProgress:
    return ProfileProgress(
        l2_due_ms=row["l2_due_ms"],
        last_l2_ms=row["last_l2_ms"],
        persona_requested=bool(row["persona_requested"]),
        memories_since_persona=row["memories_since_persona"],
    )


def _upsert_profile(con: sqlite3.Connection, profile: ProfileScope) -> None:
    con.execute(
        "INSERT INTO pipeline_profiles (profile_key, service_id, team_id, agent_id, user_id) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (profile_key) DO NOTHING",
        (profile.key, profile.service_id, profile.team_id, profile.agent_id, profile.user_id),
    )


# A profile is built from its user's memories under its (team, agent) only, every task of them; a profile
# without a team (filed under the user) also takes the user's team-less memories.
_PROFILE_MEMORIES = (
    "service_id = ? AND agent_id = ? AND user_id = ? AND (team_id = ? OR (team_id = 'default' AND user_id = ?))"
)


def _profile_params(profile: ProfileScope) -> tuple[str, ...]:
    return (profile.service_id, profile.agent_id, profile.user_id, profile.team_id, profile.team_id)


class SQLitePipelineStore(PipelineStore):
    """Pipeline state in the memory store's database file."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    # -- scheduling --------------------------------------------------------------------------
    def _insert_job(
        self, con: sqlite3.Connection, service_id: str, kind: str, target: str, scope: dict[str, str], at_ms: int
    ) -> bool:
        return insert_job(con, service_id, kind, target, scope, at_ms) is not None

    def enqueue(self, service_id: str, kind: JobKind, target: str, scope: dict[str, str], run_after_ms: int) -> bool:
        with self.store._write() as con:
            return self._insert_job(con, service_id, kind, target, scope, run_after_ms)

    def schedule(self, now_ms: int, schedule: SchedulePolicy, limit: int = 100) -> int:
        due_sessions = schedule.sessions_due(now_ms)
        sessions = (due_sessions.max_rounds, due_sessions.min_rounds, due_sessions.idle_before_ms)
        # Every worker polls twice a second: look before taking the write lock, which ingest needs.
        reader = self.store._reader()
        if not (
            reader.execute(_DUE_SESSIONS, (*sessions, 1)).fetchone()
            or reader.execute(_DUE_PROFILES, (now_ms, 1)).fetchone()
        ):
            return 0
        opened = 0
        with self.store._write() as con:
            due = con.execute(_DUE_SESSIONS, (*sessions, limit)).fetchall()
            for row in due:
                scope = {k: row[k] for k in ("service_id", "team_id", "user_id", "agent_id", "task_id", "session_id")}
                target = session_target(row["scope_key"], row["session_id"])
                if self._insert_job(con, row["service_id"], "l1", target, scope, now_ms):
                    opened += 1
                    con.execute(
                        "UPDATE pipeline_sessions SET pending_rounds = 0, flush = 0, threshold = ? "
                        "WHERE scope_key = ? AND session_id = ?",
                        (schedule.next_threshold(row["threshold"]), row["scope_key"], row["session_id"]),
                    )
            for row in con.execute(_DUE_PROFILES, (now_ms, limit)).fetchall():
                profile = ProfileScope(row["service_id"], row["team_id"], row["agent_id"], row["user_id"])
                scope = _profile_job_scope(profile)
                if self._insert_job(con, row["service_id"], "l2", row["profile_key"], scope, now_ms):
                    opened += 1
                    con.execute(
                        "UPDATE pipeline_profiles SET l2_due_ms = NULL WHERE profile_key = ?", (row["profile_key"],)
                    )
        return opened

    def request_flush(self, scope: MemoryScope, session_id: str | None) -> int:
        with self.store._write() as con:
            # A held session (see _DUE_SESSIONS) is not flushed: replaying its dead job is how it runs again.
            where = "scope_key = ? AND last_rowid > l1_cursor AND (l1_dead_rowid IS NULL OR last_rowid > l1_dead_rowid)"
            params = [scope.key]
            if session_id is not None:
                where += " AND session_id = ?"
                params.append(session_id)
            marked = con.execute(f"UPDATE pipeline_sessions SET flush = 1 WHERE {where}", params).rowcount
            profile = scope.profile
            _upsert_profile(con, profile)
            # Flushed: pending scene work runs now, and so does the L2 after the flushed L1 (see _due_l2).
            con.execute(
                "UPDATE pipeline_profiles SET persona_requested = 1, "
                "l2_due_ms = CASE WHEN l2_due_ms IS NULL THEN NULL ELSE 0 END WHERE profile_key = ?",
                (profile.key,),
            )
        return marked

    # -- jobs ----------------------------------------------------------------------------------
    def claim(self, owner: str, now_ms: int, lease_ms: int, limit: int) -> list[Job]:
        if not self.store._reader().execute(_DUE_JOBS, (now_ms, now_ms, 1)).fetchone():
            return []  # nothing due: no write lock taken (see schedule)
        with self.store._write() as con:
            rows = con.execute(_DUE_JOBS, (now_ms, now_ms, limit)).fetchall()
            claimed = []
            for (seq,) in rows:
                con.execute(
                    "UPDATE pipeline_jobs SET state = 'running', lease_owner = ?, lease_expires_ms = ?, "
                    "attempts = attempts + 1, updated_ms = ? WHERE seq = ?",
                    (owner, now_ms + lease_ms, now_ms, seq),
                )
                claimed.append(_job(con.execute("SELECT * FROM pipeline_jobs WHERE seq = ?", (seq,)).fetchone()))
        return claimed

    @staticmethod
    def _owned(con: sqlite3.Connection, job: Job, owner: str) -> bool:
        row = con.execute("SELECT state, lease_owner FROM pipeline_jobs WHERE seq = ?", (job.seq,)).fetchone()
        return row is not None and row["state"] == "running" and row["lease_owner"] == owner

    def renew(self, job: Job, owner: str, until_ms: int) -> bool:
        with self.store._write() as con:
            cur = con.execute(
                "UPDATE pipeline_jobs SET lease_expires_ms = ? WHERE seq = ? AND state = 'running' AND lease_owner = ?",
                (until_ms, job.seq, owner),
            )
            return cur.rowcount > 0

    @staticmethod
    def _done(con: sqlite3.Connection, job: Job, now_ms: int) -> None:
        con.execute(
            "UPDATE pipeline_jobs SET state = 'done', lease_owner = NULL, lease_expires_ms = NULL, "
            "last_error = NULL, finished_ms = ?, updated_ms = ? WHERE seq = ?",
            (now_ms, now_ms, job.seq),
        )

    def finish(self, job: Job, owner: str, now_ms: int) -> bool:
        with self.store._write() as con:
            if not self._owned(con, job, owner):
                return False
            self._done(con, job, now_ms)
            return True

    def fail(
        self, job: Job, owner: str, error: str, now_ms: int, retry_at_ms: int | None, hold_session: bool = False
    ) -> None:
        with self.store._write() as con:
            if not self._owned(con, job, owner):
                return
            state, run_after = ("pending", retry_at_ms) if retry_at_ms is not None else ("dead", now_ms)
            con.execute(
                "UPDATE pipeline_jobs SET state = ?, run_after_ms = ?, lease_owner = NULL, lease_expires_ms = NULL, "
                "last_error = ?, updated_ms = ?, finished_ms = ? WHERE seq = ?",
                (state, run_after, error[:2000], now_ms, now_ms if state == "dead" else None, job.seq),
            )
            if state == "dead" and hold_session and job.kind == "l1":  # only an L1 job's target is a session
                _hold_session(con, job.target, held=True)

    def jobs(self, service_id: str, states: Sequence[str], limit: int, scope: JobScope | None = None) -> list[Job]:
        visible, params = _visible(scope)
        rows = self.store._reader().execute(
            f"SELECT * FROM pipeline_jobs WHERE service_id = ? AND state IN ({_marks(states)}){visible} "
            "ORDER BY seq DESC LIMIT ?",
            [service_id, *states, *params, limit],
        )
        return [_job(r) for r in rows]

    def replay(self, service_id: str, seqs: Sequence[int], now_ms: int, scope: JobScope | None = None) -> Replayed:
        wanted = list(dict.fromkeys(seqs))
        visible, params = _visible(scope)
        with self.store._write() as con:
            rows = {
                r["seq"]: r
                for r in con.execute(
                    f"SELECT seq, kind, target, state FROM pipeline_jobs WHERE service_id = ? "
                    f"AND seq IN ({_marks(wanted)}){visible}",
                    [service_id, *wanted, *params],
                )
            }
            missing = tuple(seq for seq in wanted if seq not in rows)
            if missing:
                return Replayed(missing=missing)
            replayed = 0
            for seq in wanted:
                row = rows[seq]
                if row["state"] != "dead":
                    continue
                if row["kind"] == "l1":  # the operator asks for this conversation again
                    _hold_session(con, row["target"], held=False)
                busy = con.execute(
                    "SELECT 1 FROM pipeline_jobs WHERE kind = ? AND target = ? AND state IN ('pending', 'running')",
                    (row["kind"], row["target"]),
                ).fetchone()
                if busy is None:
                    con.execute(
                        "UPDATE pipeline_jobs SET state = 'pending', attempts = 0, run_after_ms = ?, updated_ms = ?, "
                        "finished_ms = NULL WHERE seq = ?",
                        (now_ms, now_ms, seq),
                    )
                else:  # a newer job already covers the target: the dead one is settled by it
                    con.execute("UPDATE pipeline_jobs SET state = 'done', updated_ms = ? WHERE seq = ?", (now_ms, seq))
                replayed += 1
        return Replayed(count=replayed)

    def counts(self, service_id: str, scope: JobScope | None = None) -> PipelineCounts:
        con = self.store._reader()
        counts = PipelineCounts()
        visible, params = _visible(scope)
        for row in con.execute(
            f"SELECT kind, state, target FROM pipeline_jobs WHERE service_id = ? AND state IN ('pending', 'running')"
            f"{visible}",
            [service_id, *params],
        ):
            bucket = counts.queued if row["state"] == "pending" else counts.running
            bucket.setdefault(row["kind"], []).append(row["target"])
        for row in con.execute(
            f"SELECT kind, COUNT(*) AS n FROM pipeline_jobs WHERE service_id = ? AND state = 'dead'{visible} "
            "GROUP BY kind",
            [service_id, *params],
        ):
            counts.dead[row["kind"]] = row["n"]
        sessions, session_params = "", []
        if scope is not None:
            sessions = f" AND scope_key IN ({_marks(scope.memory_keys)})"
            session_params = list(scope.memory_keys)
        waiting = con.execute(
            f"SELECT COUNT(*) FROM pipeline_sessions WHERE service_id = ? AND last_rowid > l1_cursor{sessions}",
            [service_id, *session_params],
        ).fetchone()[0]
        return PipelineCounts(counts.queued, counts.running, counts.dead, waiting)

    # -- L1 ------------------------------------------------------------------------------------
    def l1_batch(self, scope: MemoryScope, session_id: str, size: int, background: int) -> L1Batch:
        con = self.store._reader()
        con.execute("BEGIN")
        try:
            state = con.execute(
                "SELECT l1_cursor, last_scene FROM pipeline_sessions WHERE scope_key = ? AND session_id = ?",
                (scope.key, session_id),
            ).fetchone()
            cursor = state["l1_cursor"] if state else 0
            rows = con.execute(
                "SELECT rowid, * FROM l0_messages WHERE scope_key = ? AND session_id = ? AND rowid > ? "
                "ORDER BY rowid LIMIT ?",
                (scope.key, session_id, cursor, size + 1),
            ).fetchall()
            older = con.execute(
                "SELECT rowid, * FROM l0_messages WHERE scope_key = ? AND session_id = ? AND rowid <= ? "
                "ORDER BY rowid DESC LIMIT ?",
                (scope.key, session_id, cursor, background),
            ).fetchall()
        finally:
            con.execute("COMMIT")
        message = self.store._message
        return L1Batch(
            messages=[(r["rowid"], message(r)) for r in rows[:size]],
            background=[message(r) for r in reversed(older)],
            has_more=len(rows) > size,
            previous_scene=state["last_scene"] if state else None,
        )

    def _revise(self, con: sqlite3.Connection, scope: MemoryScope, rev: Revision, now_ms: int) -> None:
        row = con.execute(
            "SELECT rowid, * FROM l1_atomic WHERE +scope_key = ? AND id = ?", (scope.key, rev.target_id)
        ).fetchone()
        if row is None:  # deleted meanwhile: the caller stores the candidate as new instead
            raise LookupError(rev.target_id)
        store = self.store
        reason = "merge" if rev.absorbed_ids else "update"
        store._retire_version(con, row, rev.target_id, reason, now_ms)
        sources = list(dict.fromkeys([*json.loads(row["source_ids_json"]), *rev.source_message_ids]))
        metadata = {**(json.loads(row["metadata_json"]) if row["metadata_json"] else {}), **(rev.metadata or {})}
        con.execute(
            "UPDATE l1_atomic SET content = ?, type = ?, priority = ?, version = version + 1, updated_ms = ?, "
            "source_ids_json = ?, metadata_json = ? WHERE rowid = ?",
            (
                rev.content,
                rev.type,
                rev.priority,
                now_ms,
                json.dumps(sources),
                json.dumps(metadata, ensure_ascii=False),
                row["rowid"],
            ),
        )
        con.execute("DELETE FROM l1_fts WHERE rowid = ?", (row["rowid"],))
        words = qualify(owner_prefix(scope.key), index_text(rev.content))
        con.execute("INSERT INTO l1_fts (rowid, words, grams) VALUES (?, ?, ?)", (row["rowid"], *words))
        store._reembed(con, "l1", scope.key, [row["rowid"]])
        for absorbed in rev.absorbed_ids:
            gone = con.execute(
                "SELECT rowid, * FROM l1_atomic WHERE +scope_key = ? AND id = ?", (scope.key, absorbed)
            ).fetchone()
            if gone is None or absorbed == rev.target_id:
                continue
            store._retire_version(con, gone, rev.target_id, "merged", now_ms)
            store._vectors["l1"].remove(con, scope.key, [gone["rowid"]])
            con.execute("DELETE FROM l1_atomic WHERE rowid = ?", (gone["rowid"],))
            con.execute("DELETE FROM l1_fts WHERE rowid = ?", (gone["rowid"],))
            con.execute("DELETE FROM embedding_queue WHERE kind = 'l1' AND ref = ?", (gone["rowid"],))

    def commit_l1(
        self,
        job: Job,
        owner: str,
        scope: MemoryScope,
        session_id: str,
        cursor: int,
        outcome: L1Outcome,
        now_ms: int,
        schedule: SchedulePolicy,
        more: bool,
    ) -> list[AtomicRecord]:
        with self.store._write() as con:
            if not self._owned(con, job, owner):
                raise LeaseLost(f"job {job.seq} is no longer leased to {owner}")
            new = list(outcome.new)
            revised: list[str] = []
            for rev in outcome.revisions:
                try:
                    self._revise(con, scope, rev, now_ms)
                    revised.append(rev.target_id)
                except LookupError:
                    pass
            stored = self.store._insert_atomic(con, scope, new)
            con.execute(
                "UPDATE pipeline_sessions SET l1_cursor = MAX(l1_cursor, ?), last_l1_ms = ?, "
                "last_scene = COALESCE(?, last_scene), l1_dead_rowid = NULL WHERE scope_key = ? AND session_id = ?",
                (cursor, now_ms, outcome.last_scene, scope.key, session_id),
            )
            self._done(con, job, now_ms)
            if more:
                self._insert_job(con, job.service_id, "l1", job.target, job.scope, now_ms)
            changed = len(stored) + len(revised)
            if changed:
                self._due_l2(con, scope, changed, now_ms, schedule)
            if revised:
                marks = ",".join("?" * len(revised))
                rows = con.execute(f"SELECT * FROM l1_atomic WHERE id IN ({marks})", revised).fetchall()
                stored += [self.store._atomic(r) for r in rows]
        return stored

    @staticmethod
    def _due_l2(
        con: sqlite3.Connection, scope: MemoryScope, changed: int, now_ms: int, schedule: SchedulePolicy
    ) -> None:
        profile = scope.profile
        _upsert_profile(con, profile)
        row = con.execute("SELECT * FROM pipeline_profiles WHERE profile_key = ?", (profile.key,)).fetchone()
        due = schedule.l2_due_ms(now_ms, _progress(row))
        con.execute(
            "UPDATE pipeline_profiles SET l2_due_ms = ?, memories_since_persona = memories_since_persona + ? "
            "WHERE profile_key = ?",
            (due, changed, profile.key),
        )

    # -- L2 / L3 ---------------------------------------------------------------------------------
    def profile_memories(self, profile: ProfileScope, limit: int) -> list[AtomicRecord]:
        rows = self.store._reader().execute(
            f"SELECT * FROM l1_atomic WHERE {_PROFILE_MEMORIES} "
            "ORDER BY (priority = -1) DESC, priority DESC, updated_ms DESC LIMIT ?",
            (*_profile_params(profile), limit),
        )
        return [self.store._atomic(r) for r in rows]

    def changed_memories(self, profile: ProfileScope, limit: int) -> list[AtomicRecord]:
        con = self.store._reader()
        row = con.execute("SELECT last_l2_ms FROM pipeline_profiles WHERE profile_key = ?", (profile.key,)).fetchone()
        since = row["last_l2_ms"] if row is not None and row["last_l2_ms"] is not None else -1
        rows = con.execute(
            f"SELECT * FROM l1_atomic WHERE {_PROFILE_MEMORIES} AND updated_ms > ? ORDER BY updated_ms, rowid LIMIT ?",
            (*_profile_params(profile), since, limit),
        )
        return [self.store._atomic(r) for r in rows]

    def after_l2(self, job: Job, owner: str, profile: ProfileScope, now_ms: int, persona_due: PersonaDue) -> bool:
        with self.store._write() as con:
            if not self._owned(con, job, owner):
                raise LeaseLost(f"job {job.seq} is no longer leased to {owner}")
            self._done(con, job, now_ms)
            con.execute("UPDATE pipeline_profiles SET last_l2_ms = ? WHERE profile_key = ?", (now_ms, profile.key))
            row = con.execute("SELECT * FROM pipeline_profiles WHERE profile_key = ?", (profile.key,)).fetchone()
            has_persona = con.execute(
                "SELECT 1 FROM profile_documents WHERE scope_key = ? AND kind = 'core'", (profile.key,)
            ).fetchone()
            due = row is not None and persona_due(_progress(row), has_persona is not None)
            if due:
                self._insert_job(con, job.service_id, "l3", profile.key, _profile_job_scope(profile), now_ms)
            return bool(due)

    def after_l3(self, job: Job, owner: str, profile: ProfileScope, now_ms: int) -> None:
        with self.store._write() as con:
            if not self._owned(con, job, owner):
                raise LeaseLost(f"job {job.seq} is no longer leased to {owner}")
            self._done(con, job, now_ms)
            con.execute(
                "UPDATE pipeline_profiles SET memories_since_persona = 0, persona_requested = 0, last_l3_ms = ? "
                "WHERE profile_key = ?",
                (now_ms, profile.key),
            )

    # -- history --------------------------------------------------------------------------------
    def atomic_history(self, service_id: str, atomic_id: str) -> list[dict[str, Any]]:
        rows = self.store._reader().execute(
            "SELECT * FROM l1_history WHERE service_id = ? AND (id = ? OR superseded_by = ?) ORDER BY valid_to_ms, seq",
            (service_id, atomic_id, atomic_id),
        )
        return [
            {
                "id": r["id"],
                "scope_key": r["scope_key"],
                "version": r["version"],
                "type": r["type"],
                "content": r["content"],
                "priority": r["priority"],
                "background": r["scene_name"],
                "source_message_ids": json.loads(r["source_ids_json"]),
                "valid_from_ms": r["valid_from_ms"],
                "valid_to_ms": r["valid_to_ms"],
                "superseded_by": r["superseded_by"],
                "reason": r["reason"],
            }
            for r in rows
        ]
