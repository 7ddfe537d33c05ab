"""Time helpers: one canonical ISO form (`YYYY-MM-DDTHH:MM:SS.sssZ`) and epoch milliseconds."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

# A date, a time and an explicit zone; date-only or zone-less values are ambiguous and refused.
_ISO_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})$")


def now_ms() -> int:
    """Current time in epoch milliseconds."""
    return int(time.time() * 1000)


def ms_to_iso(ms: int) -> str:
    """Epoch milliseconds → canonical ISO string in UTC with millisecond precision."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def parse_iso_ms(value: str) -> int | None:
    """ISO 8601 instant with a zone → epoch ms; None when the value is not such an instant."""
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
        return None
    return int(dt.timestamp() * 1000)
