"""Claude Code's session transcript (a JSONL file it appends to) read from a byte position: the conversation's
user and assistant messages, each with the position just after it.

Each line is one entry. The conversation's are `{"type": "user"|"assistant", "message": {"role", "content"},
"timestamp", "uuid", ...}`; everything else (summaries, system notes, file snapshots, hook attachments) is left
out, and so are sub-agent entries (`isSidechain`), meta entries Claude Code adds itself (`isMeta`, e.g. a slash
command's expansion) and user entries that only carry tool results. Claude Code writes one assistant entry per
content block of a reply (thinking, text, tool use, each a line with the same `message.id`); their text is joined
into one message. Only whole lines are read: a line still being written is left for the next read.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub.sdk._messages import extract_text

# A transcript grows by a turn at a time; a read this large is a transcript we have never seen (a resumed session),
# and what is past it waits for the next hook rather than one process holding it all in memory.
MAX_READ_BYTES = 8 * 1024 * 1024
# The window a prompt's recall reads the prompt with (a follow-up question leans on the turns before it).
RECENT_MESSAGES = 6
RECENT_TAIL_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """One conversation message: role, text, ISO timestamp (as Claude Code wrote it, or None)."""

    role: str
    content: str
    timestamp: str | None

    def wire(self) -> dict[str, Any]:
        """As `turns.select_turn` reads messages."""
        return {"role": self.role, "content": self.content, "timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class Slice:
    """The messages of the complete lines in `[start, end)`."""

    start: int
    end: int
    messages: list[TranscriptMessage]


def complete_end(path: Path, start: int, limit: int = MAX_READ_BYTES) -> int:
    """The position after the last whole line at or past `start` (at most `limit` bytes on); `start` when none."""
    with path.open("rb") as f:
        f.seek(start)
        chunk = f.read(limit)
    cut = chunk.rfind(b"\n")
    return start if cut < 0 else start + cut + 1


def size(path: Path) -> int:
    """The file's size in bytes."""
    return os.stat(path).st_size


def read_slice(path: Path, start: int, end: int) -> Slice:
    """The conversation messages of the lines in `[start, end)` (which must be whole lines)."""
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(end - start)
    messages: list[TranscriptMessage] = []
    reply_id: str | None = None
    for raw in data.splitlines():
        entry = _entry(raw)
        if entry is None:
            continue
        role, text, stamp, message_id = entry
        if role == "assistant" and message_id and message_id == reply_id and messages:
            # The next content block of the same reply.
            last = messages[-1]
            joined = f"{last.content}\n\n{text}" if last.content and text else last.content or text
            messages[-1] = TranscriptMessage("assistant", joined, last.timestamp or stamp)
            continue
        reply_id = message_id if role == "assistant" else None
        messages.append(TranscriptMessage(role, text, stamp))
    return Slice(start, end, [m for m in messages if m.content.strip()])


def recent_messages(
    path: Path, count: int = RECENT_MESSAGES, tail_bytes: int = RECENT_TAIL_BYTES
) -> list[TranscriptMessage]:
    """The transcript's last `count` conversation messages, read from its last `tail_bytes` only (a line cut at
    the start of that tail is not a whole entry, and is skipped)."""
    end = size(path)
    start = max(0, end - tail_bytes)
    return read_slice(path, start, complete_end(path, start, tail_bytes + 1)).messages[-count:]


def _entry(raw: bytes) -> tuple[str, str, str | None, str | None] | None:
    """(role, text, timestamp, message id) of a conversation entry; None for any other line."""
    try:
        entry = json.loads(raw)
    except ValueError:
        return None  # a line Claude Code did not write whole (a crash mid-write): nothing to capture in it
    if not isinstance(entry, Mapping) or entry.get("type") not in ("user", "assistant"):
        return None
    if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None
    message = entry.get("message")
    if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(p, Mapping) and p.get("type") == "tool_result" for p in content):
        return None  # a tool's answer, sent back as a user entry: not something the user said
    stamp = entry.get("timestamp")
    message_id = message.get("id")
    return (
        str(message["role"]),
        extract_text(content),
        stamp if isinstance(stamp, str) else None,
        message_id if isinstance(message_id, str) else None,
    )
