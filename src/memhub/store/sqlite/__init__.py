"""The embedded backend: every store interface over SQLite files in one data directory (WAL, FTS5 for full
text, HNSW for vectors). `SQLiteStore` is the entry; the other modules are its parts, one concern each."""

from memhub.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
