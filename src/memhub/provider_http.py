"""What every OpenAI-compatible provider client (embeddings, chat) reads from an HTTP answer the same way."""

from __future__ import annotations

import json

SNIPPET_CHARS = 200


def redact(text: str, api_key: str) -> str:
    """The text with the API key masked, so no message or log line ever carries it."""
    return text.replace(api_key, "***") if api_key else text


def error_detail(content: bytes, api_key: str) -> str:
    """A short, key-free excerpt of a provider's error body (OpenAI style {"error": {"message": ...}})."""
    text = content[: 4 * SNIPPET_CHARS].decode("utf-8", "replace")
    try:
        doc = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        doc = None
    if isinstance(doc, dict):
        error = doc.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(redact(text, api_key).split())
    return text[:SNIPPET_CHARS] + ("..." if len(text) > SNIPPET_CHARS else "")


def retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; the HTTP-date form is ignored (the backoff applies)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
