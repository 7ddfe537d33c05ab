"""The hooks' way to the gateway: one POST per call over the standard library's http.client, without httpx or asyncio.

Claude Code starts a new process for every hook event, so what a hook imports is most of what it costs the agent;
the SDK's clients (httpx, and asyncio under the async ones) took longer to import than the hook takes to run. The
requests are still the SDK's (the calls of memhub.sdk._memory_calls, `Connection.resolution`), with its headers and
its reading of the answer (memhub.sdk._request), so a hook sends exactly what `AsyncMemoryClient` would and fails with
the same errors: ParamError before sending, TDAMError for an error envelope, TransportError when no answer came.

Each request gets a connection of its own (a hook makes one to three) and is never sent twice. It is bound by the
sooner of the connection's timeout and the hook event's `Deadline`: every socket operation (connect, TLS handshake,
each write, each read) waits at most the time left before that instant, so a gateway that stalls, or answers a
byte at a time, cannot hold the hook past it. When the event's deadline is what ran out, the call raises
`DeadlineExceeded` (not a TDAMError, nor an OSError) and the whole event gives up.

Environment proxies (`HTTP_PROXY` …) are not used: the hooks connect to the gateway's URL directly.
"""

from __future__ import annotations

import http.client
import io
import socket
import time
from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

from memhub.sdk._errors import ParamError
from memhub.sdk._isolation import Isolation
from memhub.sdk._memory_calls import MemoryCalls
from memhub.sdk._request import JsonObject, Request, decode_envelope, request_headers, transport_error
from memhub.sdk.connection import Connection


class DeadlineExceeded(Exception):
    """The hook event's deadline passed before a call was answered."""


class Deadline:
    """The instant (monotonic clock) a hook event must be done by."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (≤ 0 once it has passed)."""
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return self.remaining() <= 0


class Gateway:
    """Sends requests to one gateway as one key and tenant (and user key, when given)."""

    def __init__(
        self, url: str, key: str, service_id: str, *, user_key: str | None, timeout: float, deadline: Deadline
    ) -> None:
        parts = urlsplit(url.strip())
        try:
            port = parts.port
        except ValueError as exc:  # a port that is not a number, or out of range
            raise ParamError("endpoint must be a valid HTTP(S) URL") from exc
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ParamError("endpoint must be a valid HTTP(S) URL")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = port
        self.base_path = parts.path.rstrip("/")
        self.headers = request_headers(key, service_id, user_key=user_key)
        self.timeout = timeout
        self.deadline = deadline

    def send(self, request: Request) -> JsonObject:
        """POST the request and decode the envelope: its data, else TDAMError (TransportError when no answer came),
        or DeadlineExceeded when the event's deadline ran out first."""
        if self.deadline.passed():
            raise DeadlineExceeded(f"POST {request.path}: no time left")
        until = min(time.monotonic() + self.timeout, self.deadline.at)
        body = request.encoded()
        connection = _connection(self.https, self.host, self.port, until)
        try:
            connection.request(
                "POST",
                self.base_path + request.path,
                body=body,
                headers={**self.headers, "Connection": "close"},
            )
            response = connection.getresponse()
            content = response.read()
        except TimeoutError as exc:
            if self.deadline.passed():
                raise DeadlineExceeded(f"POST {request.path}: the hook's deadline passed") from exc
            raise transport_error(request, exc, timeout=True) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise transport_error(request, exc, timeout=False) from exc
        finally:
            connection.close()
        charset = response.headers.get_content_charset() or "utf-8"
        return decode_envelope(
            response.status, response.headers.get, content, lambda: content.decode(charset, errors="replace")
        )

    def run(self, steps: Generator[Request, JsonObject, Any]) -> Any:
        """Send each request `steps` yields, its answer sent back in; what `steps` returns."""
        try:
            request = next(steps)
            while True:
                request = steps.send(self.send(request))
        except StopIteration as done:
            return done.value


class MemoryWire(MemoryCalls[JsonObject]):
    """The data-plane calls (`read_core`, `recall`, `add_conversation` …) sent through a `Gateway`, bound to a team,
    agent and user."""

    def __init__(self, isolation: Isolation, gateway: Gateway) -> None:
        self._iso = isolation
        self._gateway = gateway

    def _send(self, request: Request) -> JsonObject:
        return self._gateway.send(request)


def memory(connection: Connection, deadline: Deadline) -> MemoryWire:
    """The data-plane calls as `connection.memory_client()` makes them (ParamError when it is incomplete)."""
    connection.require()
    assert (
        connection.key and connection.service_id and connection.team_id and connection.agent_id and connection.user_id
    )
    gateway = Gateway(
        connection.url,
        connection.key,
        connection.service_id,
        user_key=connection.user_key,
        timeout=connection.timeout,
        deadline=deadline,
    )
    return MemoryWire(Isolation(connection.team_id, connection.agent_id, connection.user_id), gateway)


def resolve(connection: Connection, deadline: Deadline) -> Connection:
    """`connection.resolve()`: the ids its user key implies, asked of the gateway with that key."""
    if not connection.key or not connection.service_id:
        return connection  # nothing can be asked without them; `resolution` asks nothing either
    gateway = Gateway(
        connection.url,
        connection.key,
        connection.service_id,
        user_key=connection.personal_key,
        timeout=connection.timeout,
        deadline=deadline,
    )
    resolved: Connection = gateway.run(connection.resolution())
    return resolved


class _Bounded:
    """A connected socket whose every write and read waits at most until `until` (the monotonic clock)."""

    def __init__(self, sock: socket.socket, until: float) -> None:
        self._sock = sock
        self._until = until

    def arm(self) -> None:
        """Give the next operation the time left, or time out now when there is none."""
        left = self._until - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(left)

    def sendall(self, data: Any) -> None:
        self.arm()
        self._sock.sendall(data)  # a socket timeout bounds the whole of sendall, not each chunk

    def makefile(self, mode: str) -> io.BufferedReader:
        """The response stream. It holds the socket open as the socket's own makefile does: http.client closes the
        connection (this) as soon as it has read the headers of a `Connection: close` answer, before the body."""
        if mode != "rb":
            raise ValueError(f"unsupported mode {mode!r}")
        return io.BufferedReader(_BoundedReader(self._sock.makefile("rb", buffering=0), self))

    def close(self) -> None:
        self._sock.close()


class _BoundedReader(io.RawIOBase):
    """The socket's raw stream, each read given the time left."""

    def __init__(self, raw: Any, sock: _Bounded) -> None:
        self._raw = raw
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.arm()
        read: int = self._raw.readinto(buffer)
        return read

    def close(self) -> None:
        self._raw.close()
        super().close()


class _BoundedMixin:
    """http.client's connection, with its socket made a `_Bounded` once connected (after the TLS handshake, for
    HTTPS)."""

    sock: Any
    timeout: float | None

    def __init__(self, host: str, port: int | None, until: float) -> None:
        super().__init__(host, port)  # type: ignore[call-arg]
        self.until = until

    def connect(self) -> None:
        left = self.until - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        self.timeout = left  # what http.client's connect and TLS handshake wait at most
        super().connect()  # type: ignore[misc]
        self.sock = _Bounded(self.sock, self.until)


class _HTTPConnection(_BoundedMixin, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_BoundedMixin, http.client.HTTPSConnection):
    pass


def _connection(https: bool, host: str, port: int | None, until: float) -> http.client.HTTPConnection:
    return (_HTTPSConnection if https else _HTTPConnection)(host, port, until)
