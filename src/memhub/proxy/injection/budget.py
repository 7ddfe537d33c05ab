"""Placement order and the global injection budget (the original's `applyInjectionBudget`).

Blocks are placed point by point (`system.prefix`, `system.before_tools`, `system.after_tools`, `system.suffix`)
and, within a point, lower priority first. The budget walks them in that order: a block that fits is kept
whole, the first one that does not is cut to what is left and marked, and every later block is dropped. The cut
falls on a line boundary when one is near, so no half line of a recipe reaches the model; the marker always fits
inside the budget (the original appended it past the limit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memhub.proxy.model import Block

SYSTEM_POINTS = ("system.prefix", "system.before_tools", "system.after_tools", "system.suffix")
TRUNCATION_MARKER = "…[injection budget: truncated]"


def placement_order(blocks: Sequence[Block]) -> list[Block]:
    """The `system.*` blocks in placement order (point, then priority; ties keep their given order)."""
    system = [b for b in blocks if b.point in SYSTEM_POINTS and b.text]
    return sorted(system, key=lambda b: (SYSTEM_POINTS.index(b.point), b.priority))


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, ending at a line break when one lies in the last half."""
    head = text[:limit]
    newline = head.rfind("\n")
    if newline >= limit // 2:
        head = head[:newline]
    return head.rstrip()


def apply_budget(blocks: Sequence[Block], budget: int | None) -> list[Block]:
    """The blocks that fit `budget` characters in their order: whole ones, then at most one cut and marked."""
    if budget is None:
        return list(blocks)
    kept: list[Block] = []
    used = 0
    for block in blocks:
        room = budget - used
        if len(block.text) <= room:
            kept.append(block)
            used += len(block.text)
            continue
        room_for_text = room - len(TRUNCATION_MARKER) - 1  # the marker goes on a line of its own
        if room_for_text > 0:
            head = _cut(block.text, room_for_text)
            if head:
                kept.append(replace(block, text=f"{head}\n{TRUNCATION_MARKER}"))
        break
    return kept
