"""Small helpers the SQLite store modules share."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def json_or_none(value: Any) -> str | None:
    """JSON text of a value, None for None."""
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    """Consecutive slices of at most `size` items (SQLite caps the parameters of one statement)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
