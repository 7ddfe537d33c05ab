"""Keeping archives of agent work small: long tool payloads cut to head and tail, oversized archives to their
first and last messages.

Both rules follow the original's defaults. A `tool_call` / `tool_result` whose content is over 2 KB (UTF-8
bytes) keeps its first and last 1 KB around a marker, cut on character boundaries, and says so in
`metadata.truncated` / `metadata.original_bytes`; user, assistant and system turns are never cut. An archive
whose messages still weigh more than 80 KB (2 x the 40 KB buffer threshold) keeps about 20 KB of messages from
its start and 20 KB from its end, whole messages only, with one `system` message in between naming how many
messages and bytes were left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Message = Mapping[str, Any]

COMPRESSIBLE_ROLES = frozenset({"tool_call", "tool_result"})
TRUNCATION_MARKER = "\n\n[... middle of this tool payload left out: only its head and tail are kept ...]\n\n"


@dataclass(frozen=True, slots=True)
class CompressLimits:
    """When a tool payload is cut and how much of it is kept (bytes)."""

    threshold_bytes: int = 2048
    head_bytes: int = 1024
    tail_bytes: int = 1024


@dataclass(frozen=True, slots=True)
class OversizeLimits:
    """When an archive is cut to its first and last messages, and how much of each end it keeps (bytes)."""

    chunk_max_bytes: int = 81_920
    head_keep_bytes: int = 20_480
    tail_keep_bytes: int = 20_480


@dataclass(frozen=True, slots=True)
class Prepared:
    """An archive's messages after compression, and which rule changed them."""

    messages: list[dict[str, Any]]
    compressed: bool  # at least one tool payload was cut
    oversized: bool  # messages between the head and the tail were left out


def message_bytes(message: Message) -> int:
    """The size a message counts for: its compact JSON in UTF-8, absent fields left out (as the original)."""
    present = {k: v for k, v in message.items() if v is not None}
    return len(json.dumps(present, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def total_bytes(messages: Sequence[Message]) -> int:
    """The summed size of messages (`message_bytes`)."""
    return sum(message_bytes(m) for m in messages)


def _head(data: bytes, size: int) -> str:
    """At most `size` leading bytes, ending before any character they would split."""
    end = min(size, len(data))
    while 0 < end < len(data) and data[end] & 0xC0 == 0x80:  # a continuation byte: the character started earlier
        end -= 1
    return data[:end].decode("utf-8")


def _tail(data: bytes, size: int) -> str:
    """At most `size` trailing bytes, starting after any character they would split."""
    start = max(len(data) - size, 0)
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:].decode("utf-8")


def compress_message(message: Message, limits: CompressLimits = CompressLimits()) -> dict[str, Any]:
    """The message with an over-long tool payload cut to head + marker + tail (a copy; the input is untouched)."""
    out = dict(message)
    content = message.get("content")
    if message.get("role") not in COMPRESSIBLE_ROLES or not isinstance(content, str):
        return out
    data = content.encode("utf-8")
    if len(data) <= limits.threshold_bytes:
        return out
    out["content"] = _head(data, limits.head_bytes) + TRUNCATION_MARKER + _tail(data, limits.tail_bytes)
    out["metadata"] = {**(message.get("metadata") or {}), "truncated": True, "original_bytes": len(data)}
    return out


def is_truncated(message: Message) -> bool:
    """Whether `compress_message` cut this message."""
    metadata = message.get("metadata")
    return isinstance(metadata, Mapping) and metadata.get("truncated") is True


def apply_oversize(messages: Sequence[Message], limits: OversizeLimits = OversizeLimits()) -> Prepared:
    """Messages over `chunk_max_bytes` cut to a head and a tail of whole messages around a placeholder.

    Each end keeps at least one message, however large, so the archive always shows how the work started and
    how it ended; when head and tail together cover everything, nothing is left out.
    """
    items = [dict(m) for m in messages]
    if total_bytes(items) <= limits.chunk_max_bytes:
        return Prepared(items, compressed=False, oversized=False)
    sizes = [message_bytes(m) for m in items]
    head_end, used = 0, 0
    for size in sizes:
        if head_end and used + size > limits.head_keep_bytes:
            break
        head_end, used = head_end + 1, used + size
        if used >= limits.head_keep_bytes:
            break
    tail_start, used = len(items), 0
    for index in range(len(items) - 1, head_end - 1, -1):
        if tail_start < len(items) and used + sizes[index] > limits.tail_keep_bytes:
            break
        tail_start, used = index, used + sizes[index]
        if used >= limits.tail_keep_bytes:
            break
    left_out = items[head_end:tail_start]
    if not left_out:
        return Prepared(items, compressed=False, oversized=False)
    omitted_bytes = sum(sizes[head_end:tail_start])
    placeholder = {
        "role": "system",
        "content": f"[{len(left_out)} messages ({omitted_bytes} bytes) in the middle of this work were left out]",
        "metadata": {"omitted_message_count": len(left_out), "omitted_bytes": omitted_bytes},
    }
    return Prepared([*items[:head_end], placeholder, *items[tail_start:]], compressed=False, oversized=True)


def prepare_archive(
    existing: Sequence[Message],
    incoming: Sequence[Message],
    *,
    compress: bool,
    limits: CompressLimits = CompressLimits(),
    oversize: OversizeLimits = OversizeLimits(),
) -> Prepared:
    """The buffered messages plus the new ones; with `compress`, tool payloads of the new ones are cut and the
    whole is held to the oversize rule (both only on that path, as the original)."""
    new = [compress_message(m, limits) if compress else dict(m) for m in incoming]
    compressed = compress and any(is_truncated(m) and not is_truncated(o) for m, o in zip(new, incoming, strict=True))
    combined = [dict(m) for m in existing] + new
    if not compress:
        return Prepared(combined, compressed=False, oversized=False)
    cut = apply_oversize(combined, oversize)
    return Prepared(cut.messages, compressed=compressed, oversized=cut.oversized)
