"""What every OpenAI-compatible provider client (embeddings, chat) reads from an HTTP answer the same way."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

SNIPPET_CHARS = 200


@dataclass(frozen=True, slots=True)
class Clock:
    """Where a provider call reads the time its budget is measured in and waits between attempts.

    Tests pass a fake one to check the budget rules without depending on how fast the machine is; an
    attempt's socket timeouts and body deadline stay in real time either way.
    """

    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


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


class ProviderTimeout(Exception):
    """No complete answer in time (`kind`: the httpx exception's name)."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class ProviderUnreachable(Exception):
    """Refused, reset, closed without a response, DNS …; `detail` may hold the URL (redact it)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class ProviderBroken(Exception):
    """The request could not be made at all (a closed client, a malformed request): retrying will not help."""


class ResponseTooLarge(ProviderBroken):
    """A runaway provider: the body passed the size limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response larger than {limit} bytes")


def post_json(
    client: httpx.Client, url: str, payload: bytes, *, timeout_s: float, deadline: float, max_bytes: int
) -> tuple[int, bytes, httpx.Headers]:
    """POST a JSON body and read the whole answer by `deadline` (monotonic): (status, body, headers)."""
    try:
        with client.stream(
            "POST", url, content=payload, headers={"Content-Type": "application/json"}, timeout=httpx.Timeout(timeout_s)
        ) as response:
            content = _read_body(response, deadline, max_bytes)
            return response.status_code, content, response.headers
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(type(exc).__name__) from None
    except httpx.TransportError as exc:
        raise ProviderUnreachable(type(exc).__name__, str(exc)) from None
    except httpx.HTTPError as exc:
        raise ProviderBroken(f"request failed ({type(exc).__name__})") from None
    except RuntimeError as exc:  # httpx: "Cannot send a request, as the client has been closed."
        raise ProviderBroken(str(exc)) from None


def _read_body(response: httpx.Response, deadline: float, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(max_bytes)
        chunks.append(chunk)
        if time.monotonic() > deadline:
            # httpx timeouts are per socket operation; this check bounds the whole body.
            raise httpx.ReadTimeout("response body not complete by the deadline")
    return b"".join(chunks)
