"""Assembling composed text under caps: a workspace agent's system part and the help mode's user-side content.

System part (workspace agent)::

    fixed notes (role, material, tools, honesty, probing, priority, standards)
    【Workspace knowledge】
    <workspace-knowledge>
    …
    </workspace-knowledge>
    【Agent knowledge】 <agent-knowledge> …
    【Standards in force】 <standards-in-force> …
    【Skill notes related to this workspace】 <skill-notes> …
    【Relevant memory】 <relevant-memories> …
    【Recent conversation memory excerpt】 <conversation-excerpt> …

Every section's text came from a document, a user or the conversation: it is data, so it sits inside its own tag
fence, escaped by its renderer (memhub.formats.fence) so that nothing in it can close the fence or pass for one of
our headings. Sections are rendered in that order, each under its own cap and under what the total cap leaves
after the notes and the sections before it, so an earlier section is never cut for a later one. The heading and
the fence tags are not counted in a section's own cap, only in the total. An empty section is left out, heading
included. Help turns put the notes, 【System knowledge】 (fenced in `<system-knowledge>`) and 【User question】 +
the question into the user side, all of it within the help cap; the question itself is never cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memhub.context.model import Rendered, SourceRef
from memhub.formats.fence import fence, fence_overhead

SEPARATOR = "\n\n"
# With less room than this a section would be its heading and a truncation marker: it is left out instead.
MIN_SECTION_ROOM = 200


@dataclass(frozen=True, slots=True)
class Section:
    """One block of the system part: its key, heading, fence tag, own cap, and how to render it under a cap.

    `render` returns text already escaped for the fence (memhub.formats.fence).
    """

    key: str
    heading: str
    tag: str
    cap: int
    render: Callable[[int], Rendered]


@dataclass(frozen=True, slots=True)
class Assembled:
    """Assembled text, the sources in it (in order) and what the caps left out."""

    text: str
    sources: tuple[SourceRef, ...]
    warnings: tuple[str, ...] = ()


def _block(heading: str, tag: str, text: str) -> str:
    return f"{heading}\n{fence(tag, text)}"


def _overhead(heading: str, tag: str) -> int:
    """What a section adds around its text: the separator before it, the heading line and the fence."""
    return len(SEPARATOR) + len(heading) + 1 + fence_overhead(tag)


def assemble_system(notes: str, sections: Sequence[Section], total: int) -> Assembled:
    """The notes, then each non-empty section in order, within `total` characters."""
    parts = [notes]
    used = len(notes)
    sources: list[SourceRef] = []
    warnings: list[str] = []
    for section in sections:
        if section.cap <= 0:
            continue
        overhead = _overhead(section.heading, section.tag)
        room = min(section.cap, total - used - overhead)
        if room < MIN_SECTION_ROOM:
            if section.render(section.cap).text:
                warnings.append(f"{section.key}: left out; the total cap of {total} characters is reached")
            continue
        rendered = section.render(room)
        if not rendered.text:
            continue
        if room < section.cap and any(s.truncated for s in rendered.sources):
            warnings.append(f"{section.key}: shortened to {room} characters to fit the total cap of {total}")
        parts.append(_block(section.heading, section.tag, rendered.text))
        used += overhead + len(rendered.text)
        sources.extend(rendered.sources)
    return Assembled(SEPARATOR.join(parts), tuple(sources), tuple(warnings))


def assemble_help_user(
    notes: str, heading: str, tag: str, render: Callable[[int], Rendered], question_heading: str, query: str, cap: int
) -> Assembled:
    """The help turn's user side minus the question (`user_prepend`): notes, knowledge, the question heading.

    The knowledge gets what `cap` leaves after the notes, the headings, its fence and the question.
    """
    tail = SEPARATOR + question_heading + "\n"
    room = cap - len(notes) - len(tail) - len(query) - _overhead(heading, tag)
    rendered = render(room) if room >= MIN_SECTION_ROOM else Rendered()
    warnings: tuple[str, ...] = ()
    if room < MIN_SECTION_ROOM and render(cap).text:
        warnings = (f"system: left out; the question leaves no room within the help cap of {cap} characters",)
    if not rendered.text:
        return Assembled(notes + tail, (), warnings)
    return Assembled(notes + SEPARATOR + _block(heading, tag, rendered.text) + tail, rendered.sources, warnings)
