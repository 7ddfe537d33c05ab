"""The session block cache on its own: time to live on an injectable clock, least-recently-used eviction, merges."""

from __future__ import annotations

import pytest

from memhub.proxy.injection.cache import SessionBlockCache
from memhub.proxy.model import Block

BLOCK = Block("hook", "text", "system.suffix", 100)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_lives_its_ttl_from_when_it_was_filled() -> None:
    clock = Clock()
    cache = SessionBlockCache(60, clock=clock)
    cache.put("s", {"hook": BLOCK}, frozenset())
    clock.now = 59.9
    entry = cache.get("s")
    assert entry is not None and entry.blocks == {"hook": BLOCK}
    clock.now = 60
    assert cache.get("s") is None and len(cache) == 0


def test_a_merge_keeps_the_fill_time_and_records_what_still_fails() -> None:
    clock = Clock()
    cache = SessionBlockCache(60, clock=clock)
    entry = cache.put("s", {"a": None}, frozenset({"b", "c"}))
    clock.now = 30
    merged = cache.merge("s", entry, {"b": BLOCK}, frozenset({"c"}))
    assert merged.blocks == {"a": None, "b": BLOCK} and merged.failed == {"c"} and merged.filled_at == 0
    clock.now = 60
    assert cache.get("s") is None


def test_the_least_recently_used_session_goes_first() -> None:
    cache = SessionBlockCache(60, max_sessions=2, clock=Clock())
    cache.put("a", {}, frozenset())
    cache.put("b", {}, frozenset())
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", {}, frozenset())
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None


def test_forget_and_limits() -> None:
    cache = SessionBlockCache(60, clock=Clock())
    cache.put("a", {}, frozenset())
    cache.forget("a")
    cache.forget("never there")
    assert cache.get("a") is None
    with pytest.raises(ValueError, match="max_sessions"):
        SessionBlockCache(60, max_sessions=0)
