"""Time helpers: one canonical ISO form (`YYYY-MM-DDTHH:MM:SS.sssZ`) and epoch milliseconds.

Every instant memhub stores lies in years 1–9999 in UTC, the range `datetime` can represent: a value
outside it (`9999-12-31T23:59:59-14:00` is year 10000 in UTC) is refused at the edge, and one that
reached the store anyway is rendered clamped to the range rather than failing the read.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

# A date and a time, with or without a zone; a value without one is read as UTC.
_ISO_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)

MIN_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS  # 0001-01-01T00:00:00.000Z
MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) // _MS  # 9999-12-31T23:59:59.999Z

FORMAT_RULE = "must be an ISO 8601 instant, e.g. 2026-01-31T09:30:00Z (without a zone it is read as UTC)"
RANGE_RULE = "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z in UTC"


def now_ms() -> int:
    """Current time in epoch milliseconds."""
    return int(time.time() * 1000)


def in_range(ms: int) -> bool:
    """Whether epoch milliseconds lie in years 1–9999 (UTC), the range every stored instant must have."""
    return MIN_MS <= ms <= MAX_MS


def clamp_ms(ms: int) -> int:
    """`ms` moved into years 1–9999, so that a stray stored value still renders."""
    return min(max(ms, MIN_MS), MAX_MS)


def ms_to_datetime(ms: int) -> datetime:
    """Epoch milliseconds → aware UTC datetime (clamped to years 1–9999)."""
    return _EPOCH + clamp_ms(ms) * _MS


def ms_to_iso(ms: int) -> str:
    """Epoch milliseconds → canonical ISO string in UTC with millisecond precision (clamped to years 1–9999)."""
    dt = ms_to_datetime(ms)
    # Formatted by hand: strftime's %Y does not pad years below 1000 on every platform.
    return (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
        f".{dt.microsecond // 1000:03d}Z"
    )


def parse_iso_ms(value: str) -> int | None:
    """ISO 8601 date and time → epoch ms (no zone: UTC); None when the value is not such an instant.

    The result may lie outside years 1–9999 (an offset can push `9999-12-31T23:59:59` past it); callers
    that store it check `in_range` (see `instant_ms`).
    """
    if not isinstance(value, str) or not _ISO_INSTANT.match(value.strip()):
        return None
    text = value.strip().replace("z", "Z").replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    # Python accepts at most 6 fractional digits; extra precision below a microsecond is dropped.
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    # Integer arithmetic on the wall time and the offset apart: exact to the millisecond, and defined even
    # where the UTC instant itself has no datetime (year 0 or 10000).
    offset = dt.utcoffset() or timedelta(0)
    return (dt.replace(tzinfo=None) - _NAIVE_EPOCH) // _MS - offset // _MS


def instant_ms(value: str) -> int:
    """A request's ISO instant → epoch ms in years 1–9999; ValueError names the rule it breaks."""
    ms = parse_iso_ms(value)
    if ms is None:
        raise ValueError(FORMAT_RULE)
    if not in_range(ms):
        raise ValueError(RANGE_RULE)
    return ms
