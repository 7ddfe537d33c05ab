"""Offload persistence in SQLite: pairs with their full results, prompts, graphs and per-session state.

A stage's output, the job that made it and the jobs it makes due are written in one transaction (see
memhub.store.offload). Jobs ride on the pipeline's table (kinds `offload-summary`, `offload-task`,
`offload-graph`, one open per session), so they are leased, retried and dead-lettered like the pipeline's own.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memhub.model.offload import (
    CompactState,
    GraphUpdate,
    IngestResult,
    MappableEntry,
    OffloadEntry,
    OffloadSession,
    OffloadTriggers,
    PairSummary,
    QueuedPrompt,
    RecentTurn,
    SessionOffload,
    StoredPair,
    TaskDecision,
    TaskGraph,
    ToolPair,
)
from memhub.model.pipeline import Job, LeaseLost
from memhub.store.offload import GRAPH_JOB, SUMMARY_JOB, TASK_JOB, OffloadStore, PairConflict
from memhub.store.sqlite.pipeline import SQLitePipelineStore, insert_job

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore

_KEY = "service_id = ? AND team_id = ? AND agent_id = ? AND user_id = ? AND session_id = ?"
_KEY_COLUMNS = "service_id, team_id, agent_id, user_id, session_id"
# Prompts sent before any pair of a session have no task yet: their pairs go to this graph.
FIRST_GRAPH = "session.mmd"
FIRST_LABEL = "session"

# Entries a graph can take now: summarised, not on a graph, and their prompt judged (or there was none).
_MAPPABLE = (
    "FROM offload_pairs p LEFT JOIN offload_prompts q ON q.seq = p.prompt_seq "
    "WHERE p.service_id = ? AND p.team_id = ? AND p.agent_id = ? AND p.user_id = ? AND p.session_id = ? "
    "AND p.summarized_ms IS NOT NULL AND p.node_id IS NULL AND (p.prompt_seq = 0 OR q.judged_ms IS NOT NULL)"
)


def _key(session: OffloadSession) -> tuple[str, str, str, str, str]:
    return (session.service_id, session.team_id, session.agent_id, session.user_id, session.session_id)


def _pair(row: sqlite3.Row) -> StoredPair:
    pair = ToolPair(
        tool_name=row["tool_name"],
        tool_call_id=row["tool_call_id"],
        params=json.loads(row["params_json"]),
        result=json.loads(row["result_json"]),
        timestamp=row["timestamp"],
        error=row["error"],
        duration_ms=row["duration_ms"],
    )
    return StoredPair(row["seq"], pair, row["ref"], row["prompt_seq"], row["created_ms"])


# An entry without its result: a compaction reads every entry of the session, never the results themselves.
_ENTRY_COLUMNS = "tool_call_id, tool_call, summary, score, timestamp, ref, node_id, outline"


def _entry(row: sqlite3.Row) -> OffloadEntry:
    return OffloadEntry(
        tool_call_id=row["tool_call_id"],
        tool_call=row["tool_call"],
        summary=row["summary"],
        score=row["score"],
        timestamp=row["timestamp"],
        result_ref=row["ref"],
        node_id=row["node_id"],
        outline=row["outline"],
    )


def _compact_state(raw: str | None) -> CompactState:
    data: dict[str, Any] = json.loads(raw) if raw else {}
    return CompactState(
        replaced=tuple(data.get("replaced", ())),
        deleted=tuple(data.get("deleted", ())),
        truncated=tuple(data.get("truncated", ())),
        last_compacted_ms=int(data.get("last_compacted_ms", 0)),
    )


def _due(con: sqlite3.Connection, session: OffloadSession, kind: str, at_ms: int) -> None:
    """Make the session's `kind` job due at `at_ms`: open it, or bring an open pending one forward."""
    if insert_job(con, session.service_id, kind, session.job_target, session.job_scope(), at_ms) is None:
        con.execute(
            "UPDATE pipeline_jobs SET run_after_ms = MIN(run_after_ms, ?) "
            "WHERE kind = ? AND target = ? AND state = 'pending'",
            (at_ms, kind, session.job_target),
        )


def _finish(con: sqlite3.Connection, job: Job, owner: str, now_ms: int) -> None:
    if not SQLitePipelineStore._owned(con, job, owner):
        raise LeaseLost(f"job {job.seq} is no longer leased to {owner}")
    SQLitePipelineStore._done(con, job, now_ms)


class SQLiteOffloadStore(OffloadStore):
    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    # -- ingest ----------------------------------------------------------------------------------
    def ingest(
        self,
        session: OffloadSession,
        pairs: Sequence[tuple[ToolPair, str, str]],
        prompt: tuple[str, Sequence[RecentTurn]] | None,
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> IngestResult:
        key = _key(session)
        with self.store._write() as con:
            con.execute(
                f"INSERT INTO offload_sessions ({_KEY_COLUMNS}, updated_ms) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (*key, now_ms),
            )
            # Decided before anything is written: a conflicting pair refuses the whole ingest.
            fresh: list[tuple[ToolPair, str, str]] = []
            duplicates = 0
            seen: dict[str, str] = {}
            for index, (pair, digest, ref) in enumerate(pairs):
                row = con.execute(
                    f"SELECT content_hash FROM offload_pairs WHERE {_KEY} AND tool_call_id = ?",
                    (*key, pair.tool_call_id),
                ).fetchone()
                stored = row[0] if row is not None else seen.get(pair.tool_call_id)
                if stored is None:
                    seen[pair.tool_call_id] = digest
                    fresh.append((pair, digest, ref))
                elif stored == digest:
                    duplicates += 1
                else:
                    raise PairConflict(index, pair.tool_call_id)
            prompt_seq = con.execute(f"SELECT last_prompt_seq FROM offload_sessions WHERE {_KEY}", key).fetchone()[0]
            for pair, digest, ref in fresh:
                con.execute(
                    f"INSERT INTO offload_pairs ({_KEY_COLUMNS}, tool_call_id, tool_name, params_json, result_json, "
                    "error, timestamp, duration_ms, content_hash, ref, prompt_seq, created_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        *key,
                        pair.tool_call_id,
                        pair.tool_name,
                        json.dumps(pair.params, ensure_ascii=False),
                        json.dumps(pair.result, ensure_ascii=False),
                        pair.error,
                        pair.timestamp,
                        pair.duration_ms,
                        digest,
                        ref,
                        prompt_seq,
                        now_ms,
                    ),
                )
            if fresh:
                self._summary_due(con, session, now_ms, triggers)
            if prompt is not None:
                text, recent = prompt
                cur = con.execute(
                    f"INSERT INTO offload_prompts ({_KEY_COLUMNS}, prompt, recent_json, created_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, text, json.dumps([[t.role, t.content] for t in recent], ensure_ascii=False), now_ms),
                )
                con.execute(
                    f"UPDATE offload_sessions SET last_prompt_seq = ?, updated_ms = ? WHERE {_KEY}",
                    (cur.lastrowid, now_ms, *key),
                )
                _due(con, session, TASK_JOB, now_ms)
            return IngestResult(len(fresh), duplicates, prompt is not None)

    @staticmethod
    def _summary_due(con: sqlite3.Connection, session: OffloadSession, now_ms: int, triggers: OffloadTriggers) -> None:
        count, oldest = con.execute(
            f"SELECT COUNT(*), MIN(created_ms) FROM offload_pairs WHERE {_KEY} AND summarized_ms IS NULL",
            _key(session),
        ).fetchone()
        if count:
            at = now_ms if count >= triggers.summary_batch else oldest + triggers.summary_max_age_ms
            _due(con, session, SUMMARY_JOB, at)

    @staticmethod
    def _graph_due(con: sqlite3.Connection, session: OffloadSession, now_ms: int, triggers: OffloadTriggers) -> None:
        count, oldest = con.execute(f"SELECT COUNT(*), MIN(p.summarized_ms) {_MAPPABLE}", _key(session)).fetchone()
        if count:
            if count >= triggers.graph_batch:
                at = now_ms + triggers.graph_delay_ms
            else:
                at = max(oldest + triggers.graph_max_age_ms, now_ms)
            _due(con, session, GRAPH_JOB, at)

    # -- L1 --------------------------------------------------------------------------------------
    def pending_pairs(self, session: OffloadSession, limit: int) -> list[StoredPair]:
        rows = self.store._reader().execute(
            f"SELECT * FROM offload_pairs WHERE {_KEY} AND summarized_ms IS NULL ORDER BY seq LIMIT ?",
            (*_key(session), limit),
        )
        return [_pair(r) for r in rows]

    def commit_summaries(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        summaries: Sequence[PairSummary],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        key = _key(session)
        with self.store._write() as con:
            _finish(con, job, owner, now_ms)
            for s in summaries:
                con.execute(
                    f"UPDATE offload_pairs SET tool_call = ?, summary = ?, score = ?, outline = ?, summarized_ms = ? "
                    f"WHERE {_KEY} AND tool_call_id = ? AND summarized_ms IS NULL",
                    (s.tool_call, s.summary, s.score, s.outline, now_ms, *key, s.tool_call_id),
                )
            # Pairs ingested while this job ran wait as ingest would have them wait.
            self._summary_due(con, session, now_ms, triggers)
            self._graph_due(con, session, now_ms, triggers)

    # -- L1.5 ------------------------------------------------------------------------------------
    def pending_prompts(self, session: OffloadSession, limit: int) -> list[QueuedPrompt]:
        rows = self.store._reader().execute(
            f"SELECT seq, prompt, recent_json, created_ms FROM offload_prompts WHERE {_KEY} AND judged_ms IS NULL "
            "ORDER BY seq LIMIT ?",
            (*_key(session), limit),
        )
        return [
            QueuedPrompt(
                r["seq"],
                r["prompt"],
                tuple(RecentTurn(role, content) for role, content in json.loads(r["recent_json"])),
                r["created_ms"],
            )
            for r in rows
        ]

    def commit_decisions(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        decisions: Sequence[TaskDecision],
        rewritten: Sequence[tuple[str, str]],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        key = _key(session)
        with self.store._write() as con:
            _finish(con, job, owner, now_ms)
            for d in decisions:
                judgment = {
                    "taskCompleted": d.judgment.task_completed,
                    "isLongTask": d.judgment.is_long_task,
                    "isContinuation": d.judgment.is_continuation,
                    "continuationMmdFile": d.judgment.continuation_graph,
                    "newTaskLabel": d.judgment.new_task_label,
                }
                con.execute(
                    f"UPDATE offload_prompts SET judged_ms = ?, graph = ?, label = ?, judgment_json = ? "
                    f"WHERE {_KEY} AND seq = ?",
                    (now_ms, d.graph, d.label, json.dumps(judgment), *key, d.prompt_seq),
                )
            for filename, content in rewritten:
                self._write_graph(con, session, filename, content, now_ms)
            if decisions:
                con.execute(
                    f"UPDATE offload_sessions SET active_graph = ?, updated_ms = ? WHERE {_KEY}",
                    (decisions[-1].graph, now_ms, *key),
                )
            if con.execute(f"SELECT 1 FROM offload_prompts WHERE {_KEY} AND judged_ms IS NULL LIMIT 1", key).fetchone():
                _due(con, session, TASK_JOB, now_ms)
            self._graph_due(con, session, now_ms, triggers)

    # -- L2 --------------------------------------------------------------------------------------
    def mappable_entries(self, session: OffloadSession, limit: int) -> list[MappableEntry]:
        rows = self.store._reader().execute(
            f"SELECT p.*, q.graph AS target, q.label AS target_label {_MAPPABLE} ORDER BY p.seq LIMIT ?",
            (*_key(session), limit),
        )
        return [MappableEntry(_entry(r), r["target"] or FIRST_GRAPH, r["target_label"] or FIRST_LABEL) for r in rows]

    def commit_graphs(
        self,
        job: Job,
        owner: str,
        session: OffloadSession,
        updates: Sequence[GraphUpdate],
        now_ms: int,
        triggers: OffloadTriggers,
    ) -> None:
        key = _key(session)
        with self.store._write() as con:
            _finish(con, job, owner, now_ms)
            for update in updates:
                self._write_graph(con, session, update.filename, update.content, now_ms)
                for tool_call_id, node_id in sorted(update.node_of.items()):
                    con.execute(
                        f"UPDATE offload_pairs SET node_id = ?, graph = ? WHERE {_KEY} AND tool_call_id = ?",
                        (node_id, update.filename, *key, tool_call_id),
                    )
            active = con.execute(f"SELECT active_graph FROM offload_sessions WHERE {_KEY}", key).fetchone()
            if active is not None and active[0] is None and updates:
                # A session that never sent a prompt still has one task: the graph its pairs went to.
                con.execute(f"UPDATE offload_sessions SET active_graph = ? WHERE {_KEY}", (updates[-1].filename, *key))
            self._graph_due(con, session, now_ms, triggers)

    @staticmethod
    def _write_graph(
        con: sqlite3.Connection, session: OffloadSession, filename: str, content: str, now_ms: int
    ) -> None:
        con.execute(
            f"INSERT INTO offload_graphs ({_KEY_COLUMNS}, filename, content, created_ms, updated_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET content = excluded.content, "
            "updated_ms = excluded.updated_ms",
            (*_key(session), filename, content, now_ms, now_ms),
        )

    # -- reads -----------------------------------------------------------------------------------
    def entries(self, session: OffloadSession) -> list[OffloadEntry]:
        rows = self.store._reader().execute(
            f"SELECT {_ENTRY_COLUMNS} FROM offload_pairs WHERE {_KEY} AND summarized_ms IS NOT NULL ORDER BY seq",
            _key(session),
        )
        return [_entry(r) for r in rows]

    def graphs(self, session: OffloadSession) -> list[TaskGraph]:
        rows = self.store._reader().execute(
            f"SELECT filename, content, updated_ms FROM offload_graphs WHERE {_KEY} ORDER BY filename", _key(session)
        )
        return [TaskGraph(r["filename"], r["content"], r["updated_ms"]) for r in rows]

    def graph_labels(self, session: OffloadSession) -> dict[str, str]:
        rows = self.store._reader().execute(
            f"SELECT graph, label FROM offload_prompts WHERE {_KEY} AND graph IS NOT NULL ORDER BY seq",
            _key(session),
        )
        return {r["graph"]: r["label"] for r in rows}

    def state(self, session: OffloadSession) -> SessionOffload:
        row = (
            self.store._reader()
            .execute(f"SELECT active_graph, compact_json FROM offload_sessions WHERE {_KEY}", _key(session))
            .fetchone()
        )
        if row is None:
            return SessionOffload(None, CompactState())
        return SessionOffload(row["active_graph"], _compact_state(row["compact_json"]))

    def save_compact_state(self, session: OffloadSession, state: CompactState) -> None:
        raw = json.dumps(
            {
                "replaced": list(state.replaced),
                "deleted": list(state.deleted),
                "truncated": list(state.truncated),
                "last_compacted_ms": state.last_compacted_ms,
            }
        )
        with self.store._write() as con:
            con.execute(
                f"INSERT INTO offload_sessions ({_KEY_COLUMNS}, compact_json, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET compact_json = excluded.compact_json, updated_ms = excluded.updated_ms",
                (*_key(session), raw, state.last_compacted_ms),
            )

    def result(self, session: OffloadSession, ref: str) -> StoredPair | None:
        row = (
            self.store._reader()
            .execute(f"SELECT * FROM offload_pairs WHERE {_KEY} AND ref = ?", (*_key(session), ref))
            .fetchone()
        )
        return None if row is None else _pair(row)

    def counts(self, service_id: str) -> dict[str, int]:
        con = self.store._reader()
        pairs = con.execute(
            "SELECT COUNT(*) FROM offload_pairs WHERE service_id = ? AND summarized_ms IS NULL", (service_id,)
        ).fetchone()[0]
        prompts = con.execute(
            "SELECT COUNT(*) FROM offload_prompts WHERE service_id = ? AND judged_ms IS NULL", (service_id,)
        ).fetchone()[0]
        unmapped = con.execute(
            "SELECT COUNT(*) FROM offload_pairs WHERE service_id = ? AND summarized_ms IS NOT NULL AND node_id IS NULL",
            (service_id,),
        ).fetchone()[0]
        return {"pairs_pending": pairs, "prompts_pending": prompts, "entries_unmapped": unmapped}
