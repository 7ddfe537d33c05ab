"""The management plane's timestamps: ISO 8601 UTC with milliseconds, like the original."""

from __future__ import annotations

from memhub.timeutil import ms_to_iso, now_ms, parse_iso_ms


def now_iso() -> str:
    """The current instant, `YYYY-MM-DDTHH:MM:SS.sssZ` (sorts as text in time order)."""
    return ms_to_iso(now_ms())


def canonical(instant: str) -> str:
    """An ISO instant in the stored form, so that text order is time order (`+08:00` → `Z`)."""
    ms = parse_iso_ms(instant)
    if ms is None:
        raise ValueError(f"not an ISO 8601 instant with a zone: {instant!r}")
    return ms_to_iso(ms)
