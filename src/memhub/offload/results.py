"""A tool result as text: what the agent read, whatever JSON shape its client sent it in."""

from __future__ import annotations

import json
from typing import Any


def result_text(result: Any, error: str | None = None) -> str:
    """The result's text: a string as is; content blocks joined by their text; other JSON pretty-printed.

    An error comes first, on its own line, as a tool runner shows it.
    """
    body = _text(result)
    if error:
        return f"error: {error}\n{body}" if body else f"error: {error}"
    return body


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, dict) and "type" in v for v in value):
        parts = [_block(v) for v in value]
        return "\n".join(p for p in parts if p)
    return json.dumps(value, ensure_ascii=False, indent=2)


def _block(block: dict[str, Any]) -> str:
    """A content block's text (text, a nested tool_result's content); other blocks as JSON."""
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    if "content" in block:
        return _text(block["content"])
    return json.dumps(block, ensure_ascii=False)
