"""Recalled items as prompt lines: `- [conversation 2023-05-08, user] …` for a turn, `- [memory, episodic] …` for a
memory. The memory proxy's per-turn block and the runtime-context composer write them the same way.

Each item is folded onto its line and escaped (memhub.formats.fence), so nothing in it can close the block it
sits in or pass for one of our headings: recalled text is data, whoever said it.
"""

from __future__ import annotations

from memhub.formats.fence import escape_tags, neutralise
from memhub.memory.recall import RecalledItem
from memhub.timeutil import ms_to_iso


def item_label(item: RecalledItem) -> str:
    """A turn's label names when it was said (UTC date) and by whom; a memory's, its type. A memory's time is when
    it last changed, not when its event happened (its text carries that), so it is left out."""
    if item.layer == "l0":
        label = f"conversation {ms_to_iso(item.time_ms)[:10]}"
        return f"{label}, {item.role}" if item.role else label
    return f"memory, {item.type}" if item.type else "memory"


def item_line(item: RecalledItem) -> str:
    """The item as one escaped prompt line."""
    return f"- [{escape_tags(item_label(item))}] {neutralise(' '.join(item.content.split()))}"
