"""What the user typed, out of a turn's last user message: the text the proxy captures and reads `mem:` commands
from.

Coding agents put much more than the user's words into a user message: system reminders, workspace metadata, tool
output echoed back, slash-command wrappers, and, behind this proxy, the blocks the proxy itself injected. Capturing
any of that would feed the agent's harness (or memhub's own recall) back into memory. The original proxy strips
the same kinds of noise before its L0 write; the shared sanitize rules (memhub.formats.sanitize) run last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memhub.formats.sanitize import sanitize_text, should_capture_l0

# Blocks the proxy injects (and the original's), which must never come back as captured user text.
INJECTED_TAGS = (
    "tdai_profile_memory",
    "tdai_memory_tools",
    "available_skills",
    "knowledge_tools",
    "session_context",
    "relevant-memories",
    "tdai_recalled_l1_memories",
    "tdai_injections",
    "skill_tools",
    "memory-tools-guide",
)
# Wrappers clients put into user messages around what the user did not type.
CLIENT_TAGS = (
    "system-reminder",
    "system_reminder",
    "additional_data",
    "user_info",
    "open_and_recently_viewed_files",
    "persisted-output",
    "persisted_output",
    "tool_use_error",
    "tool-use-error",
    "tool_result",
    "tool-result",
    "question_answer",
    "local-command-stdout",
    "local-command-stderr",
)
_BLOCKS = re.compile(
    r"<(" + "|".join(re.escape(t) for t in (*INJECTED_TAGS, *CLIENT_TAGS)) + r")(?:\s[^>]*)?>[\s\S]*?</\1\s*>",
    re.IGNORECASE,
)
_USER_QUERY = re.compile(r"<user_query>([\s\S]*?)</user_query>", re.IGNORECASE)
# A Claude Code slash command arrives as `<command-name>/x</command-name>…`: a command, not something said.
_SLASH_COMMAND = re.compile(r"<command-name>", re.IGNORECASE)
# Requests a client makes in the user role for its own purposes (suggestions, titles, summaries, recaps, answers
# to its own question forms, replays of its log): never the user's words. Anchored at the start.
_CLIENT_PROMPTS = (
    re.compile(
        r"^\s*\[(?:SUGGESTION|TITLE|SUMMARY|COMPACT|COMPACTION|ANALYSIS|EVAL|RECAP|MEMORY|SIDECHAIN)\s+MODE[:\s]",
        re.IGNORECASE,
    ),
    re.compile(r"^\s*The user stepped away and is coming back\.\s*Recap", re.IGNORECASE),
    re.compile(r"^\s*Your questions have been answered:\s*\"", re.IGNORECASE),
    re.compile(r"^\s*\d*\s*\{\"parentUuid\""),
    re.compile(r"^\s*\[\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[^\]]*\]\[(?:user|assistant|system)\]"),
)
# Tool output a client echoes into the user message, one line at a time.
_ECHO_LINES = (
    re.compile(r"^\s*The file .+ has been (?:updated|created) successfully", re.IGNORECASE),
    re.compile(r"^\s*File created successfully at:", re.IGNORECASE),
    re.compile(r"^\s*\(Bash completed with no output\)\s*$"),
    re.compile(r"^\s{0,6}\d+\t"),  # a `cat -n` line of a file the agent read
)


@dataclass(frozen=True, slots=True)
class UserText:
    """The user's words in a message (`""` when it holds none, e.g. a tool loop's continuation), and whether the
    turn is not the user's at all (a slash command, a client's own prompt, framework noise) and is not captured."""

    text: str
    skip: bool = False


def clean_user_text(raw: str) -> UserText:
    """The typed text of a user message, with injected blocks, client wrappers and echoed tool output removed."""
    if any(p.match(raw) for p in _CLIENT_PROMPTS) or _SLASH_COMMAND.search(raw):
        return UserText("", skip=True)
    queries = [q.strip() for q in _USER_QUERY.findall(raw) if q.strip()]
    text = "\n\n".join(queries) if queries else _BLOCKS.sub("", raw)
    text = "\n".join(line for line in text.split("\n") if not any(p.match(line) for p in _ECHO_LINES))
    text = sanitize_text(text)
    if not text:
        return UserText("")
    return UserText(text) if should_capture_l0(text) else UserText("", skip=True)
