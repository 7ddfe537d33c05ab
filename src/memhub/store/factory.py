"""Open a store by URL: the one place that knows which backends exist.

A URL names its backend by scheme — `sqlite:///var/lib/memhub` is the SQLite backend over that data
directory (`sqlite://data` is relative to the working directory) — and a bare path means SQLite over that
directory, as `MEMHUB_DATA_DIR` always did. Adding a backend is one package under `memhub/store/` and one
entry in `BACKENDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memhub.store.base import MemoryStore


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Tuning a backend may honour; each backend ignores what does not apply to it."""

    busy_timeout_ms: int = 10_000  # how long a write waits for another writer's lock
    synchronous: str = "FULL"  # SQLite durability (`OFF` only for throwaway benchmark data)
    exact_vector_limit: int | None = None  # below this many vectors per scope, search scans them exactly
    vector_snapshots: bool = True  # large scopes' vector indexes are saved to disk and loaded from there at start


class UnknownBackend(ValueError):
    """A store URL whose scheme no backend serves."""


def _sqlite(location: str, options: StoreOptions) -> MemoryStore:
    # Imported on use: a process opens one backend and need not load the others' drivers.
    from memhub.store.sqlite.store import EXACT_VECTOR_LIMIT, SQLiteStore
    from memhub.store.sqlite.vectors import SnapshotPolicy

    limit = EXACT_VECTOR_LIMIT if options.exact_vector_limit is None else options.exact_vector_limit
    return SQLiteStore(
        Path(location),
        synchronous=options.synchronous,
        busy_timeout_ms=options.busy_timeout_ms,
        exact_vector_limit=limit,
        snapshots=SnapshotPolicy(enabled=options.vector_snapshots),
    )


BACKENDS: dict[str, Callable[[str, StoreOptions], MemoryStore]] = {"sqlite": _sqlite}


def split_url(url: str | Path) -> tuple[str, str]:
    """(backend name, backend-specific location) of a store URL or a bare data-dir path."""
    text = str(url)
    scheme, separator, rest = text.partition("://")
    if not separator:
        return "sqlite", text
    backend = scheme.lower()
    if backend not in BACKENDS:
        known = ", ".join(sorted(BACKENDS))
        raise UnknownBackend(f"store url: unknown backend {scheme!r} (known: {known})")
    if backend == "sqlite" and not rest:
        raise UnknownBackend("store url: sqlite:// needs a data directory, e.g. sqlite:///var/lib/memhub")
    return backend, rest


def open_store(url: str | Path, options: StoreOptions | None = None) -> MemoryStore:
    """The store a URL names, opened (and migrated to the current schema)."""
    backend, location = split_url(url)
    return BACKENDS[backend](location, options or StoreOptions())
