"""The management plane's timestamps: ISO 8601 UTC with milliseconds, like the original."""

from __future__ import annotations

from memhub.timeutil import instant_ms, ms_to_iso, now_ms


def now_iso() -> str:
    """The current instant, `YYYY-MM-DDTHH:MM:SS.sssZ` (sorts as text in time order)."""
    return ms_to_iso(now_ms())


def canonical(instant: str) -> str:
    """An ISO instant in the stored form, so that text order is time order (`+08:00` → `Z`, none → UTC)."""
    return ms_to_iso(instant_ms(instant))
