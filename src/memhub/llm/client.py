"""A chat client for any OpenAI-compatible `POST {base_url}/chat/completions` endpoint (OpenAI, vLLM, Ollama,
LiteLLM, DeepSeek, Hunyuan ...), over one thread-safe `httpx.Client` (a `ProviderEndpoint`, which the embedder
uses too).

Time bound. `timeout_ms` bounds one attempt (connect, send, every read, and the whole body); `budget_ms` bounds
the whole `complete()` call, retries and backoff included (default: twice `timeout_ms`, so one stalled attempt
still gets a second chance). An attempt is only started when its pause plus 50 ms fits in what is left, and each
attempt gets min(timeout, time left). Timeouts, connection errors, malformed 2xx bodies, 408, 429 and 5xx are
retried up to `max_retries` times with exponential backoff and full jitter; a 429's `Retry-After` is honoured up
to `retry_after_max_ms`. Any other 4xx is final (`retryable=False`), except a 400 that names `response_format`:
some servers reject JSON mode, so that request is sent once more without it and JSON mode stays off for this
client from then on.

Errors never contain the API key: it is only sent as the Bearer header, is redacted from any provider text we
quote, and is hidden from `LLMConfig`'s repr. Messages name the host only (a base_url may carry credentials).
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import httpx

from memhub.provider_http import CallFailed, Clock, ProviderEndpoint, RetryableFailure, RetryPolicy

__all__ = ["ChatClient", "ChatResult", "LLMConfig", "LLMError"]

log = logging.getLogger("memhub.llm")

_MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # a runaway provider must not exhaust memory


class LLMError(Exception):
    """A chat call failed; `retryable` says whether trying later may help, `status` is the HTTP status if any.

    A caller that retries later reads `retryable` (the pipeline worker does, as for its own stage errors).
    """

    def __init__(self, message: str, retryable: bool = True, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Where and how to call the model. `timeout_ms` is per attempt; `budget_ms` (default 2 x timeout) per call."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    timeout_ms: int = 60_000
    max_tokens: int = 4096
    temperature: float = 0.2
    max_retries: int = 3
    budget_ms: int | None = None
    # False for servers that reject `response_format` outright (saves the 400 round trip).
    response_format: bool = True
    backoff_base_ms: int = 500
    backoff_max_ms: int = 8_000
    retry_after_max_ms: int = 30_000

    @property
    def total_budget_ms(self) -> int:
        """The time one `complete()` call may take, retries included."""
        return self.budget_ms if self.budget_ms is not None else 2 * self.timeout_ms


@dataclass(frozen=True, slots=True)
class ChatResult:
    """One completion: the assistant text plus what a generation log needs."""

    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    finish_reason: str | None = None
    attempts: int = 1


class _NoResponseFormat(Exception):
    """The server rejected `response_format`; resend without it."""


class ChatClient:
    """Calls an OpenAI-compatible chat endpoint. Thread-safe: calls share one pooled `httpx.Client`."""

    def __init__(self, config: LLMConfig, clock: Clock | None = None) -> None:
        base_url = config.base_url.strip()
        model = config.model.strip()
        if not base_url:
            raise ValueError("the LLM needs base_url, e.g. 'https://api.openai.com/v1'")
        if not model:
            raise ValueError("the LLM needs a model name")
        if config.timeout_ms <= 0 or config.total_budget_ms <= 0:
            raise ValueError("LLM timeout_ms and budget_ms must be positive")
        if config.max_retries < 0 or config.max_tokens <= 0:
            raise ValueError("LLM max_retries must be >= 0 and max_tokens > 0")
        try:
            url = httpx.URL(base_url.rstrip("/") + "/chat/completions")
        except httpx.InvalidURL as exc:
            raise ValueError(f"invalid LLM base_url: {exc}") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"LLM base_url must be an http(s) URL with a host, got {base_url!r}")
        self.config = config
        self.model = model
        self._url = url
        self._source = f"LLM {url.host}"
        # Flipped (once, never back) when the server says it does not know response_format; a plain bool
        # write is atomic, and a race only costs one more 400 round trip.
        self._send_response_format = config.response_format
        self._closed = False
        self._endpoint = ProviderEndpoint(
            url,
            api_key=config.api_key,
            source=self._source,
            retry_statuses=frozenset({408, 429}),
            budget_s=config.total_budget_ms / 1000,
            attempt_timeout_s=config.timeout_ms / 1000,
            max_bytes=_MAX_RESPONSE_BYTES,
            log=log,
            clock=clock,
        )

    def complete(self, messages: list[dict[str, Any]], *, json_mode: bool = False) -> ChatResult:
        """One chat completion (retried within the budget); raises LLMError."""
        if self._closed:
            raise LLMError(f"{self._source}: client is closed", retryable=False)
        if not messages:
            raise LLMError(f"{self._source}: no messages to send", retryable=False)
        try:
            outcome = self._endpoint.call(lambda deadline: self._attempt(messages, json_mode, deadline), self._policy())
        except CallFailed as exc:
            raise LLMError(str(exc), retryable=exc.retryable, status=exc.status) from None
        text, model, usage, finish = outcome.value
        return ChatResult(
            text=text,
            model=model or self.model,
            prompt_tokens=usage[0],
            completion_tokens=usage[1],
            latency_ms=int(outcome.elapsed_s * 1000),
            finish_reason=finish,
            attempts=outcome.attempts,
        )

    def close(self) -> None:
        """Release the connection pool; later calls fail with a non-retryable LLMError."""
        self._closed = True
        self._endpoint.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, host={self._url.host!r})"

    # -- one attempt ---------------------------------------------------------------------------------------------

    def _payload(self, messages: list[dict[str, Any]], with_format: bool) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.config.max_tokens,
            "temperature": self.config.temperature,
            "stream": False,
        }
        if with_format:
            body["response_format"] = {"type": "json_object"}
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _policy(self) -> RetryPolicy:
        # Read from `config` at every call, like the request fields, so a replaced config applies to the next call.
        return RetryPolicy(
            max_retries=self.config.max_retries,
            backoff=self._backoff,
            retry_after_cap_s=self.config.retry_after_max_ms / 1000,
        )

    def _backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff before retry `attempt` (1-based), in seconds."""
        ceiling = min(self.config.backoff_max_ms, self.config.backoff_base_ms * 2 ** (attempt - 1)) / 1000
        # Jitter spreads retries of many workers hitting the same rate limit; the floor keeps some spacing.
        return ceiling * random.uniform(0.5, 1.0)

    def _attempt(
        self, messages: list[dict[str, Any]], json_mode: bool, deadline: float
    ) -> tuple[str, str | None, tuple[int, int], str | None]:
        """One attempt (two requests when the server turns JSON mode down); raises RetryableFailure or LLMError."""
        while True:
            with_format = json_mode and self._send_response_format
            try:
                status, content = self._post(self._payload(messages, with_format), deadline)
            except _NoResponseFormat:
                # Once dropped, the format is never sent again by this client, so a second refusal ends here.
                if not with_format:
                    raise LLMError(
                        f"{self._source} rejected the request (HTTP 400: response_format)", False, 400
                    ) from None
                log.info("%s does not accept response_format; JSON mode continues by prompt only", self._source)
                self._send_response_format = False
                continue  # the format fallback is not a failure of the provider: same attempt, same deadline
            return self._parse(status, content)

    def _post(self, payload: bytes, deadline: float) -> tuple[int, bytes]:
        """One HTTP request; returns (status, body) for a 2xx, raises RetryableFailure, _NoResponseFormat or
        CallFailed / LLMError when it is final."""
        status, content = self._endpoint.post(payload, deadline)
        if 200 <= status < 300:
            return status, content
        message = self._endpoint.http_error(status, content)
        if status == 400 and "response_format" in content.decode("utf-8", "replace").lower():
            raise _NoResponseFormat()
        if status in (401, 403):
            message += " (check the LLM API key)"
        raise LLMError(f"{self._source} returned {message}", retryable=False, status=status)

    def _parse(self, status: int, content: bytes) -> tuple[str, str | None, tuple[int, int], str | None]:
        """(text, model, (prompt_tokens, completion_tokens), finish_reason) of a 2xx body."""
        try:
            doc = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            # A proxy hiccup (truncated or HTML body) is usually transient.
            raise RetryableFailure(f"invalid JSON body (HTTP {status}, {len(content)} bytes)", status) from None
        if not isinstance(doc, dict):
            raise RetryableFailure(f"response body is not an object (HTTP {status})", status)
        if isinstance(doc.get("error"), dict | str):  # some gateways report errors with a 200
            detail = self._error_detail(content)
            raise RetryableFailure(f"error in a {status} response: {detail}", status)
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise RetryableFailure(f"response has no choices (HTTP {status})", status)
        choice = choices[0]
        message = choice.get("message")
        text = _message_text(message.get("content") if isinstance(message, dict) else None)
        model = doc.get("model") if isinstance(doc.get("model"), str) else None
        usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
        finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None
        return text, model, (_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))), finish

    def _error_detail(self, content: bytes) -> str:
        return self._endpoint.error_detail(content)


def _message_text(content: Any) -> str:
    """The assistant text: a string, or the text parts of a content list (some servers); None → ""."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
