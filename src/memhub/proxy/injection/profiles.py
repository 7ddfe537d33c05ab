"""Agent profiles: where a block lands in a client's system prompt, and the splice that puts it there.

A client's system prompt has a structure: Claude Code's is Markdown with `# Heading` sections, CodeBuddy's and
WorkBuddy's are top-level XML tags. A profile finds the section a semantic slot names (`memory` → `# Memory`,
`<memories>`, `<workbuddy_memory_slot_1>` …) and the splice inserts each block relative to it (`before`, `after`,
`inside_prepend`, `inside_append`). A block whose slot the prompt lacks, or a client without a profile, falls back
to its point: `system.prefix` at the start of the first segment, every other system point at the end of the last.

Differences from the original's pipeline (`pipeline.ts`, `agents/*`), each on purpose:
- Every anchor is resolved on the prompt as the client sent it. The original re-parsed the prompt after each
  block, so the headings inside our own blocks (`## Rules`, `## Bound resources` …) became sections of their own
  and a later `inside_append` to `# Memory` landed inside an earlier block.
- A Markdown section runs to the next heading of the same or a higher level, so `## Types of memory` stays part of
  `# Memory`; the original split at every heading of any level. Headings inside fenced code are not headings.
- The prompt stays a list of segments (an Anthropic `system` array keeps its blocks and their `cache_control`):
  an anchor is looked up segment by segment and only the segment holding it changes; the original collapsed the
  blocks into one string on an anchor hit.
- A block is set off by blank lines (one newline for XML prompts) so it never fuses with a neighbouring line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memhub.proxy.model import Relation, Slot


@dataclass(frozen=True, slots=True)
class Section:
    """Where one section of a prompt lies (character offsets into the segment's text).

    `start`: its first character (the heading line or the open tag); `body_start`: just after the heading line or
    the open tag; `body_end`: the end of its content (before trailing blank lines, or before the close tag);
    `end`: just after it (the next section's start, or after the close tag).
    """

    key: str
    start: int
    body_start: int
    body_end: int
    end: int

    def offset(self, relation: Relation) -> int:
        """Where a block with this relation is inserted."""
        return {
            "before": self.start,
            "after": self.end,
            "inside_prepend": self.body_start,
            "inside_append": self.body_end,
        }[relation]


class AgentProfile(Protocol):
    """One client's system-prompt structure."""

    id: str
    gap: int  # newlines between a block and its neighbours: 2 (a blank line) for Markdown, 1 for XML

    def slot_key(self, slot: Slot) -> str | None:
        """The heading or tag the slot names in this client's prompt, or None when it has no such region."""
        ...

    def find(self, text: str, key: str) -> Section | None:
        """The first section with this key in `text`, or None."""
        ...

    def detect(self, text: str) -> bool:
        """Whether `text` looks like this client's system prompt."""
        ...


# -- Markdown (Claude Code) -------------------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its newline) for every line of `text`."""
    out: list[tuple[int, str]] = []
    pos = 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def _headings(text: str) -> list[tuple[int, int, str, int]]:
    """(line offset, level, heading text, offset after the line) of every heading outside fenced code."""
    found: list[tuple[int, int, str, int]] = []
    in_code = False
    for offset, line in _lines(text):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        m = _HEADING.match(line)
        if m:
            found.append((offset, len(m.group(1)), m.group(2).strip(), min(offset + len(line) + 1, len(text))))
    return found


def _trim_trailing_space(text: str, start: int, end: int) -> int:
    """`end` moved back over the whitespace that closes `text[start:end]`."""
    while end > start and text[end - 1] in " \t\r\n":
        end -= 1
    return end


@dataclass(frozen=True, slots=True)
class MarkdownProfile:
    """A prompt of `# Heading` sections; a section runs to the next heading of its level or a higher one."""

    id: str
    slots: dict[str, str | None]
    indicators: tuple[str, ...]
    gap: int = 2

    def slot_key(self, slot: Slot) -> str | None:
        """The heading text of the slot's section."""
        return self.slots.get(slot)

    def find(self, text: str, key: str) -> Section | None:
        """The first section whose heading text is `key`."""
        heads = _headings(text)
        for n, (start, level, title, body_start) in enumerate(heads):
            if title != key:
                continue
            end = len(text)
            for other_start, other_level, _, _ in heads[n + 1 :]:
                if other_level <= level:
                    end = other_start
                    break
            body_end = max(_trim_trailing_space(text, body_start, end), body_start)
            return Section(key, start, body_start, body_end, end)
        return None

    def detect(self, text: str) -> bool:
        """At least two of the client's characteristic headings."""
        return sum(1 for h in self.indicators if h in text) >= 2


# -- XML tags (CodeBuddy, WorkBuddy) ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TagProfile:
    """A prompt of top-level `<tag>…</tag>` sections from a known list; anything else is opaque text.

    As the original's parser: the known tags are scanned in order of appearance, a known tag inside another is
    part of the outer one's body, and an unclosed tag ends the scan.
    """

    id: str
    slots: dict[str, str | None]
    known: tuple[str, ...]
    indicators: tuple[str, ...]
    gap: int = 1

    def _open_tag(self) -> re.Pattern[str]:
        names = "|".join(re.escape(t) for t in self.known)
        return re.compile(rf"<({names})(?:\s[^>]*?)?>")

    def slot_key(self, slot: Slot) -> str | None:
        """The tag name of the slot's section."""
        return self.slots.get(slot)

    def find(self, text: str, key: str) -> Section | None:
        """The first top-level section tagged `key`."""
        pattern = self._open_tag()
        pos = 0
        while True:
            m = pattern.search(text, pos)
            if m is None:
                return None
            tag = m.group(1)
            close = f"</{tag}>"
            close_at = text.find(close, m.end())
            if close_at < 0:
                return None
            if tag == key:
                return Section(key, m.start(), m.end(), close_at, close_at + len(close))
            pos = close_at + len(close)

    def detect(self, text: str) -> bool:
        """At least two of the client's characteristic markers."""
        return sum(1 for h in self.indicators if h in text) >= 2


# The slot maps are the original's (agents/*/profile.ts); `knowledge` shares the memory region and goes after it.
CLAUDE_CODE = MarkdownProfile(
    "claude-code",
    {
        "persona": None,
        "tools": None,  # Claude Code's tools are in the request's `tools`, not in its prompt
        "skills": "Session-specific guidance",
        "memory": "Memory",
        "knowledge": "Memory",
        "rules": "Harness",
        "task_context": "Environment",
    },
    ("# Memory", "# Environment", "# Harness", "# Context management"),
)

CODEBUDDY = TagProfile(
    "codebuddy",
    {
        "persona": None,
        "tools": "mcp_protocol",
        "skills": "agent_skills",
        "memory": "memories",
        "knowledge": "memories",
        "rules": "rules",
        "task_context": "project_context",
    },
    (
        "content_policy",
        "communication",
        "tool_calling",
        "maximize_parallel_tool_calls",
        "maximize_context_understanding",
        "code-explorer_subagent_usage",
        "making_code_changes",
        "citing_code",
        "inline_line_numbers",
        "task_management",
        "mcp_protocol",
        "integrations_protocol",
        "response_language",
        "agent_skills",
        "automations",
        "memories",
        "rules",
        "project_context",
        "cb_summary",
        "conversation_history_summary",
        "additional_data",
        "system_reminder",
        "user_info",
        "git_status",
        "open_and_recently_viewed_files",
        "always_applied_workspace_rules",
        "available_skills",
        "skill",
        "name",
        "description",
        "location",
    ),
    ("<agent_skills>", "<making_code_changes>", "<maximize_parallel_tool_calls>"),
)

WORKBUDDY = TagProfile(
    "workbuddy",
    {
        "persona": None,
        "tools": "mcp_configuration",
        "skills": "agent_skills",
        "memory": "workbuddy_memory_slot_1",
        "knowledge": "workbuddy_memory_slot_1",
        "rules": None,
        "task_context": None,
    },
    (
        "workbuddy_memory_slot_1",
        "working_memory",
        "user_local_memory",
        "user_memory",
        "content_policy",
        "personal_files_safety",
        "working_modes",
        "agent_loop",
        "result_presentation",
        "sharing_files",
        "final_answer_instructions",
        "automations",
        "tool_use",
        "tool_usage_policy",
        "asking_questions",
        "task_management",
        "instructions_for_visualizer",
        "visualizer_examples",
        "regional_conventions",
        "response_language",
        "mcp_configuration",
        "expert_management",
        "agent_skills",
        "examples",
        "example",
    ),
    ("www.workbuddy.cn", ".workbuddy", "<working_modes>", "<personal_files_safety>", "<visualizer_examples>"),
)

PROFILES: dict[str, AgentProfile] = {p.id: p for p in (CLAUDE_CODE, CODEBUDDY, WORKBUDDY)}
FALLBACK_GAP = 2


def profile_for(agent_source: str, segments: Sequence[str]) -> AgentProfile | None:
    """The client's profile by the path's agent source, else the one whose markers the prompt carries."""
    found = PROFILES.get(agent_source)
    if found is not None:
        return found
    text = "\n".join(segments)
    for candidate in (WORKBUDDY, CODEBUDDY, CLAUDE_CODE):  # WorkBuddy shares tags with CodeBuddy: tested first
        if candidate.detect(text):
            return candidate
    return None


# -- the splice ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Placement:
    """One block's text, resolved to a slot section or to a point (`prefix` / `suffix`)."""

    text: str
    slot: Slot | None
    relation: Relation
    prefix: bool  # its point is system.prefix (used only when the slot does not resolve)


def _trailing_newlines(text: str) -> int:
    return len(text) - len(text.rstrip("\n"))


def _leading_newlines(text: str) -> int:
    return len(text) - len(text.lstrip("\n"))


def _build(segment: str, inserts: Sequence[tuple[int, int, str, int]]) -> str:
    """The segment with each (offset, order, text, gap) inserted, in offset then placement order; each text is
    set off from what precedes and follows it by `gap` newlines (counting those already there)."""
    out: list[str] = []
    pos = 0
    for offset, _, text, gap in sorted(inserts, key=lambda i: (i[0], i[1])):
        out.append(segment[pos:offset])
        pos = offset
        before = "".join(out)
        lead = max(gap - _trailing_newlines(before), 0) if before else 0
        rest = segment[offset:]
        trail = max(gap - _leading_newlines(rest), 0) if rest else 0
        out.append("\n" * lead + text + "\n" * trail)
    out.append(segment[pos:])
    return "".join(out)


def splice(segments: Sequence[str], placements: Sequence[Placement], profile: AgentProfile | None) -> list[str]:
    """The segments with every placement inserted; as many segments as given (one when none was given)."""
    if not placements:
        return list(segments) if segments else [""]
    if not segments:
        return ["\n\n".join(p.text for p in placements)]
    inserts: list[list[tuple[int, int, str, int]]] = [[] for _ in segments]
    for order, placement in enumerate(placements):
        key = profile.slot_key(placement.slot) if profile is not None and placement.slot is not None else None
        section: tuple[int, Section] | None = None
        if profile is not None and key is not None:
            for n, segment in enumerate(segments):
                found = profile.find(segment, key)
                if found is not None:
                    section = (n, found)
                    break
        if section is not None and profile is not None:
            n, found = section
            inserts[n].append((found.offset(placement.relation), order, placement.text, profile.gap))
        elif placement.prefix:
            inserts[0].append((0, order, placement.text, FALLBACK_GAP))
        else:
            last = len(segments) - 1
            inserts[last].append((len(segments[last]), order, placement.text, FALLBACK_GAP))
    return [_build(segment, ins) if ins else segment for segment, ins in zip(segments, inserts, strict=True)]
