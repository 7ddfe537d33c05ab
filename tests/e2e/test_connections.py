"""A real `memhub serve` over raw sockets: a 500 leaves the keep-alive connection usable, and a client that
dribbles its body gets a 408 instead of holding a worker forever."""

from __future__ import annotations

import json
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memhub.store.sqlite.store import DB_FILENAME
from tests.e2e.conftest import GATEWAY_KEY, HOST, SCOPE, SERVICE, Launcher

pytestmark = pytest.mark.timeout(120)

# Every wait below is a deadline for a server that stopped answering, never a measurement.
SOCKET_DEADLINE = 60.0
QUIET = {"MEMHUB_PIPELINE_ENABLED": "false", "MEMHUB_EMBEDDING_PROVIDER": "none"}


def _request(path: str, body: bytes, *, declared: int | None = None) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: Bearer {GATEWAY_KEY}\r\n"
        f"x-tdai-service-id: {SERVICE}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if declared is None else declared}\r\n\r\n"
    )
    return head.encode() + body


def _read_response(sock: socket.socket, buffered: bytearray) -> tuple[int, dict[str, str], Any]:
    """One HTTP/1.1 response with a Content-Length body (what uvicorn sends for the envelope)."""
    while b"\r\n\r\n" not in buffered:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {bytes(buffered)!r}"
        buffered += chunk
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed in the middle of a response body"
        rest += chunk
    buffered[:] = rest[length:]
    return int(status_line.split()[1]), headers, json.loads(rest[:length])


def _drop_profile_table(data_dir: Path) -> None:
    # A store fault the server cannot foresee: the table behind core/read disappears under it.
    with sqlite3.connect(data_dir / DB_FILENAME) as db:
        db.execute("DROP TABLE profile_documents")
    db.close()


def test_a_500_is_an_ordinary_response_on_a_connection_that_stays_usable(launcher: Launcher, data_dir: Path) -> None:
    server = launcher.serve(data_dir, env=QUIET)
    _drop_profile_table(data_dir)
    body = json.dumps(SCOPE).encode()
    with socket.create_connection((HOST, server.port), timeout=SOCKET_DEADLINE) as sock:
        buffered = bytearray()
        sock.sendall(_request("/v3/core/read", body))
        status, headers, envelope = _read_response(sock, buffered)
        assert status == 500, envelope
        assert set(envelope) == {"code", "message", "request_id", "trace_id", "retryable"}
        assert headers["x-request-id"] == envelope["request_id"]
        assert headers.get("connection", "").lower() != "close"
        # The same connection carries the next request.
        sock.sendall(_request("/v3/conversation/count", body))
        status, _, envelope = _read_response(sock, buffered)
        assert (status, envelope["code"], envelope["data"]) == (200, 0, {"total": 0})
    assert envelope["request_id"] != headers["x-request-id"]
    assert "Exception in ASGI application" not in server.stderr  # handled, not escaped to the server


def test_a_body_that_does_not_arrive_in_time_is_408_and_the_connection_closes(
    launcher: Launcher, data_dir: Path
) -> None:
    server = launcher.serve(data_dir, env={**QUIET, "MEMHUB_BODY_READ_TIMEOUT_SECONDS": "0.2"})
    with socket.create_connection((HOST, server.port), timeout=SOCKET_DEADLINE) as sock:
        buffered = bytearray()
        # Headers promise 100 bytes; only the first few ever come.
        sock.sendall(_request("/v3/conversation/add", b'{"messages": [', declared=100))
        status, headers, envelope = _read_response(sock, buffered)
        assert status == 408, envelope
        assert envelope["code"] == 408
        assert envelope["message"] == "Request body not received within 0.2 seconds"
        assert headers["connection"].lower() == "close"
        assert sock.recv(65536) == b""  # the server hung up: the rest of that body can never be a request
    with server.api() as api:
        assert api.ok("/v3/conversation/count", SCOPE) == {"total": 0}
