"""SQLite implementation of memhub.store.skills on the memory store's connections (migration 13 tables).

Every write runs in the store's write transaction (BEGIN IMMEDIATE under the process's write lock), so the
compare-and-set of `expected_version` against the head and the write it guards are one step: of two writers
holding the same version, the second finds the first one's head and gets VersionStale.

A head carries the search channels: its full-text row and its vector are keyed by its rowid. A write that
makes a new head moves them; the old head, now a plain version, is in neither.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, get_args

from memhub.model.skills import (
    BlobMissing,
    IdTaken,
    NameTaken,
    NewSkillVersion,
    SkillFilter,
    SkillHeadline,
    SkillMissing,
    SkillStatus,
    SkillVersion,
    VersionStale,
)
from memhub.store.meta import MetaWriter
from memhub.store.skills import SkillStore
from memhub.store.sqlite.meta import meta_writer_on
from memhub.store.sqlite.skill_mining import SkillMining
from memhub.store.sqlite.skill_rows import dumps, fts_columns, heads_where, vector_scope, versions_of
from memhub.store.sqlite.skill_search import SkillSearch
from memhub.store.sqlite.vectors import from_blobs

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore


class SQLiteSkillStore(SkillSearch, SkillMining, SkillStore):
    """Skills in the memory store's database file."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """The thread's reader inside one read transaction: a version and its manifest agree."""
        con = self.store._reader()
        con.execute("BEGIN")
        try:
            yield con
        finally:
            con.execute("COMMIT")

    # -- writes ----------------------------------------------------------------------------------
    def create(self, service_id: str, skill_id: str, new: NewSkillVersion, now_ms: int) -> SkillVersion:
        indexed = fts_columns(service_id, new.name, new.description, new.content)
        with self.store._write() as con:
            if con.execute(
                "SELECT 1 FROM skill_versions WHERE service_id = ? AND skill_id = ? LIMIT 1", (service_id, skill_id)
            ).fetchone():
                raise IdTaken(skill_id)
            self._check_name(con, service_id, skill_id, new)
            self._store_blobs(con, service_id, new)
            rowid = self._insert_version(con, service_id, skill_id, 1, new, now_ms)
            self._index_head(con, service_id, rowid, indexed, None, new)
            return self._read_rowid(con, rowid)

    def append(
        self, service_id: str, skill_id: str, expected_version: int, new: NewSkillVersion, now_ms: int
    ) -> SkillVersion:
        indexed = fts_columns(service_id, new.name, new.description, new.content)
        with self.store._write() as con:
            head = self._head_at(con, service_id, skill_id, expected_version)
            self._check_name(con, service_id, skill_id, new)
            self._store_blobs(con, service_id, new)
            con.execute("UPDATE skill_versions SET is_head = 0 WHERE rowid = ?", (head["rowid"],))
            rowid = self._insert_version(con, service_id, skill_id, head["version"] + 1, new, now_ms)
            self._index_head(con, service_id, rowid, indexed, head, new)
            return self._read_rowid(con, rowid)

    def set_status(
        self,
        service_id: str,
        skill_id: str,
        expected_version: int,
        status: str,
        now_ms: int,
        *,
        alongside: Callable[[MetaWriter], None] | None = None,
    ) -> SkillVersion:
        if status not in get_args(SkillStatus):
            raise ValueError(f"status: must be one of {', '.join(get_args(SkillStatus))}, got {status!r}")
        with self.store._write() as con:
            head = self._head_at(con, service_id, skill_id, expected_version)
            if status != "archived":
                taken = self._name_taken(
                    con, service_id, head["team_id"], head["owner_agent_id"], head["name"], skill_id
                )
                if taken is not None:
                    raise NameTaken(taken)
            con.execute(
                "UPDATE skill_versions SET status = ?, updated_ms = ? WHERE rowid = ?", (status, now_ms, head["rowid"])
            )
            if alongside is not None:
                alongside(meta_writer_on(con, service_id))  # the meta tables live in the same database file
            return self._read_rowid(con, head["rowid"])

    def delete(self, service_id: str, skill_id: str, expected_version: int) -> int:
        with self.store._write() as con:
            head = self._head_at(con, service_id, skill_id, expected_version)
            self._unindex_head(con, head)
            rowids = [
                r[0]
                for r in con.execute(
                    "SELECT rowid FROM skill_versions WHERE service_id = ? AND skill_id = ?", (service_id, skill_id)
                )
            ]
            hashes = self._hashes(con, "service_id = ? AND skill_id = ?", (service_id, skill_id))
            con.execute(
                "DELETE FROM embedding_queue WHERE kind = 'skill' AND ref IN (SELECT value FROM json_each(?))",
                (dumps(rowids),),
            )
            con.execute("DELETE FROM skill_files WHERE service_id = ? AND skill_id = ?", (service_id, skill_id))
            removed = con.execute(
                "DELETE FROM skill_versions WHERE service_id = ? AND skill_id = ?", (service_id, skill_id)
            ).rowcount
            self._drop_unused_blobs(con, service_id, hashes)
            return removed

    def purge_versions(self, service_id: str, skill_id: str, created_before_ms: int) -> int:
        with self.store._write() as con:
            old = "service_id = ? AND skill_id = ? AND is_head = 0 AND created_ms < ?"
            params_old = (service_id, skill_id, created_before_ms)
            versions = [r[0] for r in con.execute(f"SELECT version FROM skill_versions WHERE {old}", params_old)]
            if not versions:
                return 0
            of_versions = "service_id = ? AND skill_id = ? AND version IN (SELECT value FROM json_each(?))"
            params = (service_id, skill_id, dumps(versions))
            hashes = self._hashes(con, of_versions, params)
            con.execute(f"DELETE FROM skill_files WHERE {of_versions}", params)
            removed = con.execute(f"DELETE FROM skill_versions WHERE {of_versions}", params).rowcount
            self._drop_unused_blobs(con, service_id, hashes)
            return removed

    # -- write steps (inside the transaction) ------------------------------------------------------
    @staticmethod
    def _head_at(con: sqlite3.Connection, service_id: str, skill_id: str, expected_version: int) -> sqlite3.Row:
        head = con.execute(
            "SELECT * FROM skill_versions WHERE service_id = ? AND skill_id = ? AND is_head = 1",
            (service_id, skill_id),
        ).fetchone()
        if head is None:
            raise SkillMissing(skill_id)
        if head["version"] != expected_version:
            raise VersionStale(head["version"])
        return head

    @staticmethod
    def _name_taken(
        con: sqlite3.Connection, service_id: str, team_id: str, owner_agent_id: str, name: str, skill_id: str
    ) -> str | None:
        """The other skill whose live head has this name under the team's owner agent, if any."""
        row = con.execute(
            "SELECT skill_id FROM skill_versions WHERE service_id = ? AND team_id = ? AND owner_agent_id = ? "
            "AND name = ? AND is_head = 1 AND status != 'archived' AND skill_id != ?",
            (service_id, team_id, owner_agent_id, name, skill_id),
        ).fetchone()
        return None if row is None else row[0]

    def _check_name(self, con: sqlite3.Connection, service_id: str, skill_id: str, new: NewSkillVersion) -> None:
        if new.status == "archived":
            return
        taken = self._name_taken(con, service_id, new.team_id, new.owner_agent_id, new.name, skill_id)
        if taken is not None:
            raise NameTaken(taken)

    @staticmethod
    def _store_blobs(con: sqlite3.Connection, service_id: str, new: NewSkillVersion) -> None:
        """The bytes of every file of the manifest: kept once per tenant, refused when neither given nor stored."""
        paths = [f.path for f in new.files]
        if len(set(paths)) != len(paths):
            raise ValueError("files: a path is listed twice in one version")
        for file in {f.sha256: f for f in new.files}.values():
            data = new.blobs.get(file.sha256)
            if data is not None:
                if hashlib.sha256(data).hexdigest() != file.sha256 or len(data) != file.size_bytes:
                    raise ValueError(f"files: the bytes of {file.path} do not match its sha256 and size")
                con.execute(
                    "INSERT OR IGNORE INTO skill_blobs (service_id, sha256, size_bytes, data) VALUES (?, ?, ?, ?)",
                    (service_id, file.sha256, len(data), data),
                )
                continue
            row = con.execute(
                "SELECT size_bytes FROM skill_blobs WHERE service_id = ? AND sha256 = ?", (service_id, file.sha256)
            ).fetchone()
            if row is None:
                raise BlobMissing(file.sha256)
            if row[0] != file.size_bytes:
                raise ValueError(f"files: {file.path} is {row[0]} bytes, not {file.size_bytes}")

    @staticmethod
    def _insert_version(
        con: sqlite3.Connection, service_id: str, skill_id: str, version: int, new: NewSkillVersion, now_ms: int
    ) -> int:
        cur = con.execute(
            "INSERT INTO skill_versions (service_id, skill_id, version, is_head, status, scope_key, team_id, "
            "owner_agent_id, user_id, task_id, name, description, content, content_hash, metadata_json, "
            "created_ms, updated_ms) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                service_id,
                skill_id,
                version,
                new.status,
                vector_scope(service_id, new.team_id),
                new.team_id,
                new.owner_agent_id,
                new.user_id,
                new.task_id,
                new.name,
                new.description,
                new.content,
                new.content_hash,
                dumps(dict(new.metadata)),
                now_ms,
                now_ms,
            ),
        )
        con.executemany(
            "INSERT INTO skill_files (service_id, skill_id, version, path, sha256, size_bytes, mime_type, "
            "is_executable) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (service_id, skill_id, version, f.path, f.sha256, f.size_bytes, f.mime_type, int(f.is_executable))
                for f in new.files
            ],
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _index_head(
        self,
        con: sqlite3.Connection,
        service_id: str,
        rowid: int,
        indexed: tuple[str, str],
        old: sqlite3.Row | None,
        new: NewSkillVersion,
    ) -> None:
        """Give the new head the full-text row and a vector, taking them from the old head."""
        con.execute("INSERT INTO skill_fts (rowid, words, grams) VALUES (?, ?, ?)", (rowid, *indexed))
        kept = None
        if old is not None and (old["name"], old["description"]) == (new.name, new.description):
            # The embedded text (name and description) is unchanged: the vector moves, nothing is re-embedded.
            waiting = con.execute(
                "SELECT 1 FROM embedding_queue WHERE kind = 'skill' AND ref = ?", (old["rowid"],)
            ).fetchone()
            if waiting is None:
                kept = con.execute("SELECT vector FROM skill_vectors WHERE rowid = ?", (old["rowid"],)).fetchone()
        if old is not None:
            self._unindex_head(con, old)
        if kept is not None:
            vector = from_blobs([kept[0]], len(kept[0]) // 4)
            self.store._vectors["skill"].upsert(con, vector_scope(service_id, new.team_id), [rowid], vector)
        else:
            self.store._enqueue(con, "skill", [rowid])

    def _unindex_head(self, con: sqlite3.Connection, head: sqlite3.Row) -> None:
        con.execute("DELETE FROM skill_fts WHERE rowid = ?", (head["rowid"],))
        con.execute("DELETE FROM embedding_queue WHERE kind = 'skill' AND ref = ?", (head["rowid"],))
        self.store._vectors["skill"].remove(con, head["scope_key"], [head["rowid"]])

    @staticmethod
    def _hashes(con: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[str]:
        return [r[0] for r in con.execute(f"SELECT DISTINCT sha256 FROM skill_files WHERE {where}", params)]

    @staticmethod
    def _drop_unused_blobs(con: sqlite3.Connection, service_id: str, hashes: list[str]) -> None:
        """Delete the blobs among `hashes` that no version of any skill of the tenant lists any more."""
        con.execute(
            "DELETE FROM skill_blobs WHERE service_id = ? AND sha256 IN (SELECT value FROM json_each(?)) "
            "AND NOT EXISTS (SELECT 1 FROM skill_files f WHERE f.service_id = skill_blobs.service_id "
            "AND f.sha256 = skill_blobs.sha256)",
            (service_id, dumps(hashes)),
        )

    @staticmethod
    def _read_rowid(con: sqlite3.Connection, rowid: int) -> SkillVersion:
        row = con.execute("SELECT * FROM skill_versions WHERE rowid = ?", (rowid,)).fetchone()
        return versions_of(con, [row])[0]

    # -- reads -------------------------------------------------------------------------------------
    def _one(self, where: str, params: tuple[Any, ...]) -> SkillVersion | None:
        with self._snapshot() as con:
            row = con.execute(f"SELECT * FROM skill_versions WHERE {where}", params).fetchone()
            return None if row is None else versions_of(con, [row])[0]

    def head(self, service_id: str, skill_id: str) -> SkillVersion | None:
        return self._one("service_id = ? AND skill_id = ? AND is_head = 1", (service_id, skill_id))

    def version(self, service_id: str, skill_id: str, version: int) -> SkillVersion | None:
        return self._one("service_id = ? AND skill_id = ? AND version = ?", (service_id, skill_id, version))

    def versions(self, service_id: str, skill_id: str, limit: int, offset: int) -> tuple[list[SkillVersion], int]:
        with self._snapshot() as con:
            of_skill = "service_id = ? AND skill_id = ?"
            total = con.execute(f"SELECT COUNT(*) FROM skill_versions WHERE {of_skill}", (service_id, skill_id))
            count = total.fetchone()[0]
            rows = con.execute(
                f"SELECT * FROM skill_versions WHERE {of_skill} ORDER BY version DESC LIMIT ? OFFSET ?",
                (service_id, skill_id, limit, offset),
            ).fetchall()
            return versions_of(con, rows), count

    def head_by_name(self, service_id: str, team_id: str, owner_agent_id: str, name: str) -> SkillVersion | None:
        return self._one(
            "service_id = ? AND team_id = ? AND owner_agent_id = ? AND name = ? AND is_head = 1 "
            "AND status != 'archived'",
            (service_id, team_id, owner_agent_id, name),
        )

    def list_heads(self, service_id: str, flt: SkillFilter, limit: int, offset: int) -> tuple[list[SkillVersion], int]:
        where, params = heads_where(service_id, flt)
        with self._snapshot() as con:
            total = con.execute(f"SELECT COUNT(*) FROM skill_versions c WHERE {where}", params).fetchone()[0]
            rows = con.execute(
                f"SELECT c.* FROM skill_versions c WHERE {where} ORDER BY c.updated_ms DESC, c.rowid DESC "
                "LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
            return versions_of(con, rows), total

    def headlines(self, service_id: str, flt: SkillFilter, limit: int) -> tuple[list[SkillHeadline], int]:
        where, params = heads_where(service_id, flt)
        with self._snapshot() as con:
            total = con.execute(f"SELECT COUNT(*) FROM skill_versions c WHERE {where}", params).fetchone()[0]
            rows = con.execute(
                "SELECT c.skill_id, c.version, c.name, c.description, c.owner_agent_id, c.updated_ms, c.user_id "
                f"FROM skill_versions c WHERE {where} ORDER BY c.updated_ms DESC, c.rowid DESC LIMIT ?",
                [*params, limit],
            ).fetchall()
        return [SkillHeadline(*row) for row in rows], total

    def head_ids(self, service_id: str, flt: SkillFilter, limit: int) -> list[str]:
        where, params = heads_where(service_id, flt)
        sql = f"SELECT c.skill_id FROM skill_versions c WHERE {where} ORDER BY c.updated_ms DESC, c.rowid DESC LIMIT ?"
        return [row[0] for row in self.store._reader().execute(sql, [*params, limit]).fetchall()]

    def read_blob(self, service_id: str, sha256: str) -> bytes | None:
        row = (
            self.store._reader()
            .execute("SELECT data FROM skill_blobs WHERE service_id = ? AND sha256 = ?", (service_id, sha256))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def blob_usage(self, service_id: str) -> tuple[int, int]:
        sql = "SELECT COUNT(*), COALESCE(SUM(size_bytes), 0) FROM skill_blobs WHERE service_id = ?"
        row = self.store._reader().execute(sql, (service_id,)).fetchone()
        return int(row[0]), int(row[1])
