"""Deterministic L2: scene files built from a profile's memories, grouped by extracted scene name.

Used when no LLM is configured (and as the LLM writer's fallback): useful, stable scenes —
re-running over the same memories writes the same files, so versions do not churn.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.model import AtomicRecord
from memhub.timeutil import ms_to_iso

GENERAL = "general"
EARLIER = "earlier-notes"
MAX_FILENAME_CHARS = 60
MAX_SCENE_CHARS = 6000
# Letters, digits, CJK, "-", "_" and ".", as the original allows in scene file names; anything else becomes a dash.
_UNSAFE = re.compile(r"[^\w.\-\u4e00-\u9fff]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class SceneDraft:
    """One scene file to write."""

    path: str
    summary: str
    body: str
    heat: int
    memory_ids: tuple[str, ...]
    deleted: bool = False  # the scene file is to be removed (merged away or obsolete)


def scene_filename(name: str | None) -> str:
    """A safe file name for a scene (`Trip to Kyoto` → `Trip-to-Kyoto.md`)."""
    cleaned = _UNSAFE.sub("-", (name or GENERAL).strip()).strip("-._")[:MAX_FILENAME_CHARS].strip("-._")
    return f"{cleaned or GENERAL}.md"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", "。", "！", "？")) else text + "."


def _draft(name: str, memories: Sequence[AtomicRecord]) -> SceneDraft:
    recent = sorted(memories, key=lambda m: (m.updated_ms, m.id), reverse=True)
    lines: list[str] = []
    size = 0
    for memory in recent:
        line = f"{_sentence(memory.content)} ({ms_to_iso(memory.updated_ms)[:10]})"
        if size + len(line) > MAX_SCENE_CHARS:
            break
        lines.append(line)
        size += len(line) + 1
    title = name if name != GENERAL else "General notes"
    body = f"# {title}\n\n" + "\n".join(lines) + "\n"
    summary = " ".join(recent[0].content.split())[:160]
    heat = sum(1 + m.version for m in memories)
    return SceneDraft(scene_filename(name), summary, body, heat, tuple(m.id for m in recent))


def build_scenes(memories: Sequence[AtomicRecord], max_scenes: int) -> list[SceneDraft]:
    """Scenes of a profile: one per scene name, the most recently active first, at most `max_scenes`.

    Scene names beyond the cap are folded into one `earlier-notes.md`, so the file count stays
    under the limit (the original's `maxScenes`) and nothing is left out.
    """
    groups: dict[str, list[AtomicRecord]] = {}
    for memory in memories:
        groups.setdefault(scene_filename(memory.scene_name), []).append(memory)
    names = {scene_filename(m.scene_name): (m.scene_name or GENERAL) for m in memories}
    order = sorted(groups, key=lambda f: max(m.updated_ms for m in groups[f]), reverse=True)
    keep = order if len(order) <= max_scenes else order[: max(max_scenes - 1, 1)]
    drafts = [_draft(names[f], groups[f]) for f in keep]
    folded = [m for f in order[len(keep) :] for m in groups[f]]
    if folded:
        drafts.append(_draft(EARLIER, folded))
    return drafts
