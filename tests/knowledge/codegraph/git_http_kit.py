"""Real git HTTP servers on loopback for the repository-URL tests (tests/knowledge/codegraph/test_code_graph_remote.py).

`GitHttpServer` listens on 127.0.0.1 (a free port) and answers one way: `serve(root)` runs `git http-backend`
as a CGI program over the bare repositories under `root` (smart HTTP, which shallow clones need);
`redirect(location)` answers every request with a 302; `error(status, body)` with that status and a
text/plain body, which git prints as `remote: …` lines. Each server records the paths it was asked for.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Answer:
    """How a server answers: CGI over `root`, or a fixed status with headers and body."""

    root: Path | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        return  # the test reads `requests`, not the console

    def _answer(self) -> None:
        self.server.requests.append(self.path)
        answer = self.server.answer
        if answer.root is not None:
            self._backend(answer.root)
            return
        self.send_response(answer.status)
        for name, value in {**answer.headers, "Content-Length": str(len(answer.body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(answer.body)

    def _backend(self, root: Path) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(length),
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        done = subprocess.run(
            ["git", "http-backend"], input=self.rfile.read(length), env=env, capture_output=True, timeout=60
        )
        head, _, body = done.stdout.partition(b"\r\n\r\n")
        headers = [line.split(":", 1) for line in head.decode("latin-1").split("\r\n") if ":" in line]
        status = next((int(v.split()[0]) for k, v in headers if k.lower() == "status"), 200)
        self.send_response(status)
        for name, value in headers:
            if name.lower() != "status":
                self.send_header(name, value.strip())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    # Closing the server waits for the requests it is still answering: nothing outlives the test.
    daemon_threads = False
    block_on_close = True

    def __init__(self, answer: Answer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answer = answer
        self.requests: list[str] = []


@dataclass
class GitHttpServer:
    """A running server: its base URL and the request paths it received."""

    server: _Server

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    @property
    def requests(self) -> list[str]:
        return self.server.requests


@contextmanager
def _running(answer: Answer) -> Iterator[GitHttpServer]:
    server = _Server(answer)
    # serve_forever looks for shutdown() every poll interval (0.5 s by default): every test would wait for it.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="git-http-test", daemon=True)
    thread.start()
    try:
        yield GitHttpServer(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def serve(root: Path) -> Any:
    """Smart HTTP over the bare repositories under `root` (`<base>/shop.git`)."""
    return _running(Answer(root=root))


def redirect(location: str) -> Any:
    """302 to `location` for every request."""
    return _running(Answer(status=302, headers={"Location": location}))


def error(status: int, body: str, headers: dict[str, str] | None = None) -> Any:
    """`status` with a text/plain `body` for every request."""
    return _running(
        Answer(status=status, headers={"Content-Type": "text/plain", **(headers or {})}, body=body.encode())
    )
