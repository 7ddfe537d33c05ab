"""A fake LLM provider: a real local HTTP server speaking OpenAI chat completions, OpenAI responses and
Anthropic messages, streamed and not, with tool calls, scripted errors and dropped connections. It records
every request it got, as the proxy sent it."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.fake_server import LocalServer, TrackedHandler

ENDLESS_PAUSE = 0.01  # seconds between an endless stream's events: slow enough to leave the CPU to the proxy


@dataclass
class Reply:
    """What the next request gets. Default: the text `ok from upstream` in the request's protocol."""

    text: str = "ok from upstream"
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (id, name, arguments)
    status: int = 200  # anything else: `error_body` with `error_type` as the content type
    error_body: bytes = b""
    error_type: str = "application/json"
    drop: bool = False  # close the connection without answering
    hold: threading.Event | None = None  # streamed: after the first event, wait for this before the rest
    hang: bool = False  # streamed: after the first event, wait until the proxy closes the connection
    stall: threading.Event | None = None  # answer nothing (not even headers) until this is set
    endless: bool = False  # streamed: after the first event, repeat the second one until the proxy hangs up


@dataclass
class Received:
    """One request as the upstream saw it."""

    method: str
    path: str  # without the query string
    headers: dict[str, str]
    body: bytes
    query: str = ""

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class UpstreamHandler(TrackedHandler):
    fake: FakeUpstream

    def do_GET(self) -> None:
        if self.path.startswith("/_fake/last?path="):
            # For a benchmark running this server in a process of its own: the last body received at a path.
            turns = self.fake.turns(self.path.partition("=")[2])
            self._json(200 if turns else 404, turns[-1].json if turns else {"error": "nothing received"})
            return
        self._record(b"")
        if self.path.startswith("/v1/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "me"}]})
        else:
            self._json(404, {"error": {"message": "no such route"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        received = self._record(raw)
        if received.path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 7})
            return
        if received.path == "/v1/embeddings":
            self._json(200, {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}]})
            return
        reply = self.fake.next_reply()
        if reply.stall is not None:
            reply.stall.wait()
            self.close_connection = True
            return
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if reply.status != 200:
            self._send(reply.status, reply.error_type, reply.error_body)
            return
        body = received.json or {}
        speak = {"/v1/chat/completions": chat, "/v1/messages": messages, "/v1/responses": responses}.get(received.path)
        if speak is None:
            self._json(404, {"error": {"message": f"no such route {self.path}"}})
            return
        whole, events = speak(body, reply)
        if body.get("stream"):
            self._stream(events, reply)
        else:
            self._json(200, whole)

    def _record(self, raw: bytes) -> Received:
        headers = {k.lower(): v for k, v in self.headers.items()}
        path, _, query = self.path.partition("?")
        received = Received(self.command, path, headers, raw, query)
        with self.fake._lock:
            self.fake.requests.append(received)
        return received

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.send_header("x-upstream-request-id", "up-123")
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, "application/json", json.dumps(payload).encode())

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _stream(self, events: list[bytes], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            self._chunk(events[0])
            if reply.hang:
                # The proxy never sends more on this connection: reading returns b"" once it closes it.
                while self.connection.recv(1024):
                    pass
                self.fake.closed_mid_stream.set()
                self.close_connection = True
                return
            if reply.endless:
                while True:  # until writing fails: the proxy closed the connection
                    self._chunk(events[1])
                    time.sleep(ENDLESS_PAUSE)
            if reply.hold is not None:
                reply.hold.wait()
            for event in events[1:]:
                self._chunk(event)
            self._chunk(b"")
        except OSError:
            self.fake.closed_mid_stream.set()
            self.close_connection = True


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


def chat(body: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], list[bytes]]:
    """An OpenAI chat completion and its chunks (text in two pieces, then tool calls, usage, [DONE])."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in reply.tool_calls
    ]
    finish = "tool_calls" if calls else "stop"
    usage = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    head = {"id": "chatcmpl-fake", "created": 1, "model": body.get("model", "fake-model")}
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if calls:
        message["tool_calls"] = calls
    whole = {**head, "object": "chat.completion", "usage": usage,
             "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return sse({**head, "object": "chat.completion.chunk", "choices": [choice]})

    half = len(reply.text) // 2
    events = [chunk({"role": "assistant", "content": reply.text[:half]}), chunk({"content": reply.text[half:]})]
    for i, call in enumerate(calls):
        name_part = {"index": i, "id": call["id"], "type": "function",
                     "function": {"name": call["function"]["name"], "arguments": ""}}  # fmt: skip
        args = call["function"]["arguments"]
        events.append(chunk({"tool_calls": [name_part]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[:3]}}]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": args[3:]}}]}))
    events.append(chunk({}, finish))
    events.append(sse({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    events.append(sse("[DONE]"))
    return whole, events


def messages(body: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], list[bytes]]:
    """An Anthropic message and its events (text deltas, tool_use blocks with input JSON deltas)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in reply.tool_calls]
    stop = "tool_use" if reply.tool_calls else "end_turn"
    whole = {"id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model", "fake-model"),
             "content": content, "stop_reason": stop, "stop_sequence": None,
             "usage": {"input_tokens": 11, "output_tokens": 5}}  # fmt: skip
    start = {**whole, "content": [], "stop_reason": None, "usage": {"input_tokens": 11, "output_tokens": 0}}
    events = [sse({"type": "message_start", "message": start}, "message_start")]
    for index, block in enumerate(content):
        if block["type"] == "text":
            first = {"type": "text", "text": ""}
            half = len(block["text"]) // 2
            deltas = [{"type": "text_delta", "text": block["text"][:half]},
                      {"type": "text_delta", "text": block["text"][half:]}]  # fmt: skip
        else:
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            args = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": args[:3]},
                      {"type": "input_json_delta", "partial_json": args[3:]}]  # fmt: skip
        opening = {"type": "content_block_start", "index": index, "content_block": first}
        events.append(sse(opening, "content_block_start"))
        for delta in deltas:
            events.append(sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"))
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    events.append(sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                       "usage": {"output_tokens": 5}}, "message_delta"))  # fmt: skip
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return whole, events


def responses(body: dict[str, Any], reply: Reply) -> tuple[dict[str, Any], list[bytes]]:
    """An OpenAI response and its events (text deltas, function calls, response.completed)."""
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append({"id": "msg_fake", "type": "message", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})  # fmt: skip
    for cid, name, args in reply.tool_calls:
        output.append({"id": f"fc_{cid}", "type": "function_call", "call_id": cid, "name": name,
                       "arguments": json.dumps(args), "status": "completed"})  # fmt: skip
    whole = {"id": "resp_fake", "object": "response", "created_at": 1, "status": "completed",
             "model": body.get("model", "fake-model"), "output": output, "parallel_tool_calls": True,
             "tool_choice": "auto", "tools": [],
             "usage": {"input_tokens": 11, "output_tokens": 5, "total_tokens": 16,
                       "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip
    started = {**whole, "status": "in_progress", "output": []}
    raw: list[dict[str, Any]] = [{"type": "response.created", "response": started}]
    for index, item in enumerate(output):
        empty = {**item, "content": []} if item["type"] == "message" else {**item, "arguments": ""}
        raw.append({"type": "response.output_item.added", "output_index": index, "item": empty})
        if item["type"] == "message":
            at = {"item_id": item["id"], "output_index": index, "content_index": 0}
            part = item["content"][0]
            raw.append({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
            half = len(reply.text) // 2
            for piece in (reply.text[:half], reply.text[half:]):
                raw.append({"type": "response.output_text.delta", **at, "delta": piece})
            raw.append({"type": "response.output_text.done", **at, "text": reply.text})
            raw.append({"type": "response.content_part.done", **at, "part": part})
        else:
            at = {"item_id": item["id"], "output_index": index}
            raw.append({"type": "response.function_call_arguments.delta", **at, "delta": item["arguments"]})
            raw.append({"type": "response.function_call_arguments.done", **at, "arguments": item["arguments"]})
        raw.append({"type": "response.output_item.done", "output_index": index, "item": item})
    raw.append({"type": "response.completed", "response": whole})
    events = [sse({**event, "sequence_number": n}, event["type"]) for n, event in enumerate(raw)]
    return whole, events


class FakeUpstream(LocalServer):
    """The fake provider. `script(...)` queues replies; `requests` lists what came in."""

    handler = UpstreamHandler

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Received] = []
        self.replies: deque[Reply] = deque()
        self.closed_mid_stream = threading.Event()

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next requests (then the default reply again)."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            return self.replies.popleft() if self.replies else Reply()

    def turns(self, path: str) -> list[Received]:
        """The requests to `path` (e.g. `/v1/messages`), oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path == path]

    @property
    def root(self) -> str:
        """`http://127.0.0.1:<port>` (the Anthropic base URL; OpenAI's is `base_url`)."""
        return self.base_url.removesuffix("/v1")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            for reply in self.replies:
                if reply.hold is not None:
                    reply.hold.set()
        super().stop()


def main() -> None:
    """Serve the fake provider alone (for a benchmark): print its root URL, run until stdin closes."""
    import sys

    fake = FakeUpstream()
    fake.start()
    print(fake.root, flush=True)
    sys.stdin.read()
    fake.stop()


if __name__ == "__main__":
    main()
