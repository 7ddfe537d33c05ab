"""SQLite implementation of the management-plane store (memhub.store.meta)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from memhub.model.meta import ID_FIELD, DuplicateEntry, MetaKind, Row, Where
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

TABLES: dict[MetaKind, str] = {
    MetaKind.USER: "meta_users",
    MetaKind.USER_KEY: "meta_user_keys",
    MetaKind.TEAM: "meta_teams",
    MetaKind.MEMBER: "meta_team_members",
    MetaKind.AGENT: "meta_agents",
    MetaKind.TASK: "meta_tasks",
    MetaKind.TASK_AGENT: "meta_task_agents",
    MetaKind.PARTICIPATION: "meta_participation_logs",
    MetaKind.ASSET: "meta_assets",
    MetaKind.FIXED_ASSET: "meta_agent_fixed_assets",
    MetaKind.ACL: "meta_asset_acl",
    MetaKind.CONFIG: "meta_config_params",
    MetaKind.KNOWLEDGE: "knowledge_registry",
    MetaKind.WIKI: "knowledge_wikis",
    MetaKind.WIKI_SOURCE: "wiki_sources",
    MetaKind.CODE_GRAPH: "knowledge_code_graphs",
    MetaKind.AUDIT: "meta_audit",
}
# SQLite has no boolean type: these columns are stored as 0/1 and read back as bools.
BOOLEAN_FIELDS = {"is_default", "auto_assign_floating_assets"}
_OPERATORS = {"=", "!=", "<", "<=", ">", ">="}
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _column(name: str) -> str:
    # Field names come from service code, never from a request; checked anyway so no text reaches SQL.
    if not _NAME.match(name):
        raise ValueError(f"not a field name: {name!r}")
    return name


def _where_sql(service_id: str, where: Where | None) -> tuple[str, list[Any]]:
    clauses, params = ["service_id = ?"], [service_id]
    for key, value in (where or {}).items():
        name, _, op = key.partition(" ")
        op = op.strip() or "="
        if op not in _OPERATORS:
            raise ValueError(f"unknown operator {op!r}")
        column = _column(name)
        if isinstance(value, list | tuple | set | frozenset):
            values = list(value)
            if not values:
                clauses.append("0" if op == "=" else "1")
                continue
            keyword = "IN" if op == "=" else "NOT IN"
            clauses.append(f"{column} {keyword} ({', '.join('?' * len(values))})")
            params.extend(values)
        elif value is None:
            clauses.append(f"{column} IS NULL" if op == "=" else f"{column} IS NOT NULL")
        else:
            clauses.append(f"{column} {op} ?")
            params.append(int(value) if isinstance(value, bool) else value)
    return " AND ".join(clauses), params


def _order_sql(order_by: Sequence[str]) -> str:
    parts = [f"{_column(f.lstrip('-'))} {'DESC' if f.startswith('-') else 'ASC'}" for f in order_by]
    return (" ORDER BY " + ", ".join(parts)) if parts else ""


def _rows(cursor: sqlite3.Cursor) -> list[Row]:
    names = [d[0] for d in cursor.description]
    booleans = [i for i, name in enumerate(names) if name in BOOLEAN_FIELDS]
    out = []
    for values in cursor:
        row = dict(zip(names, values, strict=True))
        del row["service_id"]  # the tenant is implied by the reader
        for i in booleans:
            row[names[i]] = bool(values[i])
        out.append(row)
    return out


class _SQLiteMetaReader(MetaReader):
    def __init__(self, con: sqlite3.Connection, service_id: str) -> None:
        self.con = con
        self.service_id = service_id

    def get(self, kind: MetaKind, entity_id: str) -> Row | None:
        rows = self.find(kind, {ID_FIELD[kind]: entity_id}, limit=1)
        return rows[0] if rows else None

    def find(
        self,
        kind: MetaKind,
        where: Where | None = None,
        *,
        order_by: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Row]:
        clause, params = _where_sql(self.service_id, where)
        sql = f"SELECT * FROM {TABLES[kind]} WHERE {clause}{_order_sql(order_by)}"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return _rows(self.con.execute(sql, params))

    def count(self, kind: MetaKind, where: Where | None = None) -> int:
        clause, params = _where_sql(self.service_id, where)
        return self.con.execute(f"SELECT COUNT(*) FROM {TABLES[kind]} WHERE {clause}", params).fetchone()[0]


class _SQLiteMetaWriter(_SQLiteMetaReader, MetaWriter):
    def insert(self, kind: MetaKind, row: Row) -> None:
        values = {**row, "service_id": self.service_id}
        columns = [_column(c) for c in values]
        sql = f"INSERT INTO {TABLES[kind]} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        try:
            self.con.execute(sql, [int(v) if isinstance(v, bool) else v for v in values.values()])
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc) or "PRIMARY KEY" in str(exc):
                raise DuplicateEntry(kind, str(exc)) from exc
            raise

    def update(self, kind: MetaKind, entity_id: str, changes: Row) -> bool:
        if not changes:
            return self.get(kind, entity_id) is not None
        sets = ", ".join(f"{_column(c)} = ?" for c in changes)
        params = [int(v) if isinstance(v, bool) else v for v in changes.values()]
        sql = f"UPDATE {TABLES[kind]} SET {sets} WHERE service_id = ? AND {ID_FIELD[kind]} = ?"
        try:
            cursor = self.con.execute(sql, [*params, self.service_id, entity_id])
        except sqlite3.IntegrityError as exc:
            raise DuplicateEntry(kind, str(exc)) from exc
        return cursor.rowcount > 0

    def delete(self, kind: MetaKind, where: Where) -> int:
        if not where:
            raise ValueError("refusing to delete every row of a kind")
        clause, params = _where_sql(self.service_id, where)
        return self.con.execute(f"DELETE FROM {TABLES[kind]} WHERE {clause}", params).rowcount


def meta_writer_on(con: sqlite3.Connection, service_id: str) -> MetaWriter:
    """A meta writer inside a write transaction another store opened on the same database (one commit for both)."""
    return _SQLiteMetaWriter(con, service_id)


class SQLiteMetaStore(MetaStore):
    """Shares the memory store's connections: one database file, one writer lock."""

    def __init__(
        self,
        reader: Callable[[], sqlite3.Connection],
        write: Callable[[], AbstractContextManager[sqlite3.Connection]],
    ) -> None:
        self._reader = reader
        self._write = write

    @contextmanager
    def reading(self, service_id: str) -> Iterator[MetaReader]:
        con = self._reader()
        con.execute("BEGIN")  # one snapshot: a page and its total agree while writers commit
        try:
            yield _SQLiteMetaReader(con, service_id)
        finally:
            con.execute("COMMIT")

    @contextmanager
    def writing(self, service_id: str) -> Iterator[MetaWriter]:
        with self._write() as con:
            yield _SQLiteMetaWriter(con, service_id)
