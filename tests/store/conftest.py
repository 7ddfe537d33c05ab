"""The store contract, run once per backend.

Every test here that asks for `store` (or opens stores with `open_store_named`) runs against each backend in
`BACKENDS`: a new backend under `memhub/store/` joins the suite with one entry, its name and how a test gets a
fresh, private location. Tests that read a backend's own files or tables say so with `sqlite_only`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.store import MemoryStore
from memhub.store.factory import StoreOptions, open_store

# backend name -> the store URL of a fresh location named `name` under a test's temporary directory
BACKENDS: dict[str, Callable[[Path, str], str]] = {
    "sqlite": lambda base, name: f"sqlite://{base / name}",
}

# What `open_store_named` gives a test: open (or reopen) the store at a named location.
OpenStore = Callable[..., MemoryStore]

# For tests of the SQLite backend itself (its files, tables, migrations): they run for that backend only.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"])


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def open_store_named(backend: str, tmp_path: Path) -> Iterator[Callable[..., MemoryStore]]:
    """Open the store at location `name` (again: a second handle on the same data, as a second process would)."""
    opened: list[MemoryStore] = []

    def open_named(name: str = "data", **options: Any) -> MemoryStore:
        store = open_store(BACKENDS[backend](tmp_path, name), StoreOptions(**options))
        opened.append(store)
        return store

    yield open_named
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store_named: Callable[..., MemoryStore]) -> MemoryStore:
    return open_store_named()
