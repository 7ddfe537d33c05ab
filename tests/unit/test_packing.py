"""The packing helper fills a prompt budget with the best hits that fit, in rank order."""

from __future__ import annotations

import pytest

from memhub.retrieval.packing import estimate_tokens, pack


def _pack(texts: list[str], **budget: int) -> list[str]:
    return pack(texts, lambda t: t, **budget)


def test_everything_fits_without_a_budget() -> None:
    assert _pack(["a", "b", "c"]) == ["a", "b", "c"]


def test_a_long_hit_is_skipped_and_shorter_later_hits_still_fill_the_room() -> None:
    hits = ["best " * 4, "x" * 500, "third", "fourth"]
    packed = _pack(hits, max_chars=40)
    assert packed == [hits[0], "third", "fourth"]
    assert len("\n".join(packed)) <= 40


def test_separator_counts_towards_the_budget() -> None:
    assert _pack(["aaaa", "bbbb"], max_chars=8) == ["aaaa"]
    assert _pack(["aaaa", "bbbb"], max_chars=9) == ["aaaa", "bbbb"]


def test_rank_order_is_kept() -> None:
    assert _pack(["c" * 3, "a", "b" * 2], max_chars=100) == ["ccc", "a", "bb"]


def test_token_budget_counts_cjk_characters_as_tokens() -> None:
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("") == 0
    chinese, english = "数据库迁移计划" * 10, "database migration plan " * 3
    assert _pack([chinese, english], max_tokens=40) == [english]


def test_both_budgets_and_the_item_cap_apply() -> None:
    hits = ["one", "two", "three", "four"]
    assert _pack(hits, max_items=2) == ["one", "two"]
    assert _pack(hits, max_chars=100, max_tokens=3) == ["one", "two"]  # 1 + (1 separator + 1)


def test_nothing_fits_a_zero_budget_and_negative_budgets_are_refused() -> None:
    assert _pack(["a"], max_chars=0) == []
    with pytest.raises(ValueError):
        _pack(["a"], max_chars=-1)
