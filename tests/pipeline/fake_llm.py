"""A fake OpenAI-compatible chat server for tests: a real HTTP server on 127.0.0.1 (stdlib only).

    with FakeChat() as fake:
        client = ChatClient(LLMConfig(base_url=fake.base_url, model="fake-chat", timeout_ms=200))
        fake.push(Reply.json([{"scene_name": "s", "message_ids": ["m1"], "memories": []}]))
        fake.push(Reply.fail(429, retry_after=0.05), Reply.text("ok"))
        fake.script = lambda body: Reply.text("answer")   # or answer every request from a callable
        fake.requests[-1].user_text                         # what the client sent

Each request takes the next queued reply; when the queue is empty, `script` (a Reply, text or callable taking
the request JSON) answers; with neither, the server answers 400 "script exhausted" so a test that under-scripts
fails loudly and is not retried. A queued or scripted value may be a `Reply`, a str (the assistant content)
or any other JSON value (sent as the assistant content, JSON-encoded).

Faults (`Reply` fields): `delay` (seconds before answering; interruptible by stop()), `status` with an
OpenAI-style error body (and `retry_after` for 429), `raw` (a verbatim body, e.g. malformed JSON), `drop`
(close the connection without answering), `content=None` (an empty answer). `reject_response_format=True`
makes every request that carries `response_format` fail with 400 like servers without JSON mode. If `api_key`
is set, requests without `Authorization: Bearer <api_key>` get 401 (whose message echoes the header, as
careless servers do). Every request is recorded in `requests`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fake_server import LocalServer, TrackedHandler

__all__ = ["FakeChat", "RecordedChat", "Reply"]

Script = Callable[[dict[str, Any]], Any]


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = ""
    status: int = 200
    delay: float = 0.0
    retry_after: float | None = None
    error: str = ""
    raw: bytes | None = None
    drop: bool = False
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"

    @classmethod
    def text(cls, content: str, **kwargs: Any) -> Reply:
        """A 200 with `content` as the assistant message."""
        return cls(content=content, **kwargs)

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        """A 200 whose assistant message is `value` JSON-encoded."""
        return cls(content=json.dumps(value, ensure_ascii=False), **kwargs)

    @classmethod
    def fail(cls, status: int, message: str = "", retry_after: float | None = None) -> Reply:
        """An error status with an OpenAI-style error body."""
        return cls(content=None, status=status, error=message or f"fake error {status}", retry_after=retry_after)

    @classmethod
    def slow(cls, seconds: float, content: str = "late") -> Reply:
        """A 200 that only comes after `seconds`."""
        return cls(content=content, delay=seconds)

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose body is not JSON."""
        return cls(raw=b'{"id": "chatcmpl-1", "choices": [{"message": {"content": "')


@dataclass
class RecordedChat:
    """One request the server received."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON, or the raw text when it was not JSON
    reply: Reply | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        value = self.body.get("messages") if isinstance(self.body, dict) else None
        return value if isinstance(value, list) else []

    @property
    def system_text(self) -> str:
        return "\n".join(str(m.get("content")) for m in self.messages if m.get("role") == "system")

    @property
    def user_text(self) -> str:
        return "\n".join(str(m.get("content")) for m in self.messages if m.get("role") == "user")

    @property
    def json_mode(self) -> bool:
        return isinstance(self.body, dict) and "response_format" in self.body

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class FakeChat(LocalServer):
    """A running fake `/v1/chat/completions` server; attributes may be changed while it runs."""

    script: Reply | str | Script | None = None
    api_key: str | None = None
    reject_response_format: bool = False
    model: str = "fake-chat"
    requests: list[RecordedChat] = field(default_factory=list)

    _queue: deque[Any] = field(default_factory=deque, init=False, repr=False)

    # -- control and inspection ----------------------------------------------------------------------------------

    def push(self, *replies: Any) -> None:
        """Queue replies for the next requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget recorded requests and queued replies (the script is kept)."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def pending(self) -> int:
        """Queued replies not used yet."""
        with self._lock:
            return len(self._queue)

    # -- used by the handler -------------------------------------------------------------------------------------

    def _next(self, body: Any) -> Reply:
        with self._lock:
            item = self._queue.popleft() if self._queue else self.script
        if callable(item) and not isinstance(item, Reply):
            item = item(body if isinstance(body, dict) else {})
        if item is None:
            return Reply.fail(400, "FakeChat script exhausted")
        if isinstance(item, Reply):
            return item
        if isinstance(item, str):
            return Reply.text(item)
        return Reply.json(item)


class _Handler(TrackedHandler):
    fake: FakeChat

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedChat(self.path, headers, body)
        fake = self.fake
        with fake._lock:
            fake.requests.append(record)

        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        if fake.api_key is not None and headers.get("authorization") != f"Bearer {fake.api_key}":
            self._error(401, f"Incorrect API key provided: {headers.get('authorization', '')}")
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
            self._error(400, "We could not parse the JSON body of your request (model and messages required).")
            return
        if fake.reject_response_format and "response_format" in body:
            self._error(400, "Invalid parameter: 'response_format' of type 'json_object' is not supported.")
            return

        reply = fake._next(body)
        record.reply = reply
        if reply.delay and fake._stopping.wait(reply.delay):
            self.close_connection = True
            return
        if reply.drop:
            self.close_connection = True
            return
        if reply.raw is not None:
            self._send(reply.status, reply.raw)
            return
        if reply.status != 200:
            extra = {"Retry-After": f"{reply.retry_after:g}"} if reply.retry_after is not None else {}
            self._error(reply.status, reply.error, extra)
            return
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body["messages"] if isinstance(m, dict))
        completion = reply.content or ""
        payload = {
            "id": f"chatcmpl-{len(fake.requests)}",
            "object": "chat.completion",
            "model": reply.model or fake.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": reply.prompt_tokens if reply.prompt_tokens is not None else prompt_chars // 4 + 1,
                "completion_tokens": (
                    reply.completion_tokens if reply.completion_tokens is not None else len(completion) // 4 + 1
                ),
            },
        }
        self._send(200, json.dumps(payload, ensure_ascii=False).encode("utf-8"))

    def _error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 500 else "server_error"}}
        self._send(status, json.dumps(body).encode("utf-8"), extra)

    def _send(self, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (extra or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)


FakeChat.handler = _Handler
