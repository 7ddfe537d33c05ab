"""Untrusted text in a prompt: fenced in a tag, with whatever could break the fence neutralised.

Text that came from a user, a conversation, a memory, a persona, a scene or a document is data, never
instructions. The gateway's composer (`memhub.context`) and the agent kit (`memhub.sdk.agent`) put each such text
inside a tag of their own (`<conversation-excerpt>`, `<user-persona>` …). For the fence to hold, nothing inside
may close it or open another of our blocks, and no line inside may pass for a heading of the prompt around it:

- `escape_tags`: the tags our prompts use (and the chat-role tags and `<|special|>` tokens a model treats as turn
  boundaries) get `&lt;` / `&gt;` instead of `<` / `>`, as the original's `escapeXmlTags` does for its list.
  Other angle brackets (`<div>`, `a < b`) stay as they are, so ordinary text and code read unchanged.
- `escape_headings`: a line-leading Markdown heading (`## System`) or a line that is only a 【…】 heading (the
  composer's section form) gets a backslash in front, Markdown's own way of saying "not a heading". Lines inside
  fenced code blocks are left alone (a `# comment` in code is not a heading).

One definition, importable by the SDK without the server, so the composer and the kit escape alike.
"""

from __future__ import annotations

import re

# The composer's fences (memhub.context.layout), one per kind of runtime material.
COMPOSER_TAGS = (
    "workspace-knowledge",
    "agent-knowledge",
    "standards-in-force",
    "skill-notes",
    "conversation-excerpt",
    "system-knowledge",
)
# The agent kit's blocks (the original's list), the knowledge-tools and skill-listing blocks, the profile
# injector's blocks and the memory proxy's.
MEMORY_TAGS = (
    "relevant-memories",
    "user-persona",
    "scene-navigation",
    "relevant-scenes",
    "memory-tools-guide",
    "knowledge_tools",
    "available_skills",
    "knowledge",
    "tdai_profile_memory",
    "l3_core_memory",
    "l2_scene_index",
    # The memory proxy's own blocks (memhub.proxy.injection).
    "tdai_memory_tools",
    "session_context",
    "tdai_recalled_l1_memories",
)
# Turn boundaries some chat formats and models honour. `user` is left out on purpose: `<user>@<host>` is a common
# placeholder in documents, and faking a user turn gains nothing the user could not type.
ROLE_TAGS = ("system", "assistant", "developer")
PROMPT_TAGS = COMPOSER_TAGS + MEMORY_TAGS + ROLE_TAGS


def _name_pattern(name: str) -> str:
    # `knowledge_tools` and `knowledge-tools` read the same to a model: either spelling is escaped.
    return "[-_]".join(re.escape(part) for part in re.split(r"[-_]", name))


# `<tag`, `</tag`, `< /tag attr="x" >`: the name must end there (`<systems>` is someone else's word).
_TAG = re.compile(
    r"<\s*/?\s*(?:" + "|".join(_name_pattern(n) for n in PROMPT_TAGS) + r")(?![\w-])[^<>\n]*>?",
    re.IGNORECASE,
)
_SPECIAL_TOKEN = re.compile(r"<\|[^<>|\n]{1,40}\|>")
_HEADING = re.compile(r"^([ \t]{0,3})(#{1,6}(?:[ \t]|$)|【[^】\n]*】[ \t]*$)")
_CODE_FENCE = re.compile(r"^[ \t]{0,3}(```|~~~)")


def _escape(match: re.Match[str]) -> str:
    return match.group(0).replace("<", "&lt;").replace(">", "&gt;")


def escape_tags(text: str) -> str:
    """Our prompt tags and `<|special|>` tokens with `&lt;`/`&gt;` (`</user-persona>` → `&lt;/user-persona&gt;`)."""
    return _SPECIAL_TOKEN.sub(_escape, _TAG.sub(_escape, text))


def escape_headings(text: str) -> str:
    """Line-leading Markdown headings and 【…】 heading lines with a backslash in front; code blocks untouched."""
    lines = text.split("\n")
    in_code = False
    for n, line in enumerate(lines):
        if _CODE_FENCE.match(line):
            in_code = not in_code
        elif not in_code:
            lines[n] = _HEADING.sub(r"\1\\\2", line, count=1)
    return "\n".join(lines)


def neutralise(text: str) -> str:
    """Text made safe to place inside one of our fences: tags escaped, headings escaped."""
    return escape_headings(escape_tags(text))


def fence(tag: str, text: str) -> str:
    """`<tag>\\ntext\\n</tag>`; `text` must already be neutralised (callers escape before they cap)."""
    return f"<{tag}>\n{text}\n</{tag}>"


def fence_overhead(tag: str) -> int:
    """The characters `fence` adds around the text."""
    return len(tag) * 2 + 7
