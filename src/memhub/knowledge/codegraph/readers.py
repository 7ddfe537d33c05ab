"""Open read-only connections to the current generation of the code graphs being queried.

Opening a generation's database is cheap but not free (and its page cache warms with use), so one
reader per (service, code graph, generation) is kept in a small LRU and shared by every query. A
query holds a lease on its reader: when a build switches the graph to a newer generation, or the LRU
drops a reader, it is closed only once the last query using it has finished — reads never wait for
a build, and a build never pulls a connection from under a running query.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from memhub.knowledge.codegraph.storage import CodeGraphFiles
from memhub.model.meta import MetaKind, Row
from memhub.store.graph import GraphReader
from memhub.store.graph_files import open_graph
from memhub.store.meta import MetaStore

READERS_CACHED = 64


@dataclass(slots=True)
class _Reader:
    generation: int
    graph: GraphReader
    leases: int = 0
    retired: bool = False


@dataclass
class GraphReaders:
    """The open readers of the most recently queried code graphs, by (service id, code graph id)."""

    files: CodeGraphFiles
    store: MetaStore
    _readers: OrderedDict[tuple[str, str], _Reader] = field(init=False, default_factory=OrderedDict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    @contextmanager
    def lease(self, service_id: str, row: Row) -> Iterator[GraphReader | None]:
        """The graph's current generation for the duration of a query; None before the first build."""
        if row["generation"] == 0:
            yield None
            return
        reader = self._acquire(service_id, row)
        try:
            yield reader.graph
        finally:
            self._release(reader)

    def _acquire(self, service_id: str, row: Row) -> _Reader:
        key = (service_id, row["code_graph_id"])
        with self._lock:
            cached = self._readers.get(key)
            if cached is not None and cached.generation >= row["generation"]:
                self._readers.move_to_end(key)
                cached.leases += 1
                return cached
        opened = self._open(service_id, row)
        with self._lock:
            cached = self._readers.get(key)
            if cached is not None and cached.generation >= opened.generation:
                # Another query opened the same (or a newer) generation meanwhile: use that one.
                opened.graph.close()
                cached.leases += 1
                return cached
            if cached is not None:
                self._retire(cached)
            self._readers[key] = opened
            opened.leases += 1
            self._trim()
            return opened

    def _release(self, reader: _Reader) -> None:
        with self._lock:
            reader.leases -= 1
            if reader.retired and reader.leases == 0:
                reader.graph.close()

    def _retire(self, reader: _Reader) -> None:
        """Close the reader now if no query holds it, else when the last one lets go (caller holds the lock)."""
        reader.retired = True
        if reader.leases == 0:
            reader.graph.close()

    def _trim(self) -> None:
        while len(self._readers) > READERS_CACHED:
            _, oldest = self._readers.popitem(last=False)
            self._retire(oldest)

    def _open(self, service_id: str, row: Row) -> _Reader:
        path = self.files.generation_db(service_id, row["code_graph_id"], row["generation"])
        try:
            return _Reader(row["generation"], _open_readonly(path))
        except sqlite3.Error:
            # A build switched generations and pruned this one after the row was read: read it again.
            with self.store.reading(service_id) as r:
                fresh = r.get(MetaKind.CODE_GRAPH, row["code_graph_id"])
            if fresh is None or fresh["generation"] in (0, row["generation"]):
                raise
            path = self.files.generation_db(service_id, row["code_graph_id"], fresh["generation"])
            return _Reader(fresh["generation"], _open_readonly(path))

    def forget(self, service_id: str, code_graph_id: str) -> None:
        """Drop the graph's reader (it was deleted)."""
        with self._lock:
            reader = self._readers.pop((service_id, code_graph_id), None)
            if reader is not None:
                self._retire(reader)

    def close(self) -> None:
        """Close every reader no query holds (shutdown)."""
        with self._lock:
            while self._readers:
                _, reader = self._readers.popitem()
                self._retire(reader)


def _open_readonly(path: Path) -> GraphReader:
    return open_graph(path)
