"""Test helpers: a live HTTP server for a gateway, and a transport that records what an SDK client sent.

The SDK's clients (`memhub.sdk`) build the requests; `Recorder` wraps the real HTTP transport so tests
can assert the exact paths, bodies and headers that went on the wire.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from tests.conftest import Gateway


# -- a live server -----------------------------------------------------------------------------
@contextmanager
def serve(gw: Gateway) -> Iterator[Gateway]:
    """The gateway's app on a real socket (uvicorn in a thread); yields the gateway talking HTTP to it.

    The yielded Gateway shares the store; its `client` is an `httpx.Client` with a base URL, so
    Org, table_snapshot and the tests work unchanged, over a real TCP connection.
    """
    app = gw.client.app
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a failure bound: a busy machine may take a while
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        assert thread.is_alive(), "server thread died"
        time.sleep(0.005)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
    try:
        yield dataclasses.replace(gw, client=client)  # type: ignore[arg-type]
    finally:
        client.close()
        server.should_exit = True
        thread.join(10)
        sock.close()


# -- what a client sent ------------------------------------------------------------------------
@dataclass(frozen=True)
class Sent:
    """One request as it went on the wire."""

    path: str
    body: Any
    headers: httpx.Headers  # case-insensitive, as HTTP headers are


class Recorder(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A real HTTP transport (sync or async) that records every request before sending it.

    `sent` holds `Sent` entries; `calls` the (path, body) pairs, the shape the shape tests compare.
    """

    def __init__(self) -> None:
        self.sent: list[Sent] = []
        self._sync: httpx.HTTPTransport | None = None
        self._async: httpx.AsyncHTTPTransport | None = None

    @property
    def calls(self) -> list[tuple[str, Any]]:
        return [(s.path, s.body) for s in self.sent]

    def _record(self, request: httpx.Request) -> None:
        body = json.loads(request.content) if request.content else None
        self.sent.append(Sent(request.url.path, body, httpx.Headers(request.headers)))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self._record(request)
        self._sync = self._sync or httpx.HTTPTransport()
        return self._sync.handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self._record(request)
        self._async = self._async or httpx.AsyncHTTPTransport()
        return await self._async.handle_async_request(request)

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.aclose()
