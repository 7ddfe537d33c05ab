"""Deterministic L3: a persona summary from the highest-priority memories (no LLM needed)."""

from __future__ import annotations

from collections.abc import Sequence

from memhub.model import AtomicRecord
from memhub.pipeline.types import PromptMode

# The original's caps: a chat persona ≤ 2000 characters, a code-mode doctrine ≤ 1200.
MAX_CHARS = {"chat": 2000, "code": 1200}
SECTIONS: dict[str, list[tuple[str, tuple[str, ...], int]]] = {
    "chat": [
        ("Who they are", ("persona",), 12),
        ("How to work with them", ("instruction",), 10),
        ("Recent events", ("episodic",), 6),
    ],
    "code": [
        ("Core principles", ("work_fact",), 8),
        ("Reusable methods", ("work_method",), 6),
        ("Open work", ("work_task",), 6),
        ("Artifacts", ("work_artifact",), 4),
    ],
}


def _rank(memory: AtomicRecord) -> tuple[int, int, int]:
    # Absolute instructions (priority -1) first, then priority, then the most recently confirmed.
    return (memory.priority == -1, memory.priority, memory.updated_ms)


def build_persona(memories: Sequence[AtomicRecord], mode: PromptMode = "chat") -> str:
    """Markdown persona: one section per memory family, capped at the mode's size."""
    parts = ["# Persona\n"]
    for title, types, limit in SECTIONS[mode]:
        chosen = [m for m in memories if m.type in types]
        if title == "Recent events":
            chosen.sort(key=lambda m: m.updated_ms, reverse=True)
        else:
            chosen.sort(key=_rank, reverse=True)
        if chosen:
            lines = "\n".join(f"- {' '.join(m.content.split())}" for m in chosen[:limit])
            parts.append(f"## {title}\n{lines}\n")
    text = "\n".join(parts).strip() + "\n"
    cap = MAX_CHARS[mode]
    if len(text) > cap:
        cut = text[:cap].rsplit("\n", 1)[0]
        text = cut.rstrip() + "\n"
    return text
