"""When a session's buffered agent work becomes an archive: the original's rule, as pure functions.

`conversation/add` appends a turn's messages to the session's buffer. The buffer is cut into an archive when
its `tool_call` messages reach 10 (only calls count: each has a paired result, and counting both would halve
the threshold) or its bytes reach 40 KB, and always when one request alone is 40 KB or more; that request's
tool payloads are then compressed and the archive held to the oversize rule. The store runs `append_rule`
inside the transaction that reads and writes the buffer, so two concurrent appends never lose a message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.knowledge.skill.mining.compress import (
    CompressLimits,
    OversizeLimits,
    Prepared,
    prepare_archive,
    total_bytes,
)
from memhub.model.skills import ArchiveDraft, ArchiveReason, BufferState, BufferUpdate

Message = Mapping[str, Any]
Decide = Callable[[list[Mapping[str, object]], BufferState], BufferUpdate]


@dataclass(frozen=True, slots=True)
class BufferLimits:
    """The archive thresholds (the original's defaults)."""

    tool_calls: int = 10
    bytes: int = 40 * 1024
    request_compress_bytes: int = 40 * 1024  # one request this large is compressed and archived at once
    compress: CompressLimits = field(default_factory=CompressLimits)
    oversize: OversizeLimits = field(default_factory=OversizeLimits)


def count_tool_calls(messages: Sequence[Message]) -> int:
    """How many messages are tool calls (results are not counted)."""
    return sum(1 for m in messages if m.get("role") == "tool_call")


def append_rule(incoming: Sequence[Message], task_ref: str | None, limits: BufferLimits = BufferLimits()) -> Decide:
    """What an append of `incoming` does to a buffer: keep the messages, or cut them into an archive."""

    def decide(existing: list[Mapping[str, object]], state: BufferState) -> BufferUpdate:
        raw = total_bytes(incoming)
        compress = raw >= limits.request_compress_bytes
        prepared = prepare_archive(
            existing, incoming, compress=compress, limits=limits.compress, oversize=limits.oversize
        )
        tool_calls = state.tool_calls + count_tool_calls(incoming)
        size = state.bytes + raw
        reason = _reason(prepared, compress, tool_calls >= limits.tool_calls, size >= limits.bytes)
        if reason is None:
            return BufferUpdate(prepared.messages, tool_calls, size)
        return BufferUpdate([], 0, 0, ArchiveDraft(prepared.messages, reason, task_ref=task_ref))

    return decide


def _reason(prepared: Prepared, compress: bool, hit_tools: bool, hit_bytes: bool) -> ArchiveReason | None:
    if prepared.oversized:
        return "oversize"
    if compress:
        return "compressed"
    if hit_tools:
        return "tool_calls"
    if hit_bytes:
        return "bytes"
    return None


def force_rule(task_ref: str | None, note: str | None) -> Decide:
    """Cut whatever the buffer holds into an archive, thresholds aside; an empty buffer stays as it is."""

    def decide(existing: list[Mapping[str, object]], state: BufferState) -> BufferUpdate:
        if not existing:
            return BufferUpdate([], state.tool_calls, state.bytes)
        draft = ArchiveDraft([dict(m) for m in existing], "forced", task_ref=task_ref, note=note)
        return BufferUpdate([], 0, 0, draft)

    return decide


def direct_archive(
    messages: Sequence[Message],
    task_ref: str | None,
    note: str | None,
    max_iterations: int | None,
    limits: BufferLimits = BufferLimits(),
) -> ArchiveDraft:
    """The archive `extract` cuts from its messages: compressed only when they reach the oversize limit."""
    compress = total_bytes(messages) >= limits.oversize.chunk_max_bytes
    prepared = prepare_archive([], messages, compress=compress, limits=limits.compress, oversize=limits.oversize)
    return ArchiveDraft(prepared.messages, "direct", task_ref=task_ref, note=note, max_iterations=max_iterations)
