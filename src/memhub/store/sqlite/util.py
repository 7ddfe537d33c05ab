"""Small helpers the SQLite store modules share."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any


def json_or_none(value: Any) -> str | None:
    """JSON text of a value, None for None."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive slices of at most `size` items (SQLite caps the parameters of one statement)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def drop_rows(con: sqlite3.Connection, table: str, fts: str, kind: str, rowids: list[int]) -> int:
    """Delete records by rowid with their full-text rows and embedding-queue entries; returns how many went.

    The vectors are the caller's to remove (the vector index is keyed by scope).
    """
    deleted = 0
    for chunk in chunks(rowids, 500):
        marks = ",".join("?" * len(chunk))
        deleted += con.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", chunk).rowcount
        con.execute(f"DELETE FROM {fts} WHERE rowid IN ({marks})", chunk)
        con.execute(f"DELETE FROM embedding_queue WHERE kind = ? AND ref IN ({marks})", [kind, *chunk])
    return deleted
