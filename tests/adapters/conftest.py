"""A real gateway on a real socket for the framework adapters: the app over a SQLite file, served by uvicorn in
a thread, so the adapters reach it over HTTP exactly as they would a `memhub serve`."""

from __future__ import annotations

import itertools
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from memhub.sdk.connection import Connection
from tests.conftest import GATEWAY_KEY, SERVICE, Gateway, build_gateway

_scopes = itertools.count()


@dataclass
class Served:
    """A gateway reachable at `url`; `connection(...)` gives a test its own team, agent and user on it."""

    gateway: Gateway
    server: uvicorn.Server
    thread: threading.Thread
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connection(self) -> Connection:
        n = next(_scopes)
        return Connection(
            url=self.url,
            key=GATEWAY_KEY,
            service_id=SERVICE,
            team_id=f"team-ad-{n}",
            agent_id=f"agent-ad-{n}",
            user_id=f"user-ad-{n}",
        )

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.gateway.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One gateway per module (the pipeline worker off: these tests read what they wrote, not what it distils).

    The socket is bound and listening before the server thread starts, so a client may connect at once (the
    kernel queues it) and nothing waits for uvicorn to come up.
    """
    gateway = build_gateway(Path(tmp_path_factory.mktemp("adapters")) / "data")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(gateway.client.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="adapters-gateway")
    thread.start()
    served = Served(gateway, server, thread, sock.getsockname()[1])
    try:
        yield served
    finally:
        served.stop()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
