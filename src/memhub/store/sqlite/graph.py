"""SQLite implementation of the code-graph store: one database file per graph generation.

A build copies the previous generation's file (SQLite's online backup), applies its changes and
commits; the service then points the graph at the new file, so readers never see a half-written
graph. Closures are recursive CTEs with a depth cap; FTS5 indexes names, qualified names and docs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memhub.model.graph import Direction, Edge, FileFacts, FileRecord, Reached, Symbol, Unresolved
from memhub.model.graph_codec import decode_facts
from memhub.store.graph import GraphWriter

SCHEMA = """
    CREATE TABLE IF NOT EXISTS files (
        path TEXT PRIMARY KEY, language TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
        parse_errors INTEGER NOT NULL, facts_json TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS symbols (
        qname TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,
        col INTEGER NOT NULL, end_line INTEGER NOT NULL, parent TEXT, doc TEXT NOT NULL, signature TEXT NOT NULL,
        bases_json TEXT NOT NULL, flavor TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX IF NOT EXISTS symbols_by_name ON symbols (name);
    CREATE INDEX IF NOT EXISTS symbols_by_file ON symbols (file, line);
    CREATE TABLE IF NOT EXISTS edges (
        src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, file TEXT NOT NULL, line INTEGER NOT NULL,
        col INTEGER NOT NULL, resolution TEXT NOT NULL, confidence REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS edges_by_dst ON edges (dst, kind);
    CREATE INDEX IF NOT EXISTS edges_by_src ON edges (src, kind);
    CREATE TABLE IF NOT EXISTS unresolved (
        id INTEGER PRIMARY KEY, src TEXT NOT NULL, target TEXT NOT NULL, kind TEXT NOT NULL, file TEXT NOT NULL,
        line INTEGER NOT NULL, candidates_json TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS unresolved_by_src ON unresolved (src);
    -- Which unresolved references name a symbol as a candidate: "who might call X" without a scan.
    CREATE TABLE IF NOT EXISTS unresolved_candidates (unresolved_id INTEGER NOT NULL, qname TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS unresolved_by_candidate ON unresolved_candidates (qname);
    CREATE VIRTUAL TABLE IF NOT EXISTS symbols_fts USING fts5(
        qname UNINDEXED, name, path, doc, tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_SYMBOL_COLUMNS = "qname, kind, name, file, line, col, end_line, parent, doc, signature, bases_json, flavor"
# What a generation holds changes with the extractors and the resolver (new edge kinds, new fields): a
# previous generation of another format is rebuilt from the sources, never patched.
GRAPH_FORMAT = 2


def _facts_from(record: sqlite3.Row) -> FileFacts:
    return decode_facts(record["path"], record["language"], record["parse_errors"], record["facts_json"])


def _symbol(row: sqlite3.Row) -> Symbol:
    return Symbol(
        row["kind"],
        row["name"],
        row["qname"],
        row["file"],
        row["line"],
        row["col"],
        row["end_line"],
        row["parent"],
        row["doc"],
        row["signature"],
        tuple(json.loads(row["bases_json"])),
        row["flavor"],
    )


def _edge(row: sqlite3.Row) -> Edge:
    return Edge(
        row["src"], row["dst"], row["kind"], row["file"], row["line"], row["col"], row["resolution"], row["confidence"]
    )


def _unresolved(row: sqlite3.Row) -> Unresolved:
    return Unresolved(
        row["src"], row["target"], row["kind"], row["file"], row["line"], tuple(json.loads(row["candidates_json"]))
    )


def _fts_query(query: str) -> str:
    # Words OR-ed, as prefixes from 4 characters on (`payl` finds `payload`); shorter words only whole,
    # because a prefix like `get` matches a large part of any code base and costs tens of milliseconds.
    words = [w for w in "".join(c if c.isalnum() or c == "_" else " " for c in query).split() if w]
    return " OR ".join(f'"{w}"*' if len(w) >= 4 else f'"{w}"' for w in words[:16])


def _readonly_uri(path: Path) -> str:
    # as_uri() %-encodes the path: a tenant directory name holds '%' (memhub.knowledge.storage),
    # which a hand-built `file:` URI would hand to SQLite to decode.
    return path.absolute().as_uri() + "?mode=ro"


class SQLiteGraph(GraphWriter):
    """One generation's database file; `copy_from` starts a generation from the previous one."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        if readonly:
            self.con = sqlite3.connect(_readonly_uri(path), uri=True, check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.con = sqlite3.connect(path, check_same_thread=False)
            self.con.executescript(SCHEMA)
        self.con.row_factory = sqlite3.Row
        self._upgrade()

    def _upgrade(self) -> None:
        """A generation written before symbols had a flavor still answers (and is rebuilt at its next sync)."""
        columns = {row[1] for row in self.con.execute("PRAGMA main.table_info(symbols)")}
        if "flavor" in columns or not columns:
            return
        # A read-only file cannot be altered; a temporary view of the same name shadows the table instead.
        self.con.execute("CREATE TEMP VIEW symbols AS SELECT *, '' AS flavor FROM main.symbols")

    @classmethod
    def copy_from(cls, previous: Path, path: Path) -> SQLiteGraph:
        """A new writable generation holding everything the previous one held."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        source = sqlite3.connect(_readonly_uri(previous), uri=True)
        target = sqlite3.connect(path)
        try:
            source.backup(target)
        finally:
            source.close()
            target.close()
        return cls(path)

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    # -- writing ----------------------------------------------------------------------------------------

    def put_files(self, records: Sequence[tuple[FileRecord, str]]) -> None:
        self.con.executemany(
            "INSERT OR REPLACE INTO files (path, language, sha256, size, parse_errors, facts_json) "
            "VALUES (?,?,?,?,?,?)",
            [(r.path, r.language, r.sha256, r.size, r.parse_errors, document) for r, document in records],
        )

    def drop_files(self, paths: Sequence[str]) -> None:
        self.con.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in paths])

    def put_graph(
        self, symbols: Iterable[Symbol], edges: Iterable[Edge], unresolved: Iterable[Unresolved], meta: dict[str, Any]
    ) -> None:
        for table in ("symbols", "edges", "unresolved", "unresolved_candidates", "symbols_fts", "meta"):
            self.con.execute(f"DELETE FROM {table}")
        self._insert(symbols, edges, unresolved, first_id=0)
        self._meta({**meta, "graph_format": GRAPH_FORMAT})

    def patch_graph(
        self,
        files: Sequence[str],
        qnames: Sequence[str],
        symbols: Iterable[Symbol],
        edges: Iterable[Edge],
        unresolved: Iterable[Unresolved],
        meta: dict[str, Any],
    ) -> None:
        con = self.con
        con.execute("CREATE TEMP TABLE IF NOT EXISTS patch_files (path TEXT PRIMARY KEY)")
        con.execute("CREATE TEMP TABLE IF NOT EXISTS patch_qnames (qname TEXT PRIMARY KEY)")
        con.execute("DELETE FROM patch_files")
        con.execute("DELETE FROM patch_qnames")
        con.executemany("INSERT OR IGNORE INTO patch_files VALUES (?)", [(f,) for f in files])
        con.executemany("INSERT OR IGNORE INTO patch_qnames VALUES (?)", [(q,) for q in qnames])
        con.execute(
            "INSERT OR IGNORE INTO patch_qnames SELECT qname FROM symbols WHERE file IN (SELECT path FROM patch_files)"
        )
        con.execute("DELETE FROM symbols_fts WHERE qname IN (SELECT qname FROM patch_qnames)")
        con.execute("DELETE FROM symbols WHERE qname IN (SELECT qname FROM patch_qnames)")
        con.execute("DELETE FROM edges WHERE file IN (SELECT path FROM patch_files)")
        con.execute(
            "DELETE FROM unresolved_candidates WHERE unresolved_id IN "
            "(SELECT id FROM unresolved WHERE file IN (SELECT path FROM patch_files))"
        )
        con.execute("DELETE FROM unresolved WHERE file IN (SELECT path FROM patch_files)")
        next_id = con.execute("SELECT COALESCE(MAX(id), -1) + 1 FROM unresolved").fetchone()[0]
        self._insert(symbols, edges, unresolved, first_id=next_id)
        self._meta(meta)

    def _meta(self, meta: dict[str, Any]) -> None:
        self.con.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)", [(k, json.dumps(v)) for k, v in meta.items()]
        )

    def _insert(
        self, symbols: Iterable[Symbol], edges: Iterable[Edge], unresolved: Iterable[Unresolved], *, first_id: int
    ) -> None:
        con = self.con
        rows = [
            (
                s.qname,
                s.kind,
                s.name,
                s.file,
                s.line,
                s.col,
                s.end_line,
                s.parent,
                s.doc,
                s.signature,
                json.dumps(s.bases),
                s.flavor,
            )
            for s in symbols
        ]
        con.executemany(f"INSERT OR IGNORE INTO symbols ({_SYMBOL_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        con.executemany(
            "INSERT INTO symbols_fts (qname, name, path, doc) VALUES (?,?,?,?)",
            [(r[0], r[2], r[0].replace(".", " ").replace("/", " "), r[8]) for r in rows],
        )
        con.executemany(
            "INSERT INTO edges (src, dst, kind, file, line, col, resolution, confidence) VALUES (?,?,?,?,?,?,?,?)",
            [(e.src, e.dst, e.kind, e.file, e.line, e.col, e.resolution, e.confidence) for e in edges],
        )
        listed = list(enumerate(unresolved, start=first_id))
        con.executemany(
            "INSERT INTO unresolved (id, src, target, kind, file, line, candidates_json) VALUES (?,?,?,?,?,?,?)",
            [(i, u.src, u.target, u.kind, u.file, u.line, json.dumps(u.candidates)) for i, u in listed],
        )
        con.executemany(
            "INSERT INTO unresolved_candidates (unresolved_id, qname) VALUES (?,?)",
            [(i, qname) for i, u in listed for qname in u.candidates],
        )

    def commit(self) -> None:
        self.con.commit()

    # -- reading ----------------------------------------------------------------------------------------

    def files(self) -> list[FileRecord]:
        rows = self.con.execute("SELECT path, language, sha256, size, parse_errors FROM files ORDER BY path")
        return [FileRecord(*row) for row in rows]

    def file_facts(self, paths: Iterable[str] | None = None) -> list[FileFacts]:
        if paths is None:
            rows = self.con.execute("SELECT * FROM files ORDER BY path").fetchall()
        else:
            wanted = list(paths)
            rows = [
                r
                for chunk in range(0, len(wanted), 500)
                for r in self.con.execute(
                    f"SELECT * FROM files WHERE path IN ({','.join('?' * len(wanted[chunk : chunk + 500]))})",
                    wanted[chunk : chunk + 500],
                )
            ]
        return [_facts_from(r) for r in rows]

    def symbols_named(self, name: str, *, limit: int = 50) -> list[Symbol]:
        rows = self.con.execute(
            f"SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE qname = ? "
            f"UNION SELECT {_SYMBOL_COLUMNS} FROM symbols WHERE name = ? "
            "ORDER BY qname LIMIT ?",
            (name, name, limit),
        )
        return [_symbol(r) for r in rows]

    def search_symbols(self, query: str, *, kind: str | None = None, limit: int = 10) -> list[Symbol]:
        # Exact names first: asking for `send` should list the symbols called send before mere mentions.
        exact = [s for s in self.symbols_named(query.strip(), limit=limit * 4) if kind is None or s.kind == kind]
        if len(exact) >= limit:
            return exact[:limit]
        match = _fts_query(query)
        if not match:
            return exact
        sql = (
            f"SELECT {', '.join('s.' + c.strip() for c in _SYMBOL_COLUMNS.split(','))} FROM symbols_fts f "
            "JOIN symbols s ON s.qname = f.qname WHERE symbols_fts MATCH ?"
        )
        params: list[Any] = [match]
        if kind:
            sql += " AND s.kind = ?"
            params.append(kind)
        sql += " ORDER BY bm25(symbols_fts, 0, 10.0, 2.0, 1.0), s.qname LIMIT ?"
        params.append(limit)
        seen = {s.qname for s in exact}
        ranked = [sym for r in self.con.execute(sql, params) if (sym := _symbol(r)).qname not in seen]
        return [*exact, *ranked][:limit]

    def edges_of(self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str], limit: int) -> list[Edge]:
        if not qnames:
            return []
        key = "dst" if direction == "callers" else "src"
        sql = (
            f"SELECT * FROM edges WHERE {key} IN ({','.join('?' * len(qnames))}) "
            f"AND kind IN ({','.join('?' * len(kinds))}) ORDER BY file, line, col LIMIT ?"
        )
        return [_edge(r) for r in self.con.execute(sql, [*qnames, *kinds, limit])]

    def closure(
        self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str], depth: int, limit: int
    ) -> tuple[list[Reached], bool]:
        if not qnames:
            return [], False
        near, far = ("dst", "src") if direction == "callers" else ("src", "dst")
        seeds = ",".join("?" * len(qnames))
        kind_list = ",".join("?" * len(kinds))
        # Breadth-first by depth; a node is reported at its smallest depth (deduplicated below).
        sql = f"""
            WITH RECURSIVE walk(node, depth, via, kind, file, line, resolution, confidence) AS (
                SELECT e.{far}, 1, e.{near}, e.kind, e.file, e.line, e.resolution, e.confidence
                FROM edges e WHERE e.{near} IN ({seeds}) AND e.kind IN ({kind_list})
                UNION
                SELECT e.{far}, w.depth + 1, e.{near}, e.kind, e.file, e.line, e.resolution, e.confidence
                FROM walk w JOIN edges e ON e.{near} = w.node
                WHERE w.depth < ? AND e.kind IN ({kind_list})
            )
            SELECT node, MIN(depth) AS depth, via, kind, file, line, resolution, confidence
            FROM walk WHERE node NOT IN ({seeds}) GROUP BY node ORDER BY depth, node LIMIT ?
        """
        params = [*qnames, *kinds, depth, *kinds, *qnames, limit + 1]
        rows = self.con.execute(sql, params).fetchall()
        reached = [Reached(*row) for row in rows[:limit]]
        return reached, len(rows) > limit

    def unresolved_for(self, qnames: Sequence[str], *, limit: int) -> list[Unresolved]:
        if not qnames:
            return []
        marks = ",".join("?" * len(qnames))
        rows = self.con.execute(
            f"SELECT * FROM unresolved WHERE src IN ({marks}) ORDER BY file, line LIMIT ?",
            [*qnames, limit],
        ).fetchall()
        found = [_unresolved(r) for r in rows]
        if len(found) < limit:
            named = self.con.execute(
                f"SELECT DISTINCT u.* FROM unresolved_candidates c JOIN unresolved u ON u.id = c.unresolved_id "
                f"WHERE c.qname IN ({marks}) AND u.src NOT IN ({marks}) ORDER BY u.file, u.line LIMIT ?",
                [*qnames, *qnames, limit - len(found)],
            )
            found += [_unresolved(r) for r in named]
        return found

    def count_edges(self, qnames: Sequence[str], direction: Direction, *, kinds: Sequence[str]) -> int:
        if not qnames:
            return 0
        key = "dst" if direction == "callers" else "src"
        sql = (
            f"SELECT COUNT(*) FROM edges WHERE {key} IN ({','.join('?' * len(qnames))}) "
            f"AND kind IN ({','.join('?' * len(kinds))})"
        )
        return int(self.con.execute(sql, [*qnames, *kinds]).fetchone()[0])

    def symbols_per_file(self) -> dict[str, int]:
        rows = self.con.execute("SELECT file, COUNT(*) FROM symbols WHERE kind != 'module' GROUP BY file")
        return {file: count for file, count in rows}

    def counts(self) -> dict[str, int]:
        one = self.con.execute
        return {
            "files": one("SELECT COUNT(*) FROM files").fetchone()[0],
            "symbols": one("SELECT COUNT(*) FROM symbols").fetchone()[0],
            "edges": one("SELECT COUNT(*) FROM edges").fetchone()[0],
            "unresolved": one("SELECT COUNT(*) FROM unresolved").fetchone()[0],
            "parse_errors": one("SELECT COALESCE(SUM(parse_errors), 0) FROM files").fetchone()[0],
        }

    def graph_format(self) -> int:
        """The GRAPH_FORMAT this generation was written in (1: before the format was recorded)."""
        row = self.con.execute("SELECT value FROM meta WHERE key = 'graph_format'").fetchone()
        return int(json.loads(row[0])) if row is not None else 1

    def meta(self) -> dict[str, Any]:
        return {row["key"]: json.loads(row["value"]) for row in self.con.execute("SELECT key, value FROM meta")}
