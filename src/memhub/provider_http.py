"""What every OpenAI-compatible provider client (embeddings, chat) does the same way: read an HTTP answer, and
retry one call within its time budget (`ProviderEndpoint`).

Both clients retry what another attempt may fix and nothing else: timeouts, connection errors, the statuses
their endpoint names, every 5xx, and whatever else an attempt raises as `RetryableFailure`. A provider's
`Retry-After` lengthens the pause, up to the policy's cap. A retry is started only when its pause plus
`min_attempt_s` still fits in the budget, and every attempt gets at most the time left. The budget is measured
on the injected `Clock`; an attempt's socket timeouts and body deadline stay in real time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx

SNIPPET_CHARS = 200

T = TypeVar("T")


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


# -- one call, retried within its budget ----------------------------------------------------------------------------


class RetryableFailure(Exception):
    """An attempt failed in a way another attempt may fix; `status` is the HTTP status if any, `retry_after` the
    provider's hint in seconds."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class CallFailed(Exception):
    """A call ended without an answer: its retries ran out (`retryable`) or the request could not be made at all.

    Each client raises its own error type with this message, `retryable` and `status`.
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a client retries a call and how long it pauses in between."""

    max_retries: int  # retries after the first attempt
    backoff: Callable[[int], float]  # the pause before retry n (1-based), in seconds
    retry_after_cap_s: float | None = None  # the longest Retry-After honoured; None: no cap
    min_attempt_s: float = 0.05  # do not start an attempt that could not possibly finish

    def pause(self, attempt: int, failure: RetryableFailure) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): the backoff, or the provider's hint if longer."""
        pause = self.backoff(attempt)
        if failure.retry_after is not None:
            hint = failure.retry_after
            if self.retry_after_cap_s is not None:
                hint = min(hint, self.retry_after_cap_s)
            pause = max(pause, hint)
        return pause


@dataclass(frozen=True, slots=True)
class Retried(Generic[T]):
    """What a call's successful attempt returned, after how many attempts and how long (on the clock)."""

    value: T
    attempts: int
    elapsed_s: float


class ProviderEndpoint:
    """One OpenAI-compatible endpoint over a pooled, thread-safe `httpx.Client`: JSON POSTs retried in a budget.

    `retry_statuses` (and every 5xx) are the answers another attempt may fix. `budget_s` bounds a whole call,
    retries and pauses included. `attempt_timeout_s` bounds one attempt; None means the budget is the request's
    only timeout (messages then name it as "the Ns timeout").
    """

    def __init__(
        self,
        url: httpx.URL,
        *,
        api_key: str,
        source: str,
        retry_statuses: frozenset[int],
        budget_s: float,
        attempt_timeout_s: float | None,
        max_bytes: int,
        log: logging.Logger,
        clock: Clock | None = None,
    ) -> None:
        self.url = url
        self.source = source
        self.retry_statuses = retry_statuses
        self.clock = clock or Clock()
        self._api_key = api_key
        self._budget_s = budget_s
        self._attempt_timeout_s = attempt_timeout_s
        self._max_bytes = max_bytes
        self._log = log
        headers = {"Accept": "application/json", "User-Agent": "memhub"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        # follow_redirects=False: a redirect would re-send the request body (and possibly the key) elsewhere.
        self._client = httpx.Client(
            headers=headers,
            timeout=budget_s if attempt_timeout_s is None else attempt_timeout_s,
            follow_redirects=False,
        )

    def call(self, attempt: Callable[[float], T], policy: RetryPolicy) -> Retried[T]:
        """Run `attempt(deadline)` until it returns, retrying each RetryableFailure `policy` and the budget allow.

        `deadline` is on the clock. Retries running out raise CallFailed (retryable, with the last status);
        anything else `attempt` raises propagates as it is.
        """
        now = self.clock.monotonic
        started = now()
        deadline = started + self._budget_s
        attempts = 0
        while True:
            attempts += 1
            try:
                value = attempt(deadline)
            except RetryableFailure as exc:
                remaining = deadline - now()
                pause = policy.pause(attempts, exc)
                if attempts > policy.max_retries or pause + policy.min_attempt_s > remaining:
                    elapsed = now() - started
                    raise CallFailed(
                        f"{self.source} failed after {attempts} attempt(s) in {elapsed:.2f}s: {exc}",
                        retryable=True,
                        status=exc.status,
                    ) from None
                self._log.debug("%s: attempt %d failed (%s); retrying in %.2fs", self.source, attempts, exc, pause)
                self.clock.sleep(pause)
                continue
            return Retried(value, attempts, now() - started)

    def post(self, payload: bytes, deadline: float) -> tuple[int, bytes]:
        """One attempt, finished by `deadline` (on the clock): (status, body) of a 2xx or of a status the endpoint
        does not retry. Raises RetryableFailure for what another attempt may fix and CallFailed (not retryable)
        when the request cannot be made at all."""
        left = deadline - self.clock.monotonic()
        remaining = left if self._attempt_timeout_s is None else min(self._attempt_timeout_s, left)
        if remaining <= 0:
            raise RetryableFailure(
                "no time left within the call's budget"
                if self._attempt_timeout_s is not None
                else f"no time left within the {self._budget_s:g}s timeout"
            )
        try:
            status, content, headers = post_json(
                self._client,
                self.url,
                payload,
                timeout_s=remaining,
                deadline=time.monotonic() + remaining,  # the socket's own time, whatever the budget's clock
                max_bytes=self._max_bytes,
            )
        except ProviderTimeout as exc:
            waited = f"{remaining:.2f}s" if self._attempt_timeout_s is not None else f"{self._budget_s:g}s"
            raise RetryableFailure(f"timed out after {waited} ({exc.kind})") from None
        except ProviderUnreachable as exc:
            raise RetryableFailure(f"connection failed ({exc.kind}: {self.redact(exc.detail)})") from None
        except ProviderBroken as exc:
            raise CallFailed(f"{self.source}: {self.redact(str(exc))}", retryable=False) from None
        if not 200 <= status < 300 and (status in self.retry_statuses or status >= 500):
            raise RetryableFailure(self.http_error(status, content), status, retry_after(headers.get("retry-after")))
        return status, content

    def http_error(self, status: int, content: bytes) -> str:
        """The message for a non-2xx answer: `HTTP <status>: <the provider's message>`, key-free and short."""
        detail = self.error_detail(content)
        return f"HTTP {status}" + (f": {detail}" if detail else "")

    def error_detail(self, content: bytes) -> str:
        return error_detail(content, self._api_key)

    def redact(self, text: str) -> str:
        return redact(text, self._api_key)

    def close(self) -> None:
        self._client.close()
