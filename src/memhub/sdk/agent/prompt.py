"""The two prompt blocks recall produces, as the original plugin's: a per-turn prepend and a stable system tail.

`prepend` changes every turn and goes before the user's text; `append_system` (persona, scene paths, the
tools guide) changes only when the memory does, so it sits at the end of the system prompt where a
provider's prompt cache can keep it. Scene paths are sorted for the same reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from memhub.formats.fence import escape_tags, neutralise
from memhub.formats.scene_navigation import navigation_paths, remove_generated

Language = Literal["en", "zh"]

READ_TOOL = "tdai_read_file"
TRUNCATED = "…"
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:T|$)")

_GUIDE = {
    "en": (
        "<memory-tools-guide>\n"
        "## Memory tools\n\n"
        "When the memories injected above are not enough to answer, you can look further:\n\n"
        "- **tdai_memory_search**: search structured memories (L1): preferences, past events, rules.\n"
        "- **tdai_conversation_search**: search the raw conversation (L0): exact wording, timelines, "
        "details; also to verify a memory.\n"
        f"- **{READ_TOOL}**: read a scene file in full, by the path listed under Scene Navigation "
        "(e.g. scene_blocks/x.md), or persona.md.\n\n"
        "### ⚠️ Call limit\n"
        "tdai_memory_search and tdai_conversation_search together: **at most 3 calls per turn**.\n"
        "- If a search finds nothing, retry with other keywords or the other tool, within the 3 calls.\n"
        "- If 3 searches find nothing, the information is not in memory: answer from what you have.\n"
        "</memory-tools-guide>"
    ),
    "zh": (
        "<memory-tools-guide>\n"
        "## 记忆工具\n\n"
        "上方注入的记忆不足以回答时，可以调用以下工具继续查找：\n\n"
        "- **tdai_memory_search**：搜索结构化记忆（L1）：偏好、历史事件、规则。\n"
        "- **tdai_conversation_search**：搜索原始对话（L0）：原话、时间线、细节，也可用来核实记忆。\n"
        f"- **{READ_TOOL}**：按 Scene Navigation 中的路径（如 scene_blocks/x.md）读取场景全文，或读取 persona.md。\n\n"
        "### ⚠️ 调用次数限制\n"
        "每轮 tdai_memory_search 与 tdai_conversation_search **合计最多 3 次**。\n"
        "- 没搜到时可换关键词或换工具重试，但总数不超过 3 次。\n"
        "- 3 次仍无结果，说明记忆中没有该信息，请直接根据已有信息回答。\n"
        "</memory-tools-guide>"
    ),
}
_SCENE_HEADER = {
    "en": f"*Scene memory index; read a scene in full with {READ_TOOL}.*",
    "zh": f"*以下是场景记忆索引，可使用 {READ_TOOL} 读取详细内容。*",
}
# The index for an agent without the kit's memory tools (a Claude Code hook): no tool named that it cannot call.
_SCENE_HEADER_NO_TOOLS = {"en": "*Scene memory index.*", "zh": "*以下是场景记忆索引。*"}


def tools_guide(language: Language = "en") -> str:
    """The `<memory-tools-guide>` block, with the ≤ 3 searches per turn rule."""
    return _GUIDE[language]


def is_injection_suspect(item: Mapping[str, Any]) -> bool:
    """Whether the gateway's pipeline flagged this memory as reading like an instruction to the agent.

    The flag is the memory's `metadata.injection_suspect` (set by the gateway's quality check when the memory is
    extracted); such a memory is data that must never be placed in a prompt.
    """
    metadata = item.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("injection_suspect") is True


def trusted_memories(items: Iterable[Any]) -> list[Mapping[str, Any]]:
    """The memories of a search answer that may go into a prompt: well-formed and not flagged as suspect."""
    return [m for m in items if isinstance(m, Mapping) and not is_injection_suspect(m)]


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, ending with an ellipsis when something was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(TRUNCATED))].rstrip() + TRUNCATED


def _one_line(text: str) -> str:
    return " ".join(text.split())


def format_memories(
    items: Sequence[Mapping[str, Any]],
    *,
    max_items: int,
    max_item_chars: int,
    max_chars: int,
    max_tokens: int | None = None,
) -> str:
    """The `<relevant-memories>` block with `[type]` tags, within the item, character and token budgets; "" if empty.

    Both layers of a recall answer go in, in the order given: an L1 memory as `- [type] content`, an L0 turn
    (`layer` "l0") as `- [conversation 2023-05-08, user] content`, marked as something said, when and by whom,
    so the model does not read a remark for an established fact. Whole memories only: one that would break a
    budget ends the list (never half a memory in the prompt). Each memory is one line with our prompt tags
    escaped (memhub.formats.fence), so it cannot close the block; memories flagged `injection_suspect` are left
    out.
    """
    head, tail = "<relevant-memories>\n", "\n</relevant-memories>"
    lines: list[str] = []
    used = len(head) + len(tail)
    tokens = estimate_tokens(head + "\n" + tail)
    for item in trusted_memories(items)[:max_items]:
        content = _one_line(str(item.get("content") or ""))
        if not content:
            continue
        tag = _conversation_tag(item) if item.get("layer") == "l0" else _one_line(str(item.get("type") or ""))
        line = f"- [{escape_tags(tag)}] " if tag else "- "
        line += escape_tags(clip(content, max_item_chars))
        line_tokens = estimate_tokens(line) + 1
        if used + len(line) + 1 > max_chars or (max_tokens is not None and tokens + line_tokens > max_tokens):
            break
        lines.append(line)
        used += len(line) + 1
        tokens += line_tokens
    if not lines:
        return ""
    return head + "\n" + "\n".join(lines) + "\n" + tail


def _conversation_tag(item: Mapping[str, Any]) -> str:
    """`conversation`, the turn's date (UTC, as the gateway answers) and its role, as far as they are known."""
    stamp = item.get("timestamp")
    date = stamp[:10] if isinstance(stamp, str) and _ISO_DATE.match(stamp) else ""
    role = _one_line(str(item.get("role") or ""))
    tag = f"conversation {date}" if date else "conversation"
    return f"{tag}, {role}" if role else tag


def scene_paths(entries: Iterable[Mapping[str, Any]], max_scenes: int) -> list[str]:
    """Distinct scene file paths in a stable (sorted) order, at most `max_scenes`; directory entries are skipped."""
    paths = {
        str(e["path"])
        for e in entries
        if isinstance(e, Mapping) and isinstance(e.get("path"), str) and e["path"] and not e["path"].endswith("/")
    }
    return sorted(paths)[:max_scenes]


def split_navigation(persona: str) -> tuple[str, list[str]]:
    """The persona without a Scene Navigation block an older gateway appended, and the scene paths it listed.

    Today's gateway returns the persona as stored and the kit lists scenes from `scenario/ls`. An older gateway's
    block carries heat, dates and summaries, so it changes whenever a scene is touched; the kit lists scene paths
    itself, sorted, so the system prompt's tail stays cacheable. Only the generated block goes: text a user
    wrote stays.
    """
    return remove_generated(persona).text, navigation_paths(persona)


def format_system(
    persona: str | None,
    scenes: Sequence[str],
    *,
    language: Language,
    max_persona_chars: int,
    tools: bool = True,
) -> str:
    """Persona (fenced, escaped), Scene Navigation (paths only) and the tools guide.

    `tools=False` leaves out the guide and the scene index's pointer to the read tool, for an agent that is not
    given the kit's memory tools.

    The persona is data written by a model or a user: inside `<user-persona>` its tags and line-leading headings
    are escaped (memhub.formats.fence), and whatever it says, it never replaces the scene index (the original plugin
    skipped the index when the persona mentioned "Scene Navigation"; a persona's text must not steer the prompt).
    """
    parts: list[str] = []
    if persona and persona.strip():
        parts.append("<user-persona>\n" + neutralise(clip(persona.strip(), max_persona_chars)) + "\n</user-persona>")
    if scenes:
        header = _SCENE_HEADER if tools else _SCENE_HEADER_NO_TOOLS
        lines = ["## 🗺️ Scene Navigation", header[language], ""]
        lines += [f"- `{escape_tags(path)}`" for path in scenes]
        parts.append("\n".join(lines))
    if tools:
        parts.append(tools_guide(language))
    return "\n\n".join(parts)


def estimate_tokens(text: str) -> int:
    """A cheap token estimate for budgets: one per CJK character, one per four other characters."""
    cjk = sum(
        1 for ch in text if "\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\ufaff"
    )
    return cjk + (len(text) - cjk + 3) // 4
