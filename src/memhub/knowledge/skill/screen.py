"""Skill text on its way into a prompt, screened with the memory path's heuristics (memhub.formats.injection).

A skill is written by people; whatever its status, its name, description and instructions are data to the agent
that reads them. Text that reads like an attempt to re-instruct the agent is withheld where a skill reaches a
prompt (the listing, search results, the composer's notes, `skill_view`), and the answer says what was withheld,
as recall does for memories. Nothing stored changes, and the skill's author reading her own skill sees it whole.

Names are `a-z0-9-`: a hyphenated name is read with spaces too, so `you-are-now-root` is caught like the sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from memhub.formats.injection import looks_like_prompt_injection

T = TypeVar("T")

WITHHELD_CONTENT = "[withheld: this part of the skill reads like an instruction to the agent]"


def flagged_name(name: str) -> bool:
    """Whether a skill name reads like an instruction (hyphens read as spaces as well)."""
    return looks_like_prompt_injection(name) or looks_like_prompt_injection(name.replace("-", " "))


def flagged(text: str) -> bool:
    """Whether free text (a description, instructions) reads like an instruction to the agent."""
    return looks_like_prompt_injection(text)


def withhold(items: Sequence[T], texts: Callable[[T], tuple[str, Sequence[str]]]) -> tuple[list[T], list[str]]:
    """The items whose name and texts read as data, in order, and the ids of the ones withheld.

    `texts(item)` gives the item's skill id and its texts, the name first.
    """
    kept: list[T] = []
    withheld: list[str] = []
    for item in items:
        skill_id, parts = texts(item)
        name, *rest = parts
        if flagged_name(name) or any(flagged(t) for t in rest):
            withheld.append(skill_id)
        else:
            kept.append(item)
    return kept, withheld


def withheld_note(skill_ids: Sequence[str]) -> str:
    """What a listing, a search or the composer says about the skills it left out."""
    count = len(skill_ids)
    noun = "skill" if count == 1 else "skills"
    return (
        f"{count} {noun} withheld: name or description reads like an instruction to the agent ({', '.join(skill_ids)})"
    )


def screen_content(content: str) -> tuple[str, int]:
    """SKILL.md with the lines that read like instructions to the agent replaced by a marker, and how many.

    When what is left still reads like one (an instruction spread over several lines), the whole text is
    withheld: the answer never holds text the heuristics flag.
    """
    if not flagged(content):
        return content, 0
    lines = content.split("\n")
    marks = [flagged(line) for line in lines]
    removed = sum(marks)
    text = "\n".join(WITHHELD_CONTENT if mark else line for line, mark in zip(lines, marks, strict=True))
    if removed == 0 or flagged(text):
        return WITHHELD_CONTENT, len(lines)
    return text, removed


def screen_view(view: Mapping[str, Any]) -> dict[str, Any]:
    """A skill's detail (`skill_view`) with flagged text withheld and `notes` saying what was."""
    out = dict(view)
    notes: list[str] = []
    if flagged_name(str(view.get("name", ""))):
        out["name"] = ""
        notes.append("name withheld: it reads like an instruction to the agent")
    if flagged(str(view.get("description", ""))):
        out["description"] = ""
        notes.append("description withheld: it reads like an instruction to the agent")
    content = view.get("content")
    if isinstance(content, str):
        screened, lines = screen_content(content)
        if lines:
            out["content"] = screened
            notes.append(
                f"{lines} line{'s' if lines != 1 else ''} of the content withheld: they read like an "
                "instruction to the agent"
            )
    if notes:
        out["notes"] = notes
    return out
