"""A fake OpenAI-compatible embeddings server for tests: a real HTTP server on 127.0.0.1 (stdlib only).

    with FakeOpenAI() as fake:
        config = EmbeddingConfig(provider="openai", model="fake-embed", base_url=fake.base_url)
        ...
        fake.mode = "slow"            # switch behaviour at run time
        fake.fail_next(2, "down")     # the next two requests fail, then `mode` applies again
        fake.stop()                   # nothing listens any more: connection refused

Vectors are deterministic and meaningful: a text's vector is the sum of per-token pseudo-random vectors
(lowercased words, and single CJK characters), so texts sharing words are similar and identical texts give
identical vectors in any batch. They are deliberately NOT unit length (scaled by `scale`) so clients must normalise.

Behaviours (`mode`):
    ok            200 with one vector per input (float lists, or base64 float32 if the request asks for it);
                  `data` is in reverse order when `shuffle` is set (each item's index stays right)
    down          503 with an OpenAI-style error body
    drop          closes the connection without any response
    slow          waits `slow_seconds` (interruptible by stop()) and then answers like "ok"
    held          waits until `release()` (or stop()) and then answers like "ok": a call in flight for as long as
                  a test needs, without depending on how fast the machine is
    rate_limited  429 with `Retry-After: retry_after` (seconds)
    wrong_dims    vectors one element shorter than asked for
    wrong_count   one vector fewer than inputs
    bad_json      200 with a body that is not JSON
    zeros         200 with all-zero vectors
    bad_request   400 with an error message that echoes the request's Authorization header (as some servers do)

Requests are validated like OpenAI does (model required; input a non-empty string or list of non-empty strings;
dimensions a positive int) and answered 400 otherwise. If `api_key` is set, a request without
`Authorization: Bearer <api_key>` gets 401. Every request is recorded (`requests`, `batch_sizes`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from tests.fake_server import LocalServer, TrackedHandler

__all__ = ["MODES", "FakeOpenAI", "RecordedRequest", "fake_vector"]

MODES = (
    "ok",
    "down",
    "drop",
    "slow",
    "held",
    "rate_limited",
    "wrong_dims",
    "wrong_count",
    "bad_json",
    "zeros",
    "bad_request",
)

_TOKEN = re.compile(r"[0-9a-z]+|[\u3400-\u9fff\uf900-\ufaff]")


@lru_cache(maxsize=65_536)
def _token_vector(token: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim)


def fake_vector(text: str, dim: int, scale: float = 3.0) -> np.ndarray:
    """The (unnormalised, float64) vector the fake server returns for `text` in "ok" mode."""
    tokens = _TOKEN.findall(text.lower()) or ["<empty>"]
    vector = np.zeros(dim)
    for token in tokens:
        vector += _token_vector(token, dim)
    norm = float(np.linalg.norm(vector))
    return vector * (scale / norm) if norm else _token_vector("<empty>", dim) * scale


@dataclass
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it was not JSON
    mode: str  # the behaviour it got

    @property
    def inputs(self) -> list[str]:
        value = self.body.get("input") if isinstance(self.body, dict) else None
        if isinstance(value, str):
            return [value]
        return list(value) if isinstance(value, list) else []

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class FakeOpenAI(LocalServer):
    """A running fake `/v1/embeddings` server; all attributes may be changed while it runs."""

    default_dim: int = 64  # used when a request does not send "dimensions"
    mode: str = "ok"
    slow_seconds: float = 3.0
    retry_after: float = 0.0
    scale: float = 3.0
    shuffle: bool = False
    api_key: str | None = None
    requests: list[RecordedRequest] = field(default_factory=list)

    _one_shot: deque[str] = field(default_factory=deque, init=False, repr=False)
    _released: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    # -- control and inspection ----------------------------------------------------------------------------------

    def fail_next(self, count: int, mode: str = "down") -> None:
        """The next `count` requests get `mode`; after them, `self.mode` applies again."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        with self._lock:
            self._one_shot.extend([mode] * count)

    def release(self) -> None:
        """Answer the requests held in "held" mode, and any later ones at once."""
        self._released.set()

    def reset(self) -> None:
        """Forget recorded requests and pending one-shot failures (the mode is kept)."""
        with self._lock:
            self.requests.clear()
            self._one_shot.clear()

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def batch_sizes(self) -> list[int]:
        with self._lock:
            return [len(r.inputs) for r in self.requests]

    def expected(self, text: str, dim: int | None = None) -> np.ndarray:
        """The unit vector a client should produce for `text` (after its own truncation) in "ok" mode."""
        vector = fake_vector(text, dim or self.default_dim, self.scale)
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    # -- used by the handler -------------------------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> str:
        with self._lock:
            mode = self._one_shot.popleft() if self._one_shot else self.mode
            request.mode = mode
            self.requests.append(request)
            return mode


class _Handler(TrackedHandler):
    fake: FakeOpenAI

    def do_GET(self) -> None:
        self._drain()
        self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        raw = self._drain()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        mode = self.fake._record(RecordedRequest("POST", self.path, headers, body, mode=""))

        if self.path.rstrip("/") != "/v1/embeddings":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        fake = self.fake
        if fake.api_key is not None and headers.get("authorization") != f"Bearer {fake.api_key}":
            self._send_json(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_api_key"}})
            return

        if mode == "slow":
            if fake._stopping.wait(fake.slow_seconds):
                self.close_connection = True
                return
            mode = "ok"
        if mode == "held":
            while not fake._released.wait(0.05):
                if fake._stopping.is_set():
                    self.close_connection = True
                    return
            mode = "ok"
        if mode == "drop":
            self.close_connection = True  # no status line at all: the client sees the connection closed
            return
        if mode == "down":
            self._send_json(503, {"error": {"message": "The server is overloaded", "type": "server_error"}})
            return
        if mode == "rate_limited":
            self._send_json(
                429,
                {"error": {"message": "Rate limit reached", "type": "requests"}},
                {"Retry-After": f"{fake.retry_after:g}"},
            )
            return
        if mode == "bad_request":
            echoed = headers.get("authorization", "")
            self._send_json(400, {"error": {"message": f"bad request with credentials {echoed}", "type": "x"}})
            return

        problem = _validate(body)
        if problem:
            self._send_json(400, {"error": {"message": problem, "type": "invalid_request_error"}})
            return
        inputs = [body["input"]] if isinstance(body["input"], str) else body["input"]
        dim = body.get("dimensions") or fake.default_dim
        if mode == "bad_json":
            self._send(200, b'{"object": "list", "data": [', "application/json")
            return
        if mode == "zeros":
            vectors = [[0.0] * dim for _ in inputs]
        else:
            size = dim - 1 if mode == "wrong_dims" else dim
            vectors = [fake_vector(text, dim, fake.scale)[:size].tolist() for text in inputs]
        encoded: list[Any] = vectors
        if body.get("encoding_format") == "base64":
            encoded = [base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii") for v in vectors]
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(encoded)]
        if mode == "wrong_count":
            data = data[:-1]
        if fake.shuffle:
            data.reverse()
        tokens = sum(len(_TOKEN.findall(t.lower())) for t in inputs)
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    def _drain(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json", extra)

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)


def _validate(body: Any) -> str | None:
    """OpenAI's own checks, so a client that sends what OpenAI would reject fails here too."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    value = body.get("input")
    inputs = [value] if isinstance(value, str) else value
    if not isinstance(inputs, list) or not inputs:
        return "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
    for item in inputs:
        if not isinstance(item, str) or item == "":
            return (
                "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
            )
    if "dimensions" in body:
        dims = body["dimensions"]
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            return "Invalid value for 'dimensions'"
    if body.get("encoding_format", "float") not in ("float", "base64"):
        return "Invalid value for 'encoding_format'"
    return None


FakeOpenAI.handler = _Handler
