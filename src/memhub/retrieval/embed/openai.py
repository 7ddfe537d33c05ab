"""An embedder for any OpenAI-compatible `POST {base_url}/embeddings` endpoint (OpenAI, Azure-style proxies,
vLLM, Ollama, TEI, LiteLLM ...), over one thread-safe `httpx.Client` per embedder (a `ProviderEndpoint`, which
the chat client uses too).

Time bound. One provider request (one batch; `embed_query` is one request) is bounded by `timeout_ms`, retries
included. Every attempt gets the time left until that deadline as its httpx timeout (which httpx applies per
socket operation: connect, send, each read); the response body is read in chunks and abandoned once the deadline
has passed; a retry is started only when its backoff plus 50 ms still fit. So a refused or reset
connection, 429/5xx, a server that accepts but never answers, and a slow answer all end within `timeout_ms`
(plus a few ms). Worst cases: a slow connect followed by a silent server can take up to 2 x `timeout_ms`, and
only a server trickling its status line and headers a byte at a time could stretch an attempt further. A timeout
is therefore never retried; quick failures are: connection refused/reset, 429 and 5xx get up to 2
retries after short backoffs (a `Retry-After` that does not fit in the time left ends the call at once).
`embed_documents` sends ceil(n / batch_size) requests one after another and stops at the first that fails, so
it is bounded by that many times `timeout_ms`.

Errors never contain the API key: it is only sent as the Bearer header, is redacted from any provider message we
quote, and is hidden from `EmbeddingConfig`'s repr.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from memhub.provider_http import CallFailed, Clock, ProviderEndpoint, RetryPolicy
from memhub.retrieval.embed.base import (
    Embedder,
    EmbeddingConfig,
    EmbeddingError,
    normalise_rows,
    prepare_text,
    prepare_texts,
    validate_common,
)

__all__ = ["OpenAIEmbedder"]

log = logging.getLogger("memhub.retrieval.embed")

_BACKOFF_S = (0.1, 0.4)  # sleep before retry 1 and 2 (capped by the time left)
_MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # a runaway provider must not exhaust memory
# Two retries after the first attempt, for connection errors, 429 and 5xx; a provider's Retry-After is honoured
# in full (uncapped): one that does not fit in the time left ends the call at once.
_RETRY = RetryPolicy(
    max_retries=2,
    backoff=lambda attempt: _BACKOFF_S[min(attempt - 1, len(_BACKOFF_S) - 1)],
)


class OpenAIEmbedder(Embedder):
    """Embeds through an OpenAI-compatible HTTP API. Thread-safe: requests share one pooled `httpx.Client`."""

    def __init__(self, config: EmbeddingConfig, clock: Clock | None = None) -> None:
        validate_common(config)
        base_url = config.base_url.strip()
        model = config.model.strip()
        if not base_url:
            raise ValueError("the openai embedding provider needs base_url, e.g. 'https://api.openai.com/v1'")
        if not model:
            raise ValueError("the openai embedding provider needs a model name, e.g. 'text-embedding-3-small'")
        try:
            url = httpx.URL(base_url.rstrip("/") + "/embeddings")
        except httpx.InvalidURL as exc:
            raise ValueError(f"invalid embedding base_url: {exc}") from exc
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"embedding base_url must be an http(s) URL with a host, got {base_url!r}")

        self.model_id = f"openai:{model}"
        self._model = model
        self._url = url
        # Messages name the host only: a base_url may carry credentials in its userinfo or query string.
        self._source = f"embedding provider {url.host}"
        self._dimensions = config.dimensions
        self._send_dimensions = config.send_dimensions
        self._batch_size = config.batch_size
        self._max_chars = config.max_chars
        # None until configured or learned from the first response; every later response must match it.
        self._dim: int | None = config.dimensions
        self._dim_lock = threading.Lock()
        self._closed = False
        # One timeout bounds a whole request, retries included (no separate per-attempt bound).
        self._endpoint = ProviderEndpoint(
            url,
            api_key=config.api_key,
            source=self._source,
            retry_statuses=frozenset({429}),
            budget_s=config.timeout_ms / 1000,
            attempt_timeout_s=None,
            max_bytes=_MAX_RESPONSE_BYTES,
            log=log,
            clock=clock,
        )

    # -- Embedder ------------------------------------------------------------------------------------------------

    @property  # type: ignore[override]
    def dim(self) -> int:
        """The vector length. When neither configured nor seen yet, one probe request learns it (it may raise
        EmbeddingError, like any embed call, and is bounded by timeout_ms)."""
        if self._dim is None:
            self.embed_query("dimension probe")
        assert self._dim is not None
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        # blank=" ": the OpenAI API rejects an empty input string with HTTP 400; a single space is accepted and
        # gives a well-defined (if meaningless) vector, which is what a blank memory deserves.
        prepared = prepare_texts(texts, self._max_chars, blank=" ")
        if not prepared:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = [
            self._embed_batch(prepared[start : start + self._batch_size])
            for start in range(0, len(prepared), self._batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_batch([prepare_text(text, self._max_chars, blank=" ")])[0]

    def close(self) -> None:
        self._closed = True
        self._endpoint.close()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model_id={self.model_id!r}, host={self._url.host!r})"

    # -- one provider request ------------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        if self._closed:
            raise EmbeddingError(f"{self._source}: embedder is closed")
        body: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._dimensions is not None and self._send_dimensions:
            body["dimensions"] = self._dimensions
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")

        try:
            outcome = self._endpoint.call(lambda deadline: self._post(payload, deadline), _RETRY)
        except CallFailed as exc:
            raise EmbeddingError(str(exc)) from None
        status, content = outcome.value
        return self._parse(status, content, len(batch))

    def _post(self, payload: bytes, deadline: float) -> tuple[int, bytes]:
        """One HTTP attempt; returns (status, body) for a 2xx, raises RetryableFailure, CallFailed or
        EmbeddingError otherwise."""
        status, content = self._endpoint.post(payload, deadline)
        if 200 <= status < 300:
            return status, content
        raise EmbeddingError(f"{self._source} returned {self._endpoint.http_error(status, content)}")

    def _parse(self, status: int, content: bytes, n: int) -> np.ndarray:
        try:
            doc = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            raise EmbeddingError(
                f"{self._source} returned invalid JSON (HTTP {status}, {len(content)} bytes)"
            ) from None
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list):
            raise EmbeddingError(f"{self._source} returned a response without a 'data' list")
        if len(data) != n:
            raise EmbeddingError(f"{self._source} returned {len(data)} vectors for {n} inputs")

        rows: list[np.ndarray | None] = [None] * n
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise EmbeddingError(f"{self._source}: data[{position}] has no 'embedding'")
            # Order by "index" (OpenAI does not promise data[] order); a server that omits it is taken in order.
            index = item.get("index", position)
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n or rows[index] is not None:
                raise EmbeddingError(f"{self._source}: data[{position}] has a missing, duplicate or bad 'index'")
            rows[index] = self._vector(item["embedding"], position)

        lengths = {len(row) for row in rows if row is not None}
        if len(lengths) != 1:
            raise EmbeddingError(f"{self._source} returned vectors of different lengths {sorted(lengths)}")
        got = lengths.pop()
        expected = self._expect_dim(got)
        if got != expected:
            raise EmbeddingError(f"{self._source} returned {got}-dim vectors, expected {expected}")
        return normalise_rows(np.stack(rows), expected_rows=n, expected_dim=expected, source=self._source)

    def _vector(self, value: Any, position: int) -> np.ndarray:
        try:
            if isinstance(value, str):  # encoding_format "base64", which some servers use regardless
                vector = np.frombuffer(base64.b64decode(value, validate=True), dtype="<f4")
            elif isinstance(value, list):
                vector = np.asarray(value, dtype=np.float64)
            else:
                raise TypeError(type(value).__name__)
        except (TypeError, ValueError, binascii.Error):
            raise EmbeddingError(f"{self._source}: data[{position}].embedding is not a list of numbers") from None
        if vector.ndim != 1 or vector.size == 0:
            raise EmbeddingError(f"{self._source}: data[{position}].embedding is not a flat, non-empty vector")
        return vector

    def _expect_dim(self, got: int) -> int:
        # The first successful response fixes the dimension when none was configured; concurrent first responses
        # race here, and the loser is checked against the winner like any later response.
        with self._dim_lock:
            if self._dim is None:
                self._dim = got
            return self._dim
