"""The loaded snapshots of the wikis being read: the current generation of each, kept in a small LRU.

Loading a snapshot parses and tokenises a whole generation, so it is done once per generation and
kept; a build puts its new snapshot in at the switch, so the first query after it is fast. Reads never
wait for a build: until the switch, they get the last good generation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from memhub.knowledge.wiki.index import IndexInvalid
from memhub.knowledge.wiki.snapshot import WikiSnapshot
from memhub.knowledge.wiki.storage import WikiFiles
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaStore

SNAPSHOTS_CACHED = 64


@dataclass
class SnapshotCache:
    """The most recently used wikis' current snapshots, by (service id, wiki id)."""

    files: WikiFiles
    store: MetaStore
    _snapshots: OrderedDict[tuple[str, str], WikiSnapshot] = field(init=False, default_factory=OrderedDict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _load_locks: dict[tuple[str, str], threading.Lock] = field(init=False, default_factory=dict)

    def snapshot_of(self, service_id: str, row: Row) -> WikiSnapshot | None:
        """The wiki's current generation, loaded (and cached) on first use; None before the first build."""
        if row["generation"] == 0:
            return None
        key = (service_id, row["wiki_id"])
        with self._lock:
            cached = self._snapshots.get(key)
            if cached is not None and cached.generation == row["generation"]:
                self._snapshots.move_to_end(key)
                return cached
            load_lock = self._load_locks.setdefault(key, threading.Lock())
        # One loader per wiki (two requests for a cold wiki must not tokenise it twice); other wikis
        # keep answering meanwhile.
        with load_lock:
            with self._lock:
                cached = self._snapshots.get(key)
            if cached is None or cached.generation != row["generation"]:
                cached = self._load(service_id, row)
            with self._lock:
                newest = self._snapshots.get(key)
                if newest is None or newest.generation <= cached.generation:
                    self._snapshots[key] = cached
                    self._snapshots.move_to_end(key)
                self._trim()
            return cached

    def put(self, service_id: str, wiki_id: str, snapshot: WikiSnapshot) -> None:
        """Make `snapshot` the wiki's cached one (a build calls this once its generation is current)."""
        with self._lock:
            self._snapshots[(service_id, wiki_id)] = snapshot
            self._trim()

    def forget(self, service_id: str, wiki_id: str) -> None:
        """Drop the wiki's snapshot (it was deleted)."""
        with self._lock:
            self._snapshots.pop((service_id, wiki_id), None)

    def _trim(self) -> None:
        while len(self._snapshots) > SNAPSHOTS_CACHED:
            self._snapshots.popitem(last=False)

    def _load(self, service_id: str, row: Row) -> WikiSnapshot:
        directory = self.files.generation_dir(service_id, row["wiki_id"], row["generation"])
        try:
            return WikiSnapshot(row["generation"], directory)
        except (OSError, IndexInvalid):
            # A build switched generations and pruned this one after the row was read: read it again.
            with self.store.reading(service_id) as r:
                fresh = r.get(MetaKind.WIKI, row["wiki_id"])
            if fresh is None or fresh["generation"] in (0, row["generation"]):
                raise
            directory = self.files.generation_dir(service_id, row["wiki_id"], fresh["generation"])
            return WikiSnapshot(fresh["generation"], directory)
