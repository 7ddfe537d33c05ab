"""How every SDK client turns a response (or its absence) into data or an error, client side only.

The decoding is shared by all clients, sync and async; each case runs through both MemoryClients with
an `httpx.MockTransport` answering with exactly the response under test. Connection failures and
timeouts use real sockets on loopback: a closed port and a listener that never answers.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from memhub.sdk import (
    AsyncKnowledgeClient,
    AsyncMemoryClient,
    AsyncMetadataClient,
    KnowledgeClient,
    MemoryClient,
    MetadataClient,
    TDAMError,
    TransportError,
)

ENDPOINT = "https://memory.example.com"
ISO = {"team_id": "t", "agent_id": "a", "user_id": "u"}
Answer = Callable[[httpx.Request], httpx.Response]


def invoke(result: Any) -> Any:
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


@pytest.fixture(params=["sync", "async"])
def call(request: pytest.FixtureRequest) -> Iterator[Callable[[Answer], Any]]:
    """`call(answer)`: `read_core()` on a client whose transport answers with `answer(request)`."""
    kind = MemoryClient if request.param == "sync" else AsyncMemoryClient

    def run(answer: Answer) -> Any:
        client = kind(ENDPOINT, "k", "svc", **ISO, transport=httpx.MockTransport(answer))
        try:
            return invoke(client.read_core())
        finally:
            invoke(client.close())

    yield run


def reply(status: int = 200, *, headers: dict[str, str] | None = None, **kwargs: Any) -> Answer:
    return lambda _request: httpx.Response(status, headers=headers, **kwargs)


def error_of(call: Callable[[Answer], Any], answer: Answer) -> TDAMError:
    with pytest.raises(TDAMError) as caught:
        call(answer)
    return caught.value


# -- success -----------------------------------------------------------------------------------------
def test_success_returns_data(call: Callable[[Answer], Any]) -> None:
    data = {"content": "# Persona", "version": 2}
    assert call(reply(json={"code": 0, "message": "ok", "request_id": "req-1", "data": data})) == data


def test_null_or_missing_data_is_an_empty_object(call: Callable[[Answer], Any]) -> None:
    assert call(reply(json={"code": 0, "message": "ok", "data": None})) == {}
    assert call(reply(json={"code": 0, "message": "ok"})) == {}


def test_trace_id_header_is_added_to_the_data(call: Callable[[Answer], Any]) -> None:
    envelope = {"code": 0, "data": None}
    assert call(reply(json=envelope, headers={"x-trace-id": "trace-1"})) == {"trace_id": "trace-1"}
    assert call(reply(json={"code": 0, "data": {"id": "x"}}, headers={"x-trace-id": "t2"})) == {
        "id": "x",
        "trace_id": "t2",
    }


@pytest.mark.parametrize("data", [[], "", 0, False, [1, 2], "ok", 3, True])
def test_non_object_data_is_malformed(call: Callable[[Answer], Any], data: Any) -> None:
    error = error_of(call, reply(json={"code": 0, "message": "ok", "data": data}, headers={"x-trace-id": "t"}))
    assert (error.code, error.message, error.request_id) == (-1, "API response data must be a JSON object", "t")


@pytest.mark.parametrize("envelope", [{"message": "ok", "data": {}}, {"code": True, "data": {}}, {"code": "0"}])
def test_a_success_needs_an_integer_code(call: Callable[[Answer], Any], envelope: dict[str, Any]) -> None:
    error = error_of(call, reply(json=envelope))
    assert (error.code, error.message) == (-1, "API response code must be an integer")


# -- errors ------------------------------------------------------------------------------------------
def test_business_error_keeps_code_message_request_id_and_details(call: Callable[[Answer], Any]) -> None:
    envelope = {"code": 40901, "message": "stale", "request_id": "req-e", "data": {"current_version": 3}}
    error = error_of(call, reply(json=envelope))
    assert (error.code, error.message, error.request_id, error.details) == (
        40901,
        "stale",
        "req-e",
        {"current_version": 3},
    )
    assert str(error) == "<TDAMError: (code=40901, message=stale, request_id=req-e)>"


def test_business_error_without_message_says_the_status(call: Callable[[Answer], Any]) -> None:
    error = error_of(call, reply(json={"code": 40901, "data": {"current_version": 3}}))
    assert (error.code, error.message, error.request_id) == (40901, "HTTP 200", "")
    assert str(error) == "<TDAMError: (code=40901, message=HTTP 200)>"


def test_http_error_uses_the_envelope_code_else_the_status(call: Callable[[Answer], Any]) -> None:
    error = error_of(call, reply(404, json={"code": 404, "message": "scene not found", "request_id": "req-4"}))
    assert (error.code, error.message, error.request_id) == (404, "scene not found", "req-4")
    error = error_of(call, reply(503, json={"message": "unavailable"}))
    assert (error.code, error.message) == (503, "unavailable")
    error = error_of(call, reply(500, json={"code": 0, "message": "odd"}))  # code 0 on an error status
    assert error.code == 500
    error = error_of(call, reply(429, json={"code": 4291, "message": "quota", "data": ["not", "a", "dict"]}))
    assert (error.code, error.details) == (4291, None)


def test_non_json_bodies(call: Callable[[Answer], Any]) -> None:
    error = error_of(call, reply(502, text="<html>Bad Gateway</html>", headers={"x-qcloud-transaction-id": "qc-1"}))
    assert (error.code, error.message, error.request_id) == (502, "<html>Bad Gateway</html>", "qc-1")
    error = error_of(call, reply(200, text="definitely not json"))
    assert (error.code, error.message) == (-1, "definitely not json")
    error = error_of(call, reply(500, content=b""))
    assert (error.code, error.message) == (500, "HTTP 500 returned a non-JSON response")
    error = error_of(call, reply(200, json=[1, 2]))
    assert (error.code, error.message) == (-1, "API response must be a JSON object")


def test_request_id_rules(call: Callable[[Answer], Any]) -> None:
    both = {"x-qcloud-transaction-id": "qc-1", "x-trace-id": "tr-1"}
    failing = {"code": 400, "message": "bad"}
    # The envelope's request id wins; then x-qcloud-transaction-id; then x-trace-id.
    assert error_of(call, reply(400, json={**failing, "request_id": "req-env"}, headers=both)).request_id == "req-env"
    assert error_of(call, reply(400, json=failing, headers=both)).request_id == "qc-1"
    assert error_of(call, reply(400, json=failing, headers={"x-trace-id": "tr-1"})).request_id == "tr-1"
    assert error_of(call, reply(400, json=failing, headers={"x-request-id": "not-read"})).request_id == ""
    # An empty envelope id falls back to the headers too.
    assert error_of(call, reply(400, json={**failing, "request_id": ""}, headers=both)).request_id == "qc-1"


def test_error_details_are_a_copy() -> None:
    details = {"current_version": 3}
    error = TDAMError(40901, "stale", details=details)
    details["current_version"] = 4
    assert error.details == {"current_version": 3}
    assert TDAMError(1, "x", details={}).details is None


# -- no response at all ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raised", "timeout"),
    [
        (httpx.ConnectError("connection refused"), False),
        (httpx.ReadError("connection reset by peer"), False),
        (httpx.RemoteProtocolError("server disconnected"), False),
        (httpx.ConnectTimeout("connect timed out"), True),
        (httpx.ReadTimeout("read timed out"), True),
        (httpx.PoolTimeout("no connection available"), True),
    ],
)
def test_transport_failures_are_transport_errors(
    call: Callable[[Answer], Any], raised: httpx.RequestError, timeout: bool
) -> None:
    def fail(_request: httpx.Request) -> httpx.Response:
        raise raised

    error = error_of(call, fail)
    assert isinstance(error, TransportError) and isinstance(error, TDAMError)
    assert (error.code, error.timeout, error.request_id) == (-1, timeout, "")
    assert error.__cause__ is raised
    assert "/v3/core/read" in error.message and ("timed out" in error.message) == timeout


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


CLIENTS: list[tuple[type, dict[str, Any], str, tuple[Any, ...]]] = [
    (MemoryClient, ISO, "read_core", ()),
    (AsyncMemoryClient, ISO, "read_core", ()),
    (MetadataClient, {}, "get_instance_quota", ()),
    (AsyncMetadataClient, {}, "get_instance_quota", ()),
    (KnowledgeClient, {"user_key": "sk-mem-x"}, "tools_list", ("wiki-abcdefgh",)),
    (AsyncKnowledgeClient, {"user_key": "sk-mem-x"}, "tools_list", ("wiki-abcdefgh",)),
]


@pytest.mark.parametrize(("kind", "extra", "method", "args"), CLIENTS, ids=[c[0].__name__ for c in CLIENTS])
def test_an_unreachable_gateway_is_a_transport_error(
    closed_port: int, kind: type, extra: dict[str, Any], method: str, args: tuple[Any, ...]
) -> None:
    client = kind(f"http://127.0.0.1:{closed_port}", "k", "svc", timeout=5, **extra)
    try:
        with pytest.raises(TransportError) as caught:
            invoke(getattr(client, method)(*args))
    finally:
        invoke(client.close())
    assert caught.value.code == -1 and caught.value.timeout is False
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(("kind", "extra", "method", "args"), CLIENTS, ids=[c[0].__name__ for c in CLIENTS])
def test_a_silent_gateway_is_a_transport_timeout(
    silent_port: int, kind: type, extra: dict[str, Any], method: str, args: tuple[Any, ...]
) -> None:
    client = kind(f"http://127.0.0.1:{silent_port}", "k", "svc", timeout=0.2, **extra)
    try:
        with pytest.raises(TransportError) as caught:
            invoke(getattr(client, method)(*args))
    finally:
        invoke(client.close())
    assert caught.value.code == -1 and caught.value.timeout is True
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)
