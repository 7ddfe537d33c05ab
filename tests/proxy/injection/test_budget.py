"""The injection budget: blocks in placement order, later ones dropped, the last kept one cut and marked."""

from __future__ import annotations

from memhub.proxy.injection.budget import TRUNCATION_MARKER, apply_budget, placement_order
from memhub.proxy.model import Block


def block(hook: str, text: str, point: str = "system.suffix", priority: int = 100) -> Block:
    return Block(hook, text, point, priority)  # type: ignore[arg-type]


def test_placement_order_is_point_then_priority() -> None:
    blocks = [
        block("profile", "p", "system.suffix", 110),
        block("tools", "t", "system.suffix", 105),
        block("knowledge", "k", "system.before_tools", 300),
        block("skills", "s", "system.before_tools", 200),
        block("first", "f", "system.prefix", 1000),
    ]
    assert [b.hook_id for b in placement_order(blocks)] == ["first", "skills", "knowledge", "tools", "profile"]


def test_everything_fits() -> None:
    blocks = [block("a", "x" * 10), block("b", "y" * 10)]
    assert apply_budget(blocks, 20) == blocks
    assert apply_budget(blocks, None) == blocks


def test_later_blocks_are_dropped_and_the_last_kept_one_is_cut_with_the_marker() -> None:
    first = block("a", "a" * 50)
    second = block("b", "line one\nline two\nline three\n" + "z" * 60)
    third = block("c", "c" * 10)
    budget = 50 + 1 + len(TRUNCATION_MARKER) + 19  # 19 characters of the second block's text fit
    kept = apply_budget([first, second, third], budget)
    assert [b.hook_id for b in kept] == ["a", "b"]
    assert kept[0] == first
    # The cut falls on the last line break inside those 19 characters.
    assert kept[1].text == f"line one\nline two\n{TRUNCATION_MARKER}"
    assert sum(len(b.text) for b in kept) <= budget


def test_a_cut_without_a_nearby_line_break_is_hard() -> None:
    kept = apply_budget([block("a", "x" * 100)], 40)
    assert kept[0].text == "x" * (40 - len(TRUNCATION_MARKER) - 1) + "\n" + TRUNCATION_MARKER
    assert len(kept[0].text) == 40


def test_no_room_for_even_the_marker_drops_the_block() -> None:
    assert apply_budget([block("a", "x" * 10), block("b", "y" * 100)], 15) == [block("a", "x" * 10)]
