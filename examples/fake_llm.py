"""A deterministic fake of the OpenAI Chat Completions API, so the agent example runs offline.

It is a real HTTP server (stdlib only: `http.server` + `json`), so the agent talks to it exactly
as it would talk to OpenAI or any compatible server. Run it alone with
`python examples/fake_llm.py --port 8000`, or start it in-process with `start_fake_llm()`.

Routes: `POST /v1/chat/completions` (non-streaming) and `GET /v1/models`. Any Bearer key is accepted.

How it answers is scripted from the request alone, so every run is the same:

1. The last message is a `tool` result: answer by quoting the first result line (a line starting
   with "- ", without its score) of the tool output; "memory unavailable: …" is passed on as such.
2. The last message is a user message whose own text (injected blocks removed) does not end with
   "?": it is a statement, acknowledged with "Noted.".
3. The last message is a user question. Its keywords are its words of three or more letters minus
   a small stop list (`keywords()`). The injected context is every `- ` line inside a
   `<relevant-memories>` block of the system messages and of that last user message.
   - Some context line mentions a keyword (a word of the line starts with it): answer by quoting
     that line. The context already answers, so no tool is called.
   - Otherwise, when `tdai_memory_search` is among the offered `tools`: return one `tool_calls`
     entry calling it with the keywords as the query.
   - Otherwise: "I don't know yet."

Matching is literal on purpose ("deploying" does not match "deploy"), unlike memhub's stemmed and
semantic search: so the fake sometimes searches for what a real model would have read from the
context, which is what makes the example exercise the tool path.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-llm-1"
MEMORY_TOOL = "tdai_memory_search"
MEMORY_BLOCK = re.compile(r"<relevant-memories>(.*?)</relevant-memories>", re.DOTALL)
SCORE = re.compile(r"\s*\(score: [0-9.]+\)")
WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Question words and fillers: a question's keywords are what is left, its subject.
_STOP_LIST = """
    about again also and any anything are because been can could did does doing don for from had has have
    how into its just know let like me mine more most much need not now off once only our out please
    remember remind should some tell than that the their them then there these they this those too was
    were what when where which who whom why will with would yet you your yours
"""
STOPWORDS = frozenset(_STOP_LIST.split())
MAX_BODY_BYTES = 4 * 1024 * 1024


def keywords(text: str) -> list[str]:
    """The question's subject words: lower-cased words of ≥ 3 letters not in STOPWORDS, in order, once each."""
    seen: dict[str, None] = {}
    for word in WORD.findall(text.lower()):
        if len(word) >= 3 and word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)


def _text(content: Any) -> str:
    """A message's text, whether `content` is a string or a list of OpenAI content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def memory_lines(messages: list[dict[str, Any]]) -> list[str]:
    """The `- ` lines inside `<relevant-memories>` blocks of the system messages and the last user message."""
    texts = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    if messages and messages[-1].get("role") == "user":
        texts.append(_text(messages[-1].get("content")))
    lines: list[str] = []
    for text in texts:
        for block in MEMORY_BLOCK.findall(text):
            lines.extend(line.strip()[2:].strip() for line in block.splitlines() if line.strip().startswith("- "))
    return lines


def question_of(message: dict[str, Any]) -> str:
    """The user's own words: the message text without the injected memory blocks."""
    return MEMORY_BLOCK.sub("", _text(message.get("content"))).strip()


def _mentions(line: str, words: list[str]) -> bool:
    """Whether some word of `line` starts with one of `words` ("prefer" matches "prefers")."""
    line_words = WORD.findall(line.lower())
    return any(w.startswith(k) for k in words for w in line_words)


def _offers(tools: Any, name: str) -> bool:
    return isinstance(tools, list) and any(
        isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("name") == name for t in tools
    )


def _plain(line: str) -> str:
    """A result line without its bullet, Markdown emphasis and score: `[type] content`."""
    return SCORE.sub("", line.strip()[2:].replace("**", "")).strip()


def _after_tool(messages: list[dict[str, Any]]) -> str:
    """Rule 1: answer from the tool results that end the conversation."""
    results: list[str] = []
    for m in reversed(messages):
        if m.get("role") != "tool":
            break
        results.insert(0, _text(m.get("content")))
    for result in results:
        if result.startswith("memory unavailable"):
            return f"I could not check my memory ({result.splitlines()[0]}), so I don't know yet."
        for line in result.splitlines():
            if line.strip().startswith("- "):
                return f"I looked it up in memory: {_plain(line)}"
    return "I searched my memory but found nothing about that, so I don't know yet."


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message (role, content, maybe tool_calls) this fake answers to a request body."""
    messages = body["messages"]
    last = messages[-1]
    if last.get("role") == "tool":
        return {"role": "assistant", "content": _after_tool(messages)}
    if last.get("role") != "user":
        return {"role": "assistant", "content": "I don't know yet."}
    question = question_of(last)
    if not question.endswith("?"):
        return {"role": "assistant", "content": "Noted."}
    words = keywords(question)
    known = memory_lines(messages)
    hits = [line for line in known if _mentions(line, words)]
    if hits:
        return {"role": "assistant", "content": f"From what I remember: {hits[0]}"}
    if words and _offers(body.get("tools"), MEMORY_TOOL):
        call = {
            "id": f"call_{zlib.crc32(' '.join(words).encode()):08x}",  # stable across runs, unlike hash()
            "type": "function",
            "function": {"name": MEMORY_TOOL, "arguments": json.dumps({"query": " ".join(words), "limit": 3})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "I don't know yet."}


def _tokens(value: Any) -> int:
    """A rough token count (4 characters a token): the fake reports usage like a real server."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


class FakeLLMServer(ThreadingHTTPServer):
    """The HTTP server; `requests` holds every chat completion body it received, in order."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _Handler)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in /v1."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """Record a request body and build its chat.completion response."""
        with self.lock:
            self.requests.append(body)
            n = next(self._ids)
        message = reply(body)
        prompt_tokens = _tokens(body["messages"])
        completion_tokens = _tokens(message)
        return {
            "id": f"chatcmpl-fake-{n:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: FakeLLMServer
    protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects from a real server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the agent prints what matters; per-request access lines would drown it

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, param: str | None = None) -> None:
        # OpenAI's error shape, so clients report the problem as they would a real one.
        self._send(
            status, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}
        )

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": "memhub-example"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._error(HTTPStatus.NOT_FOUND, f"unknown path {self.path}")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(min(length, MAX_BODY_BYTES)) if length else b""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(HTTPStatus.NOT_FOUND, f"unknown path {self.path}")
            return
        if length > MAX_BODY_BYTES:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
            self.close_connection = True  # the unread rest of the body would corrupt the next request
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "body is not valid JSON")
            return
        if not isinstance(body, dict):
            self._error(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
            return
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            self._error(HTTPStatus.BAD_REQUEST, "messages must be a non-empty array of objects", "messages")
            return
        if body.get("stream"):
            self._error(HTTPStatus.BAD_REQUEST, "the fake LLM does not stream; send stream: false", "stream")
            return
        self._send(200, self.server.complete(body))


def start_fake_llm(port: int = 0, host: str = "127.0.0.1") -> tuple[FakeLLMServer, str]:
    """Serve in a daemon thread; returns the server (call `.stop()`) and its base URL (…/v1)."""
    server = FakeLLMServer((host, port))
    threading.Thread(target=server.serve_forever, name="fake-llm", daemon=True).start()
    return server, server.base_url


def main() -> None:
    """`python examples/fake_llm.py --port N`: serve until Ctrl-C."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    server = FakeLLMServer((args.host, args.port))
    print(f"fake LLM listening on {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
