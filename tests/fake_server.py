"""The lifecycle every fake model provider shares: a real HTTP server on 127.0.0.1, started by the test.

Subclasses (tests/retrieval/fake_openai.py, tests/pipeline/fake_llm.py) say how to answer; this
module starts and stops the server (a restart reuses the port, so a client's base_url keeps
working) and cuts keep-alive connections on stop, so a pooled client cannot reach a stopped server.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self


class TrackedHandler(BaseHTTPRequestHandler):
    """Keep-alive like real providers; registers its connection so that stop() can cut it."""

    fake: LocalServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; Nagle would add ~40 ms to each

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):  # the socket may already be cut by stop()
            super().finish()


@dataclass
class LocalServer:
    """Start/stop/context-manager of a fake server; `handler` answers its requests."""

    handler: ClassVar[type[TrackedHandler]]

    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _connections: set[socket.socket] = field(default_factory=set, init=False, repr=False)
    _port: int = field(default=0, init=False, repr=False)

    def start(self) -> Self:
        """Listen on 127.0.0.1 (a free port the first time, the same port after a stop)."""
        if self._server is not None:
            return self
        self._stopping.clear()
        handler = type("Handler", (self.handler,), {"fake": self})
        server = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        server.daemon_threads = True
        self._port = server.server_address[1]
        self._server = server
        name = type(self).__name__
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name=name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening (later requests are refused); wakes up requests held back on purpose."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>/v1`."""
        if not self._port:
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"http://127.0.0.1:{self._port}/v1"
