"""From a framework's message list to what capture sends: this turn's cleaned user/assistant messages, in batches.

Capture, as the original plugin does it: slice the messages added since the prompt was built (or, failing that,
those newer than the session's timestamp cursor), keep user/assistant text, swap the recall-polluted user message
for the original prompt, sanitize, strip assistant code blocks, drop noise, then fit what is left to the gateway's
limits (content ≤ 8192 characters, ≤ 100 messages a call, a body under 1 MiB).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from memhub.formats.sanitize import sanitize_text, should_capture_l0, strip_code_blocks
from memhub.sdk._messages import IMAGE_PLACEHOLDER, extract_text, message_field

Role = Literal["user", "assistant"]
WireT = TypeVar("WireT", bound=Mapping[str, Any])

# Rule 12 takes any bracketed word at a line start for a timestamp, so the original loses "[image]" whenever an
# image comes first. It is shielded behind private-use characters while the rules run.
_IMAGE_SHIELD = "\ue000image\ue000"
SERVER_MAX_CONTENT_CHARS = 8192
SERVER_MAX_BATCH = 100
# The gateway refuses bodies over 1 MiB; the rest of the body (ids, idempotency key) fits in what is left.
DEFAULT_MAX_BATCH_BYTES = 960 * 1024

# Tags our own recall injects into the user message (the original plugin's); their presence marks the polluted prompt.
_INJECTION_MARKERS = (
    "<relevant-memories>",
    "<user-persona>",
    "<relevant-scenes>",
    "<scene-navigation>",
    "<memory-tools-guide>",
    "<current_task_context>",
    "<history_task_context",
)
# Below this an epoch number is read as seconds (1e11 s is the year 5138), above it as milliseconds (1973 on).
_EPOCH_MS_THRESHOLD = 1e11


@dataclass(frozen=True, slots=True)
class TurnMessage:
    """One cleaned message ready for L0; `timestamp` is timezone-aware UTC."""

    role: Role
    content: str
    timestamp: datetime


@dataclass(frozen=True, slots=True)
class CapturedTurn:
    """What `select_turn` kept, the newest timestamp among it (the next cursor) and how many it left out."""

    messages: list[TurnMessage]
    max_timestamp: datetime | None
    skipped: int


def parse_timestamp(value: object) -> datetime | None:
    """A message timestamp (epoch s or ms, ISO string, datetime) as aware UTC; None when absent or unreadable."""
    if isinstance(value, datetime):
        return _as_utc(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            return _from_epoch(float(text))
        except ValueError:
            pass
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return _as_utc(parsed)
    return None


def _as_utc(moment: datetime) -> datetime | None:
    # A naive datetime has no zone to go by; UTC is the only reading that does not depend on the host.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-14:00 is year 10000 in UTC: no instant the gateway stores
        return None


def _from_epoch(number: float) -> datetime | None:
    if not math.isfinite(number):
        return None
    seconds = number / 1000 if abs(number) >= _EPOCH_MS_THRESHOLD else number
    try:
        return datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass(slots=True)
class _Candidate:
    role: Role
    text: str
    timestamp: datetime


def select_turn(
    messages: Sequence[object],
    *,
    since_index: int | None,
    after_timestamp: datetime | None,
    original_user_text: str | None,
    now: datetime | None = None,
) -> CapturedTurn:
    """This turn's user/assistant messages, restored, sanitized and filtered, ready for `fit_to_server_limits`.

    `messages[since_index:]` is the turn when `0 <= since_index <= len(messages)`; otherwise messages newer
    than `after_timestamp` (a message without a readable timestamp cannot be placed against the cursor and is
    left out), or every message when there is no cursor either. Messages without a timestamp get `now`.
    `skipped` counts the turn's messages left out: other roles, no text, untimed under the cursor, noise.
    """
    now = now or datetime.now(UTC)
    positional = since_index is not None and 0 <= since_index <= len(messages)
    cursor = None if positional or after_timestamp is None else parse_timestamp(after_timestamp)
    window = messages[since_index:] if positional else messages

    candidates: list[_Candidate] = []
    considered = 0
    for message in window:
        stamp = parse_timestamp(message_field(message, "timestamp"))
        if cursor is not None and stamp is not None and stamp <= cursor:
            continue  # captured by an earlier turn: neither part of this turn nor skipped
        considered += 1
        role = message_field(message, "role")
        if role not in ("user", "assistant") or (cursor is not None and stamp is None):
            continue
        # Surrounding whitespace is dropped here, as the original does, so an assistant message holding only
        # tool calls ends up empty and is left out.
        text = extract_text(message_field(message, "content")).strip()
        if text:
            candidates.append(_Candidate(role, text, stamp or now))

    if original_user_text and extract_text(original_user_text).strip():
        _restore_original(candidates, original_user_text, newest_first=not positional)

    kept: list[TurnMessage] = []
    for candidate in candidates:
        text = sanitize_text(candidate.text.replace(IMAGE_PLACEHOLDER, _IMAGE_SHIELD))
        if candidate.role == "assistant":
            text = strip_code_blocks(text)
        text = text.replace(_IMAGE_SHIELD, IMAGE_PLACEHOLDER)
        if should_capture_l0(text):
            kept.append(TurnMessage(candidate.role, text, candidate.timestamp))
    newest = max((m.timestamp for m in kept), default=None)
    return CapturedTurn(messages=kept, max_timestamp=newest, skipped=considered - len(kept))


def _restore_original(candidates: list[_Candidate], original: str, *, newest_first: bool) -> None:
    """Put the cached prompt back in place of the user message our recall injection polluted.

    The original matches by the timestamp of `messages[since_index]`, which fails whenever timestamps are
    missing or only the cursor is known. Matching by content works in both cases: first a user message that is
    the prompt behind a prefix which sanitizes to nothing (our recall block, a platform timestamp), else one
    carrying our injection tags. Under the cursor the window may span several turns, and the newest such
    message belongs to this one.
    """
    wanted = extract_text(original).strip()
    users = [c for c in candidates if c.role == "user"]
    if newest_first:
        users.reverse()
    target = next(
        (c for c in users if c.text.endswith(wanted) and not sanitize_text(c.text[: -len(wanted)])),
        None,
    )
    if target is None:
        target = next((c for c in users if any(marker in c.text for marker in _INJECTION_MARKERS)), None)
    if target is not None:
        target.text = wanted


def iso_utc(moment: datetime) -> str:
    """`moment` as the wire's ISO 8601 UTC form with milliseconds, like JavaScript's `toISOString()`."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
        f".{utc.microsecond // 1000:03d}Z"
    )


def truncate_content(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters: the head, then a visible "…[truncated N chars]" marker."""
    if len(text) <= limit:
        return text
    removed = len(text) - limit
    # The marker's own length depends on N; each round only grows N, so this settles within a few steps.
    while True:
        marker = f"…[truncated {removed} chars]"
        keep = limit - len(marker)
        if keep <= 0:
            return text[:limit]  # a limit too small for the marker: a bare cut still fits
        if len(text) - keep == removed:
            return text[:keep] + marker
        removed = len(text) - keep


def fit_to_server_limits(
    messages: Sequence[TurnMessage],
    *,
    max_content_chars: int = SERVER_MAX_CONTENT_CHARS,
    max_batch: int = SERVER_MAX_BATCH,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> list[list[dict[str, str]]]:
    """Wire batches for `/v3/conversation/add`: oversized content truncated, never rejected; order kept.

    Batched as `batched` does. Messages with empty content are left out, since the gateway would refuse the whole
    call for one.
    """
    if max_content_chars < 1:
        raise ValueError("max_content_chars, max_batch and max_batch_bytes must be positive")
    wires = [
        {
            "role": message.role,
            "content": truncate_content(message.content, max_content_chars),
            "timestamp": iso_utc(message.timestamp),
        }
        for message in messages
        if message.content
    ]
    return batched(wires, max_batch=max_batch, max_batch_bytes=max_batch_bytes)


def batched(
    wires: Iterable[WireT], *, max_batch: int = SERVER_MAX_BATCH, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
) -> list[list[WireT]]:
    """Wire messages grouped, in order, into `/v3/conversation/add` calls the gateway accepts.

    A batch holds at most `max_batch` messages and, measured as JSON with every non-ASCII character escaped
    (the largest any client sends), at most `max_batch_bytes`; a single message always forms a batch of its
    own.
    """
    if max_batch < 1 or max_batch_bytes < 1:
        raise ValueError("max_content_chars, max_batch and max_batch_bytes must be positive")
    batches: list[list[WireT]] = []
    batch: list[WireT] = []
    size = 0
    for wire in wires:
        # +1 for the comma between array items.
        wire_size = len(json.dumps(wire, ensure_ascii=True)) + 1
        if batch and (len(batch) >= max_batch or size + wire_size > max_batch_bytes):
            batches.append(batch)
            batch, size = [], 0
        batch.append(wire)
        size += wire_size
    if batch:
        batches.append(batch)
    return batches


def recent_turns(messages: Sequence[object], limit: int, max_content_chars: int) -> list[dict[str, str]]:
    """The last `limit` user/assistant messages with text, oldest first, as recall's context: `{role, content}`.

    The same reading as capture's (text parts joined, images as `[image]`, sanitized, so a user message still
    carrying last turn's `<relevant-memories>` does not feed them back as context), cut to the gateway's limit
    per message. Other roles and messages left without text are skipped, not counted.
    """
    picked: list[dict[str, str]] = []
    for message in reversed(messages):
        if len(picked) >= limit:
            break
        role = message_field(message, "role")
        if role not in ("user", "assistant"):
            continue
        text = sanitize_text(extract_text(message_field(message, "content")).replace(IMAGE_PLACEHOLDER, _IMAGE_SHIELD))
        text = text.replace(_IMAGE_SHIELD, IMAGE_PLACEHOLDER).strip()
        if text:
            picked.append({"role": role, "content": truncate_content(text, max_content_chars)})
    picked.reverse()
    return picked
