"""A gateway call without an HTTP library: the request (a path and a JSON body), the headers every request carries,
and the decoding of the answer's envelope.

The SDK's clients send these with httpx (memhub.sdk._http); a Claude Code hook, a new process per event, sends them
with the standard library (memhub.hooks.wire), so it starts without httpx and asyncio. Both build the same requests
and read answers the same way because both go through here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from memhub.sdk._errors import TDAMError, TransportError

JsonObject = dict[str, Any]
ResultT = TypeVar("ResultT", JsonObject, Awaitable[JsonObject])


# The last segment of a route that only reads (`/v3/atomic/search`, `/v3/meta/team/get`, `/v3/skill/files/read` …).
# Every other route may write (add, create, update, write, delete, clear, append, grant, publish, tools/call …).
READ_VERBS = frozenset(
    {
        "get",
        "get-by-name",
        "list",
        "list-accessible",
        "list-with-detail",
        "summary-by-agents",
        "query",
        "search",
        "count",
        "read",
        "ls",
        "recall",
        "compose",
        "tools-block",
        "listing",
        "export",
        "check",
        "verify",
    }
)


@dataclass(frozen=True, slots=True)
class Request:
    """One gateway call: a POST of `body` as JSON to `path`."""

    path: str
    body: JsonObject

    @property
    def reads(self) -> bool:
        """True for a call that only reads, so sending it twice is harmless."""
        return self.path.rsplit("/", 1)[-1] in READ_VERBS

    def encoded(self) -> bytes:
        """The body as the SDK's clients send it (httpx's encoding of `json=`: UTF-8, no spaces, no NaN)."""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def request_headers(
    api_key: str, service_id: str, *, user_key: str | None = None, extra_headers: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What every request carries: the key as the Bearer token, the tenant, the JSON body's type, the user key."""
    headers = {
        "Authorization": f"Bearer {api_key}",
        "x-tdai-service-id": service_id,
        "Content-Type": "application/json",
    }
    if user_key:
        headers["x-tdai-user-key"] = user_key
    headers.update(extra_headers or {})
    return headers


def decode_envelope(
    status: int, header: Callable[[str], str | None], content: bytes, text: Callable[[], str]
) -> JsonObject:
    """The envelope's `data` (an object; `null` → `{}`, plus `trace_id` from `x-trace-id`), else TDAMError.

    `header` looks a response header up by name (case-insensitively); `text` is the body as text, read only for a
    body that is not JSON (its message).
    """
    is_error = 400 <= status <= 599
    header_request_id = header("x-qcloud-transaction-id") or header("x-trace-id") or ""
    try:
        envelope = json.loads(content)
    except ValueError as exc:
        message = text() or f"HTTP {status} returned a non-JSON response"
        raise TDAMError(status if is_error else -1, message, header_request_id) from exc
    if not isinstance(envelope, dict):
        raise TDAMError(-1, "API response must be a JSON object", header_request_id)

    raw_code = envelope.get("code")
    code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
    if is_error or code:
        # An error status keeps a meaningful envelope code; without one the status is the code.
        effective = code or status
        payload = envelope.get("data")
        raise TDAMError(
            effective,
            str(envelope.get("message") or f"HTTP {status}"),
            str(envelope.get("request_id") or header_request_id),
            payload if isinstance(payload, dict) else None,
        )
    if code is None:
        raise TDAMError(-1, "API response code must be an integer", header_request_id)

    data = envelope.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise TDAMError(-1, "API response data must be a JSON object", header_request_id)
    trace_id = header("x-trace-id")
    if trace_id:
        data["trace_id"] = trace_id
    return data


def transport_error(request: Request, exc: BaseException, *, timeout: bool) -> TransportError:
    """The TransportError for a request that got no answer (`exc`, the HTTP library's error, is its detail)."""
    what = "timed out" if timeout else f"failed ({type(exc).__name__})"
    detail = str(exc) or type(exc).__name__
    return TransportError(f"POST {request.path} {what}: {detail}", timeout=timeout)
