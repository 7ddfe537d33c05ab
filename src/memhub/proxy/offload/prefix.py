"""The compacted prefix a session re-sends: what it stands for, and the cache breakpoints it carries.

A client sends its whole history each turn, never knowing the proxy compacted it. Once the proxy has sent a
compacted context, the next request's history starts with the same messages as the one compacted, plus what
came since: the proxy sends its compacted version of those messages again, byte for byte, and the new ones as
the client wrote them, so the provider's prompt cache hits on everything before them.

Anthropic's cache breakpoints (`cache_control` on a content block) move with each turn: a client marks its
newest messages and unmarks the older ones. Inside the compacted prefix the client's markers are therefore
replaced by one marker on the prefix's last block, the boundary of what stays the same (the request's own
markers after the prefix are left as they are), so the prefix is byte-identical from turn to turn. A request
never carries more breakpoints than the client sent (Anthropic takes at most four): when the client marked
nothing inside the prefix and already uses all four, the prefix goes unmarked and the provider finds it by
looking back from the client's next breakpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.model.offload import CompactionLevel
from memhub.offload import messages as fmt
from memhub.offload.tokens import message_digest

BREAKPOINT = "cache_control"
MAX_BREAKPOINTS = 4  # Anthropic's limit per request
# Blocks a breakpoint may be put on (Anthropic refuses one on thinking blocks).
_MARKABLE = frozenset({"text", "image", "document", "tool_use", "tool_result", "search_result"})
LEVEL_RANK: dict[CompactionLevel, int] = {"fastpath": 0, "mild": 1, "aggressive": 2, "emergency": 3}


@dataclass(frozen=True, slots=True)
class CompactedPrefix:
    """The compacted form of a session's first `count` messages, as last sent.

    `digest` identifies those messages as the client sends them (breakpoints aside); `messages` are their
    compacted form without breakpoints; `marker` is the breakpoint the prefix ends with (the client's last one
    when it was compacted; None when it had none); `tokens` is what `messages` count; `level` is the compaction
    level the context was at once compacted: the prefix is reused while the context stays at or below it.
    """

    count: int
    digest: bytes
    messages: tuple[dict[str, Any], ...]
    marker: Any
    tokens: int
    level: CompactionLevel

    def matches(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether `messages` start with the messages this prefix was made from."""
        return len(messages) >= self.count and history_digest(messages[: self.count]) == self.digest

    def resend(self, messages: Sequence[Mapping[str, Any]], breakpoints_sent: int) -> list[dict[str, Any]]:
        """The request's messages with the prefix in their place: the compacted ones, then the request's own.

        `breakpoints_sent` is how many breakpoints the client's whole request carries (system and tools too).
        """
        replaced = breakpoint_in(messages[: self.count]) is not None
        marker = self.marker if replaced or breakpoints_sent < MAX_BREAKPOINTS else None
        return with_prefix_breakpoint(self.messages, marker) + [dict(m) for m in messages[self.count :]]


def history_digest(messages: Sequence[Mapping[str, Any]]) -> bytes:
    """A digest of messages as sent, breakpoints aside: equal for the same history on any later turn."""
    running = hashlib.blake2b(digest_size=16)
    for message in messages:
        running.update(message_digest(without_breakpoints(message)))
    return running.digest()


def without_breakpoints(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message without `cache_control` on its blocks (the message itself when it has none)."""
    inner = fmt.body(message)
    content = inner.get("content")
    if not isinstance(content, list) or not any(isinstance(b, Mapping) and BREAKPOINT in b for b in content):
        return dict(message)
    blocks = [
        {k: v for k, v in block.items() if k != BREAKPOINT} if isinstance(block, Mapping) else block
        for block in content
    ]
    changed = {**inner, "content": blocks}
    return {**message, "message": changed} if inner is not message else changed


def breakpoint_in(messages: Sequence[Mapping[str, Any]]) -> Any:
    """The last breakpoint the client put on these messages' blocks (None when it put none)."""
    for message in reversed(messages):
        content = fmt.body(message).get("content")
        for block in reversed(content if isinstance(content, list) else ()):
            if isinstance(block, Mapping) and BREAKPOINT in block:
                return block[BREAKPOINT]
    return None


def breakpoint_count(node: Any) -> int:
    """How many breakpoints a request (or any part of one) carries."""
    if isinstance(node, list):
        return sum(breakpoint_count(item) for item in node)
    if isinstance(node, Mapping):
        own = 1 if isinstance(node.get(BREAKPOINT), Mapping) else 0
        return own + sum(breakpoint_count(value) for value in node.values() if isinstance(value, list | Mapping))
    return 0


def with_prefix_breakpoint(messages: Sequence[Mapping[str, Any]], marker: Any) -> list[dict[str, Any]]:
    """The messages without their breakpoints, and `marker` (when given) on the last block that can carry one."""
    out = [without_breakpoints(message) for message in messages]
    if marker is None:
        return out
    for position in reversed(range(len(out))):
        marked = _marked(out[position], marker)
        if marked is not None:
            out[position] = marked
            return out
    return out


def _marked(message: dict[str, Any], marker: Any) -> dict[str, Any] | None:
    """The message with `marker` on its last markable block (a text content becomes one text block)."""
    inner = fmt.body(message)
    content = inner.get("content")
    if isinstance(content, str) and content:
        blocks: list[Any] = [{"type": "text", "text": content, BREAKPOINT: marker}]
    elif isinstance(content, list):
        at = next(
            (
                i
                for i in reversed(range(len(content)))
                if isinstance(content[i], Mapping) and content[i].get("type") in _MARKABLE
            ),
            None,
        )
        if at is None:
            return None
        blocks = list(content)
        blocks[at] = {**content[at], BREAKPOINT: marker}
    else:
        return None
    changed = {**inner, "content": blocks}
    return {**message, "message": changed} if inner is not message else changed
