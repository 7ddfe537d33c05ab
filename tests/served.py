"""An ASGI app on a real loopback socket: uvicorn in a thread, so clients reach it over HTTP exactly as they would a
`memhub serve`. The socket is bound and listening before the thread starts, so a client may connect at once (the
kernel queues it) and nothing waits for uvicorn to come up."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass
from typing import Any, Literal

import uvicorn


@dataclass
class Served:
    """A uvicorn server in a thread over a pre-bound socket."""

    server: uvicorn.Server
    thread: threading.Thread
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def serve(app: Any, *, lifespan: Literal["on", "off"] = "off", name: str = "test-uvicorn") -> Served:
    """Serve `app` on 127.0.0.1 (a free port). `lifespan="on"` runs the app's lifespan in the server (`/mcp` needs
    its session manager there); off, the app's owner (a TestClient) has started it already."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=name)
    thread.start()
    return Served(server, thread, sock.getsockname()[1])
