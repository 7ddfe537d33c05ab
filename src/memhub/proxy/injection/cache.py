"""The per-session block cache: a session's stable blocks computed once, so its system prompt does not change.

An entry holds the blocks of every source that answered (an empty answer is cached too: a block appearing in the
middle of a session would change the prompt) and the names of the sources that failed, which the next main turn
asks again. Entries live `ttl_seconds` from when they were filled and at most `max_sessions` are kept, the least
recently used going first. The clock is injectable so tests move time instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

from memhub.proxy.model import Block

DEFAULT_MAX_SESSIONS = 10_000


@dataclass(frozen=True, slots=True)
class CachedBlocks:
    """A session's blocks by source name (None: the source answered with no block) and the sources that failed."""

    blocks: Mapping[str, Block | None]
    failed: frozenset[str]
    filled_at: float


class SessionBlockCache:
    """An in-memory LRU of sessions' blocks with a time to live; safe to use from several threads."""

    def __init__(
        self,
        ttl_seconds: float,
        *,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions: must be at least 1")
        self.ttl_seconds = ttl_seconds
        self.max_sessions = max_sessions
        self.clock = clock
        self._entries: OrderedDict[Hashable, CachedBlocks] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> CachedBlocks | None:
        """The session's entry, or None when there is none or it has expired (an expired one is dropped)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if self.clock() - entry.filled_at >= self.ttl_seconds:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key: Hashable, blocks: Mapping[str, Block | None], failed: frozenset[str]) -> CachedBlocks:
        """Store the session's entry, filled now; the least recently used entries beyond the limit go."""
        entry = CachedBlocks(dict(blocks), failed, self.clock())
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_sessions:
                self._entries.popitem(last=False)
        return entry

    def merge(
        self, key: Hashable, entry: CachedBlocks, blocks: Mapping[str, Block | None], failed: frozenset[str]
    ) -> CachedBlocks:
        """`entry` with the retried sources' answers added, keeping its fill time (the TTL counts from the first
        fill, so a session's prompt is renewed on schedule even when a source kept failing)."""
        merged = CachedBlocks({**entry.blocks, **blocks}, failed, entry.filled_at)
        with self._lock:
            if key in self._entries:
                self._entries[key] = merged
        return merged

    def forget(self, key: Hashable) -> None:
        """Drop the session's entry (the next turn computes its blocks afresh)."""
        with self._lock:
            self._entries.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
