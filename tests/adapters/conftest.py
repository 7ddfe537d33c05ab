"""A real gateway on a real socket for the framework adapters: the app over a SQLite file, served by uvicorn in
a thread, so the adapters reach it over HTTP exactly as they would a `memhub serve`."""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memhub.sdk.connection import Connection
from tests.conftest import GATEWAY_KEY, SERVICE, Gateway, build_gateway
from tests.served import Served as HttpServer
from tests.served import serve

_scopes = itertools.count()


@dataclass
class Served:
    """A gateway reachable at `url`; `connection(...)` gives a test its own team, agent and user on it."""

    gateway: Gateway
    http: HttpServer

    @property
    def url(self) -> str:
        return self.http.url

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
        self.http.stop()
        self.gateway.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One gateway per module (the pipeline worker off: these tests read what they wrote, not what it distils)."""
    gateway = build_gateway(Path(tmp_path_factory.mktemp("adapters")) / "data")
    served = Served(gateway, serve(gateway.client.app, name="adapters-gateway"))
    try:
        yield served
    finally:
        served.stop()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
