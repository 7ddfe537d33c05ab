"""【Skill notes related to this workspace】: where workspace skills plug into the composer.

memhub has no skills service yet (a `memhub.skills` package is planned), so the composer asks a `SkillSource`
for the notes that match a turn and the default source has none. When the skills service lands it implements
`SkillSource.notes` (skills of the team, matched to the question, the agent's own first) and is handed to
`ContextComposer(skills=...)` in the app wiring; nothing else changes. No skill store is invented here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memhub.context.model import Rendered, SourceRef
from memhub.formats.fence import escape_tags, neutralise
from memhub.knowledge.wiki.passages import TRUNCATION_MARKER as TRUNCATED
from memhub.meta.caller import Caller


@dataclass(frozen=True, slots=True)
class SkillNote:
    """One skill's operation note as it goes into the prompt."""

    id: str
    title: str
    text: str


class SkillSource(Protocol):
    """Skills of a workspace that match a turn, best first."""

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str) -> Sequence[SkillNote]:
        """The notes to offer for this question (the caller may use every one of them)."""
        ...


class NoSkills:
    """The source until memhub has a skills service: no notes, so the section is left out."""

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str) -> Sequence[SkillNote]:
        """None."""
        return ()


def render_notes(notes: Sequence[SkillNote], cap: int) -> Rendered:
    """Notes as `[skill: title]` blocks in order, capped; a cut tail is marked like a knowledge block's.

    Skill text is written by users: it is escaped (memhub.formats.fence) before it is measured against the cap.
    """
    parts: list[str] = []
    refs: list[SourceRef] = []
    used = 0
    budget = cap - len(TRUNCATED)
    for n, note in enumerate(notes):
        header = f"[skill: {escape_tags(' '.join(note.title.split()))}]\n"
        text = neutralise(note.text.strip())
        sep = 2 if parts else 0
        size = used + sep + len(header) + len(text)
        if size <= cap and (n == len(notes) - 1 or size <= budget):
            parts.append(header + text)
            used = size
            refs.append(SourceRef("skill", note.id, None, note.title, None, len(text)))
            continue
        room = budget - used - sep
        if room > len(header) + 20:
            body = text[: room - len(header)].rstrip()
            parts.append(header + body)
            refs.append(SourceRef("skill", note.id, None, note.title, None, len(body), truncated=True))
        if parts:
            return Rendered("\n\n".join(parts) + TRUNCATED, tuple(refs))
        return Rendered()
    return Rendered("\n\n".join(parts), tuple(refs))
