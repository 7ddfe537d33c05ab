"""The hooks' standard-library way to the gateway (memhub.hooks.wire) when the gateway misbehaves: a server that
accepts and never answers, one that answers a byte at a time, one that answers with an error envelope or with
something that is not an envelope. Every event still ends quietly ("" printed, one log line), and a stalled
gateway cannot hold it past its deadline.

The misbehaving gateways are real TCP servers on loopback sockets, written here because no real gateway behaves
that way on purpose.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memhub.hooks.run import run
from memhub.hooks.state import CursorStore
from memhub.hooks.wire import Deadline, DeadlineExceeded, Gateway
from memhub.sdk._errors import TDAMError, TransportError
from memhub.sdk._request import Request
from memhub.sdk.connection import Connection
from tests.hooks.conftest import SCOPE, Transcript

# Long enough that a loaded machine still connects and sends well inside it; the stalls below last far longer.
DEADLINE_S = 1.5
STALL_S = 600.0


class RawServer:
    """A loopback TCP server whose every connection is handled by `serve(conn)` on its own thread."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self._serve = serve
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.connections = 0
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the client gave up and closed: what the stalls wait for
            self._serve(conn)

    def stall(self) -> None:
        """Block a handler until the server closes (or STALL_S passes)."""
        self._release.wait(STALL_S)

    def close(self) -> None:
        self._release.set()
        self._sock.close()


def read_request(conn: socket.socket) -> bytes:
    """The request's head and body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


@pytest.fixture
def servers() -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    made: list[RawServer] = []

    def make(serve: Callable[[socket.socket], None]) -> RawServer:
        made.append(RawServer(serve))
        return made[-1]

    yield make
    for server in made:
        server.close()


def silent_server(servers: Callable[[Callable[[socket.socket], None]], RawServer]) -> RawServer:
    """A server that reads each request and never answers (until the test ends)."""
    holder: list[RawServer] = []

    def silent(conn: socket.socket) -> None:
        read_request(conn)
        holder[0].stall()

    holder.append(servers(silent))
    return holder[0]


def connection(url: str) -> Connection:
    return Connection(url=url, key="mh-gw-wire-test-key-0123456789", service_id="svc", **SCOPE)


def gateway(url: str, deadline: Deadline, timeout: float = 30.0) -> Gateway:
    return Gateway(url, "mh-gw-wire-test-key-0123456789", "svc", user_key=None, timeout=timeout, deadline=deadline)


READ_CORE = Request("/v3/core/read", {**SCOPE})


def test_a_gateway_that_never_answers_ends_at_the_deadline(
    servers: Callable[[Callable[[socket.socket], None]], RawServer], tmp_path: Path
) -> None:
    server = silent_server(servers)
    with pytest.raises(DeadlineExceeded):
        gateway(server.url, Deadline(DEADLINE_S)).send(READ_CORE)

    payload = {"session_id": "s", "source": "startup"}
    out = run("session-start", json.dumps(payload), connection(server.url), deadline=DEADLINE_S, directory=tmp_path)
    assert out == ""
    assert "session-start: gave up after the 1.5 s deadline" in (tmp_path / "hooks.log").read_text()


def test_an_answer_a_byte_at_a_time_cannot_outlast_the_deadline(
    servers: Callable[[Callable[[socket.socket], None]], RawServer],
) -> None:
    """Each byte comes sooner than any per-read timeout would notice; only the deadline over the whole call ends it."""
    holder: list[RawServer] = []
    stop = threading.Event()

    def dribble(conn: socket.socket) -> None:
        read_request(conn)
        for byte in response(200, b'{"code":0,"data":{}}' + b" " * 100_000):
            if stop.wait(0.05):
                return
            conn.sendall(bytes([byte]))

    server = servers(dribble)
    holder.append(server)
    try:
        with pytest.raises(DeadlineExceeded):
            gateway(server.url, Deadline(DEADLINE_S)).send(READ_CORE)
    finally:
        stop.set()


def test_the_connection_timeout_ends_a_call_before_a_later_deadline(
    servers: Callable[[Callable[[socket.socket], None]], RawServer],
) -> None:
    """The connection's own timeout, sooner than the event's deadline, is a TransportError (timeout), not the end
    of the event."""
    server = silent_server(servers)
    with pytest.raises(TransportError) as caught:
        gateway(server.url, Deadline(STALL_S), timeout=DEADLINE_S).send(READ_CORE)
    assert caught.value.timeout is True


def test_an_error_envelope_is_a_tdam_error_with_its_code(
    servers: Callable[[Callable[[socket.socket], None]], RawServer], tmp_path: Path
) -> None:
    sent: list[bytes] = []

    def refuse(conn: socket.socket) -> None:
        sent.append(read_request(conn))
        body = {"code": 401, "message": "unauthorized: invalid_api_key", "request_id": "rid-1", "data": None}
        conn.sendall(response(401, json.dumps(body).encode()))

    server = servers(refuse)
    with pytest.raises(TDAMError) as caught:
        gateway(server.url, Deadline(STALL_S)).send(READ_CORE)
    assert (caught.value.code, caught.value.request_id) == (401, "rid-1")
    # What went out is what the SDK's clients send: the key as Bearer token, the tenant, compact JSON.
    head, _, body = sent[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v3/core/read HTTP/1.1")
    assert b"Authorization: Bearer mh-gw-wire-test-key-0123456789" in head
    assert b"x-tdai-service-id: svc" in head
    assert json.loads(body) == SCOPE

    out = run("session-start", "{}", connection(server.url), directory=tmp_path)
    assert out == ""
    log = (tmp_path / "hooks.log").read_text()
    assert "persona unavailable: <TDAMError: (code=401, message=unauthorized: invalid_api_key" in log


def test_a_body_that_is_not_an_envelope_is_an_error(
    servers: Callable[[Callable[[socket.socket], None]], RawServer],
) -> None:
    def html(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(response(502, b"<html>bad gateway</html>", "text/html"))

    server = servers(html)
    with pytest.raises(TDAMError) as caught:
        gateway(server.url, Deadline(STALL_S)).send(READ_CORE)
    assert caught.value.code == 502 and "bad gateway" in str(caught.value)


def test_a_capture_cut_by_the_deadline_stays_pending_and_is_sent_once_later(
    servers: Callable[[Callable[[socket.socket], None]], RawServer], tmp_path: Path
) -> None:
    """A stop that gave up mid-send keeps its range pending: the next stop, against a gateway that answers, sends
    it (with the same idempotency key, so a request the stalled gateway did process is not stored twice)."""
    holder: list[RawServer] = []
    keys: list[str] = []

    def silent(conn: socket.socket) -> None:
        keys.append(json.loads(read_request(conn).partition(b"\r\n\r\n")[2])["idempotency_key"])
        holder[0].stall()

    stalled = servers(silent)
    holder.append(stalled)
    t = Transcript(tmp_path / "s.jsonl", "s-wire")
    t.append(t.user("The release train leaves every Tuesday at noon."))
    state = tmp_path / "state"
    stop = json.dumps(t.payload("Stop"))
    assert run("stop", stop, connection(stalled.url), deadline=DEADLINE_S, directory=state) == ""
    assert "gave up after the 1.5 s deadline" in (state / "hooks.log").read_text()
    assert CursorStore(state).load("s-wire").pending_start == 0

    def accept(conn: socket.socket) -> None:
        keys.append(json.loads(read_request(conn).partition(b"\r\n\r\n")[2])["idempotency_key"])
        conn.sendall(response(200, json.dumps({"code": 0, "message": "ok", "data": {"added": 1}}).encode()))

    answering = servers(accept)
    assert run("stop", json.dumps(t.payload("Stop")), connection(answering.url), directory=state) == ""
    cursor = CursorStore(state).load("s-wire")
    assert cursor.pending_start is None and cursor.offset > 0
    assert len(keys) == 2 and keys[0] == keys[1]
