"""Embedded SQLite backend: WAL, one writer, concurrent readers, FTS5 for BM25."""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from memhub.errors import StorageBusy
from memhub.ids import audit_id
from memhub.index.tokenize import index_text
from memhub.model.query import QueryTerms
from memhub.model.records import (
    AtomicFilter,
    AtomicRecord,
    AuditContext,
    DocumentKind,
    DocumentRecord,
    EmbeddingKind,
    EmbeddingModel,
    EmbeddingTask,
    MessageFilter,
    MessageRecord,
    NewMessage,
)
from memhub.scope import MemoryScope, ProfileScope
from memhub.store.base import MemoryStore
from memhub.store.meta import MetaStore
from memhub.store.offload import OffloadStore
from memhub.store.pipeline import PipelineStore
from memhub.store.prompts import PromptStore
from memhub.store.skills import SkillStore
from memhub.store.sqlite.atomic import AtomicTables
from memhub.store.sqlite.clear import ClearTables
from memhub.store.sqlite.context import (
    CONTEXT_AFTER,
    affected_by_delete,
    appended_contexts,
    embedding_context,
    refresh_context,
    session_tail,
)
from memhub.store.sqlite.fts import CONTEXT, GRAMS, WORDS, FtsIndex, owner_prefix, qualify, rank_to_score
from memhub.store.sqlite.meta import SQLiteMetaStore
from memhub.store.sqlite.offload import SQLiteOffloadStore
from memhub.store.sqlite.pipeline import SQLitePipelineStore, note_session_activity
from memhub.store.sqlite.prompts import SQLitePromptStore
from memhub.store.sqlite.schema import DATABASE_ID_SETTING, MIGRATIONS
from memhub.store.sqlite.skills import SQLiteSkillStore
from memhub.store.sqlite.snapshot_writer import SnapshotWriter
from memhub.store.sqlite.util import chunks, drop_rows, json_or_none
from memhub.store.sqlite.vector_snapshots import VectorSnapshots
from memhub.store.sqlite.vectors import DEFAULT_SNAPSHOTS, ScopeVectors, SnapshotPolicy
from memhub.timeutil import now_ms

DB_FILENAME = "memhub.db"
# Up to this many vectors a scope is searched exactly; above it an HNSW graph is built (exact
# search stays fast enough up to here; a graph pays off only above it).
EXACT_VECTOR_LIMIT = 20_000
EMBEDDING_MODEL_SETTING = "embedding.model"
IDEMPOTENCY_RETENTION_MS = 7 * 24 * 3600 * 1000
MMAP_BYTES = 256 * 1024 * 1024  # address space only: pages are read on demand and shared with the OS cache

log = logging.getLogger(__name__)

_MESSAGES_FTS = FtsIndex(fts="l0_fts", vocab="l0_vocab", content="l0_messages", columns=(WORDS, GRAMS, CONTEXT))


class SQLiteStore(AtomicTables, ClearTables, MemoryStore):
    """One database file per data dir; safe for many threads of one process."""

    def __init__(
        self,
        data_dir: Path | str,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 10_000,
        exact_vector_limit: int = EXACT_VECTOR_LIMIT,
        snapshots: SnapshotPolicy = DEFAULT_SNAPSHOTS,
    ) -> None:
        self.path = Path(data_dir) / DB_FILENAME
        # Memories are private: a new data dir is owner-only, and so is the database (SQLite gives
        # its -wal and -shm files the database file's permissions).
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        self._synchronous = synchronous
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._writer = self._connect()
        self._vectors: dict[str, ScopeVectors] = {}
        self._migrate()
        # Vector indexes are cached per scope and saved beside the database file (vector_snapshots.py).
        # Migration 18 gives every database its id; one deleted since gets a new one (no snapshot matches then).
        database_id = self.get_setting(DATABASE_ID_SETTING) or self.put_setting(
            DATABASE_ID_SETTING, secrets.token_hex(16), only_if_absent=True
        )
        self._snapshot_policy = snapshots
        self._snapshots = VectorSnapshots.beside(self.path, database_id)
        if snapshots.enabled:
            self._snapshots.remove_stale_temp_files()
        self._snapshot_writer = SnapshotWriter()
        self._warm_thread: threading.Thread | None = None
        tables = {"l0": ("l0_vectors", "l0_messages"), "l1": ("l1_vectors", "l1_atomic")}
        tables["skill"] = ("skill_vectors", "skill_versions")
        self._vectors = {
            kind: ScopeVectors(
                kind,
                vector_table,
                content_table,
                exact_limit=exact_vector_limit,
                snapshots=self._snapshots,
                writer=self._snapshot_writer,
                reader=self._reader,
                policy=snapshots,
            )
            for kind, (vector_table, content_table) in tables.items()
        }
        self._meta = SQLiteMetaStore(self._reader, self._write)
        self._pipeline = SQLitePipelineStore(self)
        self._prompts = SQLitePromptStore(self)
        self._skills = SQLiteSkillStore(self)
        self._offload = SQLiteOffloadStore(self)
        self._model = self.embedding_model()
        self._set_dim(self._model.dim if self._model else 0)

    # -- connections ---------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise sqlite3.ProgrammingError("the store is closed")
        timeout_s = self._busy_timeout_ms / 1000
        con = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before the client hears "ok" — acknowledged writes survive
        # a crash of the process or of the machine.
        con.execute(f"PRAGMA synchronous={self._synchronous}")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute(f"PRAGMA busy_timeout={int(self._busy_timeout_ms)}")
        # Every worker thread has a connection of its own, each with a small private page cache: reads through
        # a memory map share the OS page cache instead (a skill search at 10k skills: 18 -> 13 ms over HTTP).
        con.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
        with self._connections_lock:
            self._connections.append(con)
        return con

    def _reader(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._connect()
            self._local.con = con
        return con

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._write_lock:
            con = self._writer
            try:
                con.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                # Another process (a second gateway, a backup tool) held the write lock past the busy
                # timeout: nothing was written, and the client may retry.
                if "locked" in str(exc) or "busy" in str(exc):
                    raise StorageBusy() from exc
                raise
            try:
                yield con
            except BaseException:
                # Cached vector indexes may hold this transaction's changes: rebuild them on demand. Dropped before
                # the rollback, so a snapshot being written can tell by the cache alone that its state was undone.
                for vectors in self._vectors.values():
                    vectors.forget_all()
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")

    def _migrate(self) -> None:
        with self._write() as con:
            con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = con.execute("SELECT MAX(version) FROM schema_version").fetchone()
            current = row[0] or 0
            for version, migration in enumerate(MIGRATIONS, start=1):
                if version <= current:
                    continue
                if callable(migration):
                    migration(con)
                else:
                    for statement in migration.split(";"):
                        if statement.strip():
                            con.execute(statement)
                con.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    def schema_version(self) -> int:
        """Applied migration count."""
        return self._reader().execute("SELECT MAX(version) FROM schema_version").fetchone()[0]

    def backend_name(self) -> str:
        return "sqlite"

    @property
    def meta(self) -> MetaStore:
        return self._meta

    @property
    def pipeline(self) -> PipelineStore:
        return self._pipeline

    @property
    def prompts(self) -> PromptStore:
        return self._prompts

    @property
    def skills(self) -> SkillStore:
        return self._skills

    @property
    def offload(self) -> OffloadStore:
        return self._offload

    def close(self) -> None:
        self._snapshot_writer.close()  # a snapshot being written stops at its next chunk and leaves no file
        for vectors in self._vectors.values():
            vectors.close()
        with self._connections_lock:
            self._closed = True
            for con in self._connections:
                con.close()
            self._connections.clear()

    def _count(self, table: str, where: str, params: Sequence[Any]) -> int:
        return self._reader().execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", params).fetchone()[0]

    def _page(
        self, table: str, where: str, params: Sequence[Any], order_by: str, limit: int, offset: int
    ) -> tuple[list[sqlite3.Row], int]:
        """One page of rows and the total that matched, read in one snapshot."""
        con = self._reader()
        con.execute("BEGIN")  # count and page agree even while writers commit between them
        try:
            total = self._count(table, where, params)  # same thread-local connection, same snapshot
            sql = f"SELECT * FROM {table} WHERE {where} ORDER BY {order_by} LIMIT ? OFFSET ?"
            rows = con.execute(sql, [*params, limit, offset]).fetchall()
        finally:
            con.execute("COMMIT")
        return rows, total

    # -- settings ------------------------------------------------------------------------
    def get_setting(self, name: str) -> str | None:
        row = self._reader().execute("SELECT value FROM instance_settings WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def put_setting(self, name: str, value: str, *, only_if_absent: bool = False) -> str:
        with self._write() as con:
            if only_if_absent:
                con.execute("INSERT OR IGNORE INTO instance_settings (name, value) VALUES (?, ?)", (name, value))
            else:
                con.execute(
                    "INSERT INTO instance_settings (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (name, value),
                )
            return con.execute("SELECT value FROM instance_settings WHERE name = ?", (name,)).fetchone()[0]

    # -- L0 ------------------------------------------------------------------------------
    def add_messages(
        self,
        scope: MemoryScope,
        session_id: str,
        messages: Sequence[NewMessage],
        *,
        idempotency_key: str | None = None,
        request_hash: str | None = None,
    ) -> tuple[list[str], str | None]:
        key = scope.key
        prefix = owner_prefix(key)
        indexed = [qualify(prefix, index_text(m.content)) for m in messages]  # segment outside the lock
        with self._write() as con:
            if idempotency_key is not None:
                # Keys are remembered for a retention window, long enough for any client's retries.
                con.execute("DELETE FROM l0_idempotency WHERE created_ms < ?", (now_ms() - IDEMPOTENCY_RETENTION_MS,))
                row = con.execute(
                    "SELECT request_hash, ids_json FROM l0_idempotency WHERE scope_key = ? AND key = ?",
                    (key, idempotency_key),
                ).fetchone()
                if row is not None:
                    return json.loads(row["ids_json"]), row["request_hash"]
            tail = session_tail(con, key, session_id)
            contexts = appended_contexts([words for _, words in tail], [words for words, _ in indexed])
            rowids: list[int] = []
            for message, text, context in zip(messages, indexed, contexts, strict=True):
                cur = con.execute(
                    "INSERT INTO l0_messages (id, scope_key, service_id, team_id, user_id, agent_id, "
                    "task_id, session_id, role, content, metadata_json, recorded_ms, message_ms) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        message.id,
                        key,
                        scope.service_id,
                        scope.team_id,
                        scope.user_id,
                        scope.agent_id,
                        scope.task_id,
                        session_id,
                        message.role,
                        message.content,
                        json_or_none(message.metadata),
                        message.recorded_ms,
                        message.message_ms,
                    ),
                )
                con.execute(
                    "INSERT INTO l0_fts (rowid, words, grams, context) VALUES (?, ?, ?, ?)",
                    (cur.lastrowid, *text, context),
                )
                rowids.append(cur.lastrowid)
            # The session's previous newest messages gain neighbours after them.
            refresh_context(con, [rowid for rowid, _ in tail[-CONTEXT_AFTER:]] if CONTEXT_AFTER else [])
            self._enqueue(con, "l0", rowids)
            rounds = sum(m.role == "user" for m in messages)
            note_session_activity(con, scope, session_id, rowids[-1], rounds, now_ms())
            ids = [m.id for m in messages]
            if idempotency_key is not None:
                con.execute(
                    "INSERT INTO l0_idempotency (scope_key, key, request_hash, ids_json, created_ms) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, idempotency_key, request_hash or "", json.dumps(ids), now_ms()),
                )
        return ids, None

    @staticmethod
    def _message_where(scope: MemoryScope, flt: MessageFilter, alias: str = "") -> tuple[str, list[Any]]:
        p = f"{alias}." if alias else ""
        clauses = [f"{p}scope_key = ?"]
        params: list[Any] = [scope.key]
        if flt.session_id is not None:
            clauses.append(f"{p}session_id = ?")
            params.append(flt.session_id)
        if flt.time_start_ms is not None:
            clauses.append(f"{p}recorded_ms >= ?")
            params.append(flt.time_start_ms)
        if flt.time_end_ms is not None:
            clauses.append(f"{p}recorded_ms <= ?")
            params.append(flt.time_end_ms)
        return " AND ".join(clauses), params

    @staticmethod
    def _message(row: sqlite3.Row) -> MessageRecord:
        return MessageRecord(
            id=row["id"],
            service_id=row["service_id"],
            team_id=row["team_id"],
            user_id=row["user_id"],
            agent_id=row["agent_id"],
            task_id=row["task_id"],
            session_id=row["session_id"],
            role=row["role"],
            content=row["content"],
            recorded_ms=row["recorded_ms"],
            message_ms=row["message_ms"],
            metadata=json.loads(row["metadata_json"]) if row["metadata_json"] else None,
        )

    def query_messages(
        self, scope: MemoryScope, flt: MessageFilter, limit: int, offset: int
    ) -> tuple[list[MessageRecord], int]:
        where, params = self._message_where(scope, flt)
        rows, total = self._page("l0_messages", where, params, "recorded_ms, rowid", limit, offset)
        return [self._message(r) for r in rows], total

    def count_messages(self, scope: MemoryScope, flt: MessageFilter) -> int:
        return self._count("l0_messages", *self._message_where(scope, flt))

    def search_messages(
        self, scope: MemoryScope, terms: QueryTerms, flt: MessageFilter, limit: int
    ) -> list[tuple[MessageRecord, float]]:
        where, params = self._message_where(scope, flt, alias="c")
        hits = _MESSAGES_FTS.search(
            self._reader(), scope.key, terms, where, params, limit, narrowed=flt != MessageFilter()
        )
        return [(self._message(row), rank_to_score(rank)) for row, rank in hits]

    def delete_messages(self, scope: MemoryScope, message_ids: Sequence[str], session_ids: Sequence[str]) -> int:
        key = scope.key
        deleted = 0
        with self._write() as con:
            rowids: list[int] = []
            for chunk in chunks(list(message_ids), 500):
                marks = ",".join("?" * len(chunk))
                rowids += [
                    r[0]
                    for r in con.execute(
                        f"SELECT rowid FROM l0_messages WHERE +scope_key = ? AND id IN ({marks})", [key, *chunk]
                    )
                ]
            for chunk in chunks(list(session_ids), 500):
                marks = ",".join("?" * len(chunk))
                rowids += [
                    r[0]
                    for r in con.execute(
                        f"SELECT rowid FROM l0_messages WHERE scope_key = ? AND session_id IN ({marks})",
                        [key, *chunk],
                    )
                ]
            doomed = sorted(set(rowids))
            survivors: list[int] = []
            for chunk in chunks(doomed, 500):
                marks = ",".join("?" * len(chunk))
                sessions = con.execute(
                    f"SELECT rowid, session_id FROM l0_messages WHERE rowid IN ({marks})", chunk
                ).fetchall()
                for rowid, session_id in sessions:
                    survivors += affected_by_delete(con, key, session_id, rowid)
            deleted = drop_rows(con, "l0_messages", "l0_fts", "l0", doomed)
            self._vectors["l0"].remove(con, key, doomed)
            gone = set(doomed)
            # Deleted words must not linger in a neighbour's context, nor in its vector.
            touched = [r for r in dict.fromkeys(survivors) if r not in gone]
            refresh_context(con, touched)
            self._reembed(con, "l0", key, touched)
        return deleted

    # -- vectors ---------------------------------------------------------------------------
    def _set_dim(self, dim: int) -> None:
        model_id = self._model.model_id if self._model else ""
        for vectors in self._vectors.values():
            vectors.dim = dim
            vectors.model_id = model_id

    def warm_vectors(self, limit: int) -> None:
        if self._warm_thread is not None or (limit <= 0 and not self._snapshot_policy.enabled):
            return
        self._warm_thread = threading.Thread(target=self._warm, args=(limit,), name="memhub-vector-warm", daemon=True)
        self._warm_thread.start()

    def wait_warm(self, timeout: float | None = None) -> bool:
        thread = self._warm_thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _warm(self, limit: int) -> None:
        """Load the indexes of the `limit` scopes whose vectors changed last (at the process's normal priority: a
        search that wants one of them waits for its load), then delete the snapshots no scope can use any more."""
        try:
            self._sync_model()
            con = self._reader()
            if self._model is None or limit <= 0:
                latest = []
            else:
                latest = con.execute(
                    "SELECT kind, scope_key FROM vector_epochs ORDER BY changed_ms DESC, epoch DESC LIMIT ?", (limit,)
                ).fetchall()
            for kind, scope_key in latest:
                vectors = self._vectors.get(kind)
                if self._closed:
                    return
                if vectors is not None:
                    vectors.index(con, scope_key)
            if self._snapshot_policy.enabled and not self._closed:
                vectors_of = self._vectors

                def epoch_of(kind: str, key: str) -> int:  # a kind this version does not know: kept
                    return vectors_of[kind].db_epoch(con, key) if kind in vectors_of else 0

                pruned = self._snapshots.prune(epoch_of)
                if pruned:
                    log.info("%d vector snapshots no scope can use any more deleted", pruned)
        except Exception:
            if not self._closed:  # closing under a load in progress is expected; anything else is not
                log.exception("loading the vector indexes of the latest scopes failed")

    def settle_vectors(self, timeout: float | None = None) -> bool:
        """Wait until the cached indexes' graph builds and the snapshot writes due within `timeout` are done (tests,
        benchmarks); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        while True:
            if not all(vectors.wait_ready(left()) for vectors in self._vectors.values()):
                return False
            if not self._snapshot_writer.wait_idle(left()):
                return False
            # A build that ended meanwhile has asked for a snapshot: done only when both are idle at once.
            if all(vectors.wait_ready(0) for vectors in self._vectors.values()) and self._snapshot_writer.wait_idle(0):
                return True

    def vector_loads(self) -> Counter[tuple[str, str]]:
        """How many indexes were loaded, by (kind, "snapshot" or "sql") (diagnostics, tests)."""
        counts: Counter[tuple[str, str]] = Counter()
        for kind, vectors in self._vectors.items():
            for source, n in vectors.loads.items():
                counts[(kind, source)] = n
        return counts

    def _sync_model(self) -> None:
        """Follow a model adopted or changed by another process (the cached indexes would be wrong)."""
        model = self.embedding_model()
        if model != self._model:
            for vectors in self._vectors.values():
                vectors.forget_all()
            self._model = model
            self._set_dim(model.dim if model else 0)

    @staticmethod
    def _enqueue(con: sqlite3.Connection, kind: EmbeddingKind, refs: Sequence[int]) -> None:
        # REPLACE gives a record already waiting a new seq, so a vector of its old text is dropped.
        con.executemany(
            "INSERT OR REPLACE INTO embedding_queue (kind, ref) VALUES (?, ?)", [(kind, ref) for ref in refs]
        )

    def _reembed(self, con: sqlite3.Connection, kind: EmbeddingKind, scope_key: str, refs: Sequence[int]) -> None:
        """The text behind these vectors changed: drop them (searches fall back to BM25) and queue anew."""
        if refs:
            self._vectors[kind].remove(con, scope_key, refs)
            self._enqueue(con, kind, refs)

    def embedding_model(self) -> EmbeddingModel | None:
        raw = self.get_setting(EMBEDDING_MODEL_SETTING)
        if raw is None:
            return None
        stored = json.loads(raw)
        return EmbeddingModel(model_id=stored["model_id"], dim=int(stored["dim"]))

    def reset_embeddings(self, model: EmbeddingModel) -> None:
        with self._write() as con:
            con.execute("DELETE FROM l0_vectors")
            con.execute("DELETE FROM l1_vectors")
            con.execute("DELETE FROM skill_vectors")
            con.execute("DELETE FROM embedding_queue")
            # Epochs keep counting up, so another process's cached indexes are seen to be stale.
            con.execute("UPDATE vector_epochs SET epoch = epoch + 1")
            con.execute("INSERT INTO embedding_queue (kind, ref) SELECT 'l0', rowid FROM l0_messages ORDER BY rowid")
            con.execute("INSERT INTO embedding_queue (kind, ref) SELECT 'l1', rowid FROM l1_atomic ORDER BY rowid")
            con.execute(
                "INSERT INTO embedding_queue (kind, ref) SELECT 'skill', rowid FROM skill_versions WHERE is_head = 1 "
                "ORDER BY rowid"
            )
            value = json.dumps({"model_id": model.model_id, "dim": model.dim})
            con.execute(
                "INSERT INTO instance_settings (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (EMBEDDING_MODEL_SETTING, value),
            )
            for vectors in self._vectors.values():
                vectors.forget_all()
            self._model = model
            self._set_dim(model.dim)
        # Every vector is gone (and every epoch moved on): no snapshot can match again.
        self._snapshots.delete_all()

    def embedding_backlog(self) -> int:
        return self._reader().execute("SELECT COUNT(*) FROM embedding_queue").fetchone()[0]

    def next_embedding_tasks(self, limit: int) -> list[EmbeddingTask]:
        con = self._reader()
        rows = con.execute("SELECT seq, kind, ref FROM embedding_queue ORDER BY seq LIMIT ?", (limit,)).fetchall()
        tasks: list[EmbeddingTask] = []
        for seq, kind, ref in rows:
            text = self._embedding_text(con, kind, ref)
            if text is not None:
                tasks.append(EmbeddingTask(kind=kind, ref=ref, seq=seq, text=text))
        return tasks

    @staticmethod
    def _embedding_text(con: sqlite3.Connection, kind: str, ref: int) -> str | None:
        if kind == "skill":
            # A skill is chosen by what it is for: its name and description, not its whole body.
            row = con.execute("SELECT name, description FROM skill_versions WHERE rowid = ?", (ref,)).fetchone()
            return None if row is None else f"{row[0]}\n{row[1]}"
        if kind == "l1":
            row = con.execute("SELECT content FROM l1_atomic WHERE rowid = ?", (ref,)).fetchone()
            return None if row is None else row[0]
        row = con.execute("SELECT scope_key, session_id, content FROM l0_messages WHERE rowid = ?", (ref,)).fetchone()
        if row is None:
            return None
        before = embedding_context(con, row[0], row[1], ref)
        return "\n".join([*before, row[2]])

    def store_embeddings(self, model: EmbeddingModel, tasks: Sequence[EmbeddingTask], vectors: np.ndarray) -> int:
        if vectors.shape != (len(tasks), model.dim):
            raise ValueError(f"vectors: expected shape ({len(tasks)}, {model.dim}), got {vectors.shape}")
        written = 0
        with self._write() as con:
            stored = con.execute(
                "SELECT value FROM instance_settings WHERE name = ?", (EMBEDDING_MODEL_SETTING,)
            ).fetchone()
            if stored is None or json.loads(stored[0]) != {"model_id": model.model_id, "dim": model.dim}:
                raise ValueError(f"vectors of {model.model_id} refused: the store holds another model's vectors")
            by_scope: dict[tuple[str, str], tuple[list[int], list[np.ndarray]]] = {}
            for task, vector in zip(tasks, vectors, strict=True):
                # Only the queue entry the task was read from counts: a newer one means newer text.
                if con.execute("DELETE FROM embedding_queue WHERE seq = ?", (task.seq,)).rowcount != 1:
                    continue
                table = self._vectors[task.kind].content_table
                row = con.execute(f"SELECT scope_key FROM {table} WHERE rowid = ?", (task.ref,)).fetchone()
                if row is None:
                    continue
                keys, vecs = by_scope.setdefault((task.kind, row[0]), ([], []))
                keys.append(task.ref)
                vecs.append(vector)
            for (kind, scope_key), (keys, vecs) in by_scope.items():
                self._vectors[kind].upsert(con, scope_key, keys, np.vstack(vecs).astype(np.float32))
                written += len(keys)
        return written

    def _allowed(self, table: str, where: str, params: Sequence[Any]) -> list[int]:
        return [r[0] for r in self._reader().execute(f"SELECT rowid FROM {table} WHERE {where}", params)]

    def _by_rowid(self, table: str, rowids: Sequence[int]) -> dict[int, sqlite3.Row]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._reader().execute(f"SELECT rowid, * FROM {table} WHERE rowid IN ({marks})", list(rowids))
        return {r["rowid"]: r for r in rows}

    def vector_search_messages(
        self, scope: MemoryScope, vector: np.ndarray, flt: MessageFilter, limit: int
    ) -> list[tuple[MessageRecord, float]]:
        self._sync_model()
        allowed = None
        if flt != MessageFilter():
            allowed = self._allowed("l0_messages", *self._message_where(scope, flt))
        hits = self._vectors["l0"].search(self._reader(), scope.key, vector, limit, allowed)
        rows = self._by_rowid("l0_messages", [k for k, _ in hits])
        return [(self._message(rows[k]), s) for k, s in hits if k in rows and rows[k]["scope_key"] == scope.key]

    def vector_search_atomic(
        self, scope: MemoryScope, vector: np.ndarray, flt: AtomicFilter, limit: int
    ) -> list[tuple[AtomicRecord, float]]:
        self._sync_model()
        allowed = None
        if flt != AtomicFilter():
            allowed = self._allowed("l1_atomic", *self._atomic_where(scope, flt))
        hits = self._vectors["l1"].search(self._reader(), scope.key, vector, limit, allowed)
        rows = self._by_rowid("l1_atomic", [k for k, _ in hits])
        return [(self._atomic(rows[k]), s) for k, s in hits if k in rows and rows[k]["scope_key"] == scope.key]

    def _similarities(
        self, kind: EmbeddingKind, table: str, scope: MemoryScope, vector: np.ndarray, ids: Sequence[str]
    ) -> dict[str, float]:
        if not ids:
            return {}
        self._sync_model()
        marks = ",".join("?" * len(ids))
        rows = self._reader().execute(
            f"SELECT rowid, id FROM {table} WHERE +scope_key = ? AND id IN ({marks})", [scope.key, *ids]
        )
        by_rowid = {r[0]: r[1] for r in rows}
        hits = self._vectors[kind].search(self._reader(), scope.key, vector, len(by_rowid), list(by_rowid))
        return {by_rowid[k]: s for k, s in hits if k in by_rowid}

    def message_similarities(self, scope: MemoryScope, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        return self._similarities("l0", "l0_messages", scope, vector, ids)

    def atomic_similarities(self, scope: MemoryScope, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        return self._similarities("l1", "l1_atomic", scope, vector, ids)

    # -- L2 / L3 -------------------------------------------------------------------------
    @staticmethod
    def _document(row: sqlite3.Row) -> DocumentRecord:
        return DocumentRecord(
            service_id=row["service_id"],
            team_id=row["team_id"],
            agent_id=row["agent_id"],
            user_id=row["user_id"],
            kind=row["kind"],
            path=row["path"],
            content=row["content"],
            summary=row["summary"],
            version=row["version"],
            content_md5=row["content_md5"],
            created_ms=row["created_ms"],
            updated_ms=row["updated_ms"],
        )

    def get_document(self, scope: ProfileScope, kind: DocumentKind, path: str) -> DocumentRecord | None:
        row = (
            self._reader()
            .execute(
                "SELECT * FROM profile_documents WHERE scope_key = ? AND kind = ? AND path = ?",
                (scope.key, kind, path),
            )
            .fetchone()
        )
        return None if row is None else self._document(row)

    def list_documents(self, scope: ProfileScope, kind: DocumentKind, path_prefix: str = "") -> list[DocumentRecord]:
        rows = (
            self._reader()
            .execute(
                "SELECT * FROM profile_documents WHERE scope_key = ? AND kind = ? AND substr(path, 1, ?) = ? "
                "ORDER BY path",
                (scope.key, kind, len(path_prefix), path_prefix),
            )
            .fetchall()
        )
        return [self._document(r) for r in rows]

    def put_document(
        self, doc: DocumentRecord, audit: AuditContext, *, expect_exists: bool | None
    ) -> DocumentRecord | None:
        scope = ProfileScope(doc.service_id, doc.team_id, doc.agent_id, doc.user_id)
        with self._write() as con:
            exists = con.execute(
                "SELECT 1 FROM profile_documents WHERE scope_key = ? AND kind = ? AND path = ?",
                (scope.key, doc.kind, doc.path),
            ).fetchone()
            if (expect_exists is True and not exists) or (expect_exists is False and exists):
                return None
            con.execute(
                "INSERT INTO profile_documents (scope_key, service_id, team_id, agent_id, user_id, kind, path, "
                "content, summary, version, content_md5, created_ms, updated_ms) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (scope_key, kind, path) DO UPDATE SET content = excluded.content, "
                "summary = excluded.summary, version = excluded.version, content_md5 = excluded.content_md5, "
                "updated_ms = excluded.updated_ms",
                (
                    scope.key,
                    doc.service_id,
                    doc.team_id,
                    doc.agent_id,
                    doc.user_id,
                    doc.kind,
                    doc.path,
                    doc.content,
                    doc.summary,
                    doc.version,
                    doc.content_md5,
                    doc.created_ms,
                    doc.updated_ms,
                ),
            )
            layer = "L2" if doc.kind == "scene" else "L3"
            self._audit(con, doc.service_id, doc.path, layer, "write", doc.version, doc.updated_ms, audit)
        return doc

    def delete_documents(
        self,
        scope: ProfileScope,
        kind: DocumentKind,
        paths: Sequence[str],
        prefixes: Sequence[str],
        audit: AuditContext,
    ) -> list[str]:
        stamp = now_ms()
        deleted: list[str] = []
        with self._write() as con:
            rows = [
                con.execute(
                    "SELECT path, version FROM profile_documents WHERE scope_key = ? AND kind = ? AND path = ?",
                    (scope.key, kind, path),
                ).fetchone()
                for path in paths
            ]
            for prefix in prefixes:
                rows += con.execute(
                    "SELECT path, version FROM profile_documents WHERE scope_key = ? AND kind = ? "
                    "AND substr(path, 1, ?) = ?",
                    (scope.key, kind, len(prefix), prefix),
                ).fetchall()
            seen: set[str] = set()
            layer = "L2" if kind == "scene" else "L3"
            for row in rows:
                if row is None or row["path"] in seen:
                    continue
                seen.add(row["path"])
                con.execute(
                    "DELETE FROM profile_documents WHERE scope_key = ? AND kind = ? AND path = ?",
                    (scope.key, kind, row["path"]),
                )
                self._audit(con, scope.service_id, row["path"], layer, "rm", row["version"], stamp, audit)
                deleted.append(row["path"])
        return deleted

    # -- audit ---------------------------------------------------------------------------
    @staticmethod
    def _audit(
        con: sqlite3.Connection,
        service_id: str,
        record_id: str,
        layer: str,
        action: str,
        version: int | None,
        at_ms: int,
        ctx: AuditContext,
    ) -> None:
        con.execute(
            "INSERT INTO memory_audit (audit_id, service_id, record_id, layer, action, team_id, agent_id, "
            "user_id, task_id, version, updated_at_ms, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                audit_id(),
                service_id,
                record_id,
                layer,
                action,
                ctx.team_id,
                ctx.agent_id,
                ctx.user_id,
                ctx.task_id,
                version,
                at_ms,
                ctx.request_id,
            ),
        )

    def list_audit(self, service_id: str, limit: int = 100) -> list[dict[str, object]]:
        rows = (
            self._reader()
            .execute(
                "SELECT * FROM memory_audit WHERE service_id = ? ORDER BY updated_at_ms DESC, rowid DESC LIMIT ?",
                (service_id, limit),
            )
            .fetchall()
        )
        return [dict(r) for r in rows]
