"""【Skill notes related to this workspace】: the team's skills that match a turn, in the composer's skills section.

The composer asks a `SkillSource` for the notes of a turn. `FinderSkills` answers from the skill finder
(memhub.knowledge.skill.finder): the team's skills the caller may read, ranked for the question, the agent's own
(owned or bound) first; each note is the skill's description and the beginning of its instructions, so the agent
knows when the skill applies and can read the rest with `skill_view`; each note names who wrote the skill. A
skill whose text reads like an instruction to the agent is left out, and a warning of the composition names it. A
caller the skill rules refuse (a user key through an agent it may not use) gets no notes rather than a failed turn.
`NoSkills` is the source of a composer built without skills (tests of the other sections).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memhub.context.model import Rendered, SourceRef
from memhub.formats.fence import escape_tags, neutralise
from memhub.knowledge.skill.finder import SkillFinder
from memhub.knowledge.wiki.passages import TRUNCATION_MARKER as TRUNCATED
from memhub.meta.access import AccessDenied
from memhub.meta.caller import Caller

# How many skills one turn's notes name at most (the section's cap decides how much of them fits).
NOTES_PER_TURN = 5


@dataclass(frozen=True, slots=True)
class SkillNote:
    """One skill's operation note as it goes into the prompt."""

    id: str
    title: str
    text: str
    author: str = ""  # who wrote the skill's current version ("" when the source does not say)


@dataclass(frozen=True, slots=True)
class SkillNotes:
    """A turn's notes, best first, and the warnings to report with the composition (skills withheld)."""

    notes: Sequence[SkillNote] = ()
    warnings: tuple[str, ...] = ()


class SkillSource(Protocol):
    """Skills of a workspace that match a turn, best first."""

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str) -> SkillNotes:
        """The notes to offer for this question (the caller may use every one of them)."""
        ...


class NoSkills:
    """A source without skills: no notes, so the section is left out."""

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str) -> SkillNotes:
        """None."""
        return SkillNotes()


@dataclass(frozen=True, slots=True)
class FinderSkills:
    """The team's skills matched to the question through the skill finder."""

    finder: SkillFinder
    limit: int = NOTES_PER_TURN

    def notes(self, caller: Caller, team_id: str, agent_id: str | None, question: str) -> SkillNotes:
        """The best matching skills the caller may read, the agent's own first."""
        try:
            found = self.finder.notes(caller, team_id, agent_id, question, self.limit)
        except AccessDenied:
            return SkillNotes()
        return SkillNotes([SkillNote(n.skill_id, n.name, n.text, n.author) for n in found.notes], found.withheld)


def render_notes(notes: Sequence[SkillNote], cap: int) -> Rendered:
    """Notes as `[skill: title]` blocks in order, capped; a cut tail is marked like a knowledge block's.

    Skill text is written by users: it is escaped (memhub.formats.fence) before it is measured against the cap.
    """
    parts: list[str] = []
    refs: list[SourceRef] = []
    used = 0
    budget = cap - len(TRUNCATED)
    for n, note in enumerate(notes):
        author = f" (author: {escape_tags(note.author)})" if note.author else ""
        header = f"[skill: {escape_tags(' '.join(note.title.split()))}{author}]\n"
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
