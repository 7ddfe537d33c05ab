"""A real HTTP reverse proxy in front of a real `memhub serve`, which can make the gateway misbehave.

The gateway itself is never mocked: in `pass` mode the proxy forwards every request and response byte
for byte. The other modes model what an agent meets in production between it and the gateway: a slow
gateway, 5xx errors, a body that is not JSON, a response lost after the gateway did the work
(`lose_response`, the case idempotent retries exist for), and a kept-alive connection the server closes
just as the client reuses it (`stale`: a connection that already served a request is closed, without an
answer, when its next request arrives, as by a server whose idle timeout fires at that moment; the
request is not forwarded).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

import httpx

Mode = Literal["pass", "slow", "error", "malformed", "lose_response", "refuse", "stale"]
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class FaultProxy:
    """Forwards to `upstream`; `mode` (settable at any time) decides what the client gets back."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.mode: Mode = "pass"
        self.delay = 0.0  # seconds, for "slow"; a held request is let go when the proxy closes
        self.only_paths: tuple[str, ...] = ()  # faults apply only to these paths when set
        self.seen: list[str] = []
        # A fresh upstream connection per request: uvicorn closes a keep-alive connection idle for 5 s, and a
        # request sent on one just as it closes fails (RemoteProtocolError), which a test would read as a fault.
        self._http = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))
        self._closing = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                proxy.handle(self)

            do_GET = do_POST

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # serve_forever looks for shutdown() every poll interval (0.5 s by default): every test would wait for it.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def _faulty(self, path: str) -> bool:
        return self.mode != "pass" and (not self.only_paths or path in self.only_paths)

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        """Serve one request according to the current mode."""
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else b""
        self.seen.append(h.path)
        faulty = self._faulty(h.path)
        mode = self.mode if faulty else "pass"
        served_before = getattr(h, "served", 0)  # one handler serves one connection
        h.served = served_before + 1  # type: ignore[attr-defined]
        if mode == "refuse" or (mode == "stale" and served_before):
            h.close_connection = True
            h.connection.close()
            return
        if mode == "slow" and self._closing.wait(self.delay):
            h.close_connection = True
            h.connection.close()
            return
        if mode == "error":
            self._reply(h, 503, b'{"code":503,"message":"upstream overloaded","request_id":"req-fault"}')
            return
        if mode == "malformed":
            self._reply(h, 200, b"<html>gateway says hello</html>", content_type="text/html")
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP_HEADERS and k.lower() != "host"}
        try:
            upstream = self._http.request(h.command, self.upstream + h.path, content=body, headers=headers)
        except (httpx.HTTPError, RuntimeError):  # upstream gone, or the proxy closed while this request slept
            h.close_connection = True
            h.connection.close()
            return
        if mode == "lose_response":
            # The gateway did the work; the client never hears about it.
            h.close_connection = True
            h.connection.close()
            return
        out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_HEADERS}
        self._reply(h, upstream.status_code, upstream.content, headers=out_headers)

    @staticmethod
    def _reply(
        h: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        h.send_response(status)
        sent = {k.lower() for k in (headers or {})}
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        if "content-type" not in sent:
            h.send_header("content-type", content_type)
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    def close(self) -> None:
        """Stop serving (requests still held by "slow" end without an answer)."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._http.close()


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """A proxy for the duration of a test."""
    proxy = FaultProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
