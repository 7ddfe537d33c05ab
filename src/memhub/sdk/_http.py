"""The one request/response path every client shares: options, headers, sending, envelope decoding (the parts
that need no HTTP library are in memhub.sdk._request).

A client method describes its call as a `Request` (path + JSON body) and hands it to `_send`; the
sync clients send through `SyncHttp`, the async ones through `AsyncHttp`, and both decode the answer
with `decode_response`. Client classes write each call once, generic in what `_send` returns
(`dict` for sync, an awaitable of it for async); `coroutine_calls` then makes the async class's
inherited calls real coroutine functions.

A read (`Request.reads`) is sent a second time, once, when its connection dropped under it
(`DROPPED_CONNECTION`): a pooled keep-alive connection the server closed while idle fails the next
request sent on it before any answer, and the pool then opens a fresh one. A write is never sent
twice by the SDK: the server may have done it before the connection dropped.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import httpx

from memhub.sdk._errors import ParamError, TransportError
from memhub.sdk._request import JsonObject, Request, decode_envelope, request_headers, transport_error

ClassT = TypeVar("ClassT", bound=type)

# What a connection that dropped under a request raises: the server closed it (an idle keep-alive connection
# reused just as the server timed it out), reset it, or it broke while the request was written. Timeouts are not
# among them (the server may be busy with the request), nor a refused connection (nothing to reuse: no server).
DROPPED_CONNECTION = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


@dataclass(frozen=True, slots=True)
class Options:
    """Where and how to send: the validated endpoint, the fixed headers, the timeout and TLS verification."""

    endpoint: str
    headers: Mapping[str, str]
    timeout: float
    verify: bool


def options(
    endpoint: str,
    api_key: str,
    service_id: str | None,
    *,
    user_key: str | None = None,
    timeout: float = 30,
    verify: bool = True,
    extra_headers: Mapping[str, str] | None = None,
) -> Options:
    """Validated connection options (ParamError otherwise) with the headers every request carries."""
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ParamError("endpoint must be provided")
    try:
        url = httpx.URL(endpoint.strip())
    except Exception as exc:  # httpx raises several types for unparsable URLs
        raise ParamError("endpoint must be a valid HTTP(S) URL") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ParamError("endpoint must be a valid HTTP(S) URL")
    if not isinstance(api_key, str) or not api_key.strip():
        raise ParamError("api_key must be provided")
    if not isinstance(service_id, str) or not service_id.strip():
        raise ParamError("service_id must be provided")
    # bool is an int; a timeout of True is a caller bug, not one second.
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ParamError("timeout must be a positive number")
    headers = request_headers(api_key, service_id, user_key=user_key, extra_headers=extra_headers)
    return Options(endpoint.strip().rstrip("/"), headers, float(timeout), verify)


def decode_response(response: httpx.Response) -> JsonObject:
    """The envelope's `data` (an object; `null` → `{}`, plus `trace_id` from `x-trace-id`), else TDAMError."""
    return decode_envelope(response.status_code, response.headers.get, response.content, lambda: response.text)


def _transport_error(exc: httpx.RequestError, request: Request) -> TransportError:
    return transport_error(request, exc, timeout=isinstance(exc, httpx.TimeoutException))


class SyncHttp:
    """Sends requests with an `httpx.Client`; shared by a client and every `with_isolation` clone."""

    def __init__(self, opts: Options, transport: httpx.BaseTransport | None = None) -> None:
        if transport is not None and not isinstance(transport, httpx.BaseTransport):
            raise ParamError("transport must be an httpx.BaseTransport for a synchronous client")
        self.options = opts
        self._client = httpx.Client(timeout=opts.timeout, verify=opts.verify, transport=transport)

    def _post(self, request: Request) -> httpx.Response:
        return self._client.post(
            self.options.endpoint + request.path, json=request.body, headers=dict(self.options.headers)
        )

    def send(self, request: Request) -> JsonObject:
        """POST the request and decode the envelope (a read whose connection dropped is sent once more)."""
        try:
            try:
                response = self._post(request)
            except DROPPED_CONNECTION:
                if not request.reads:
                    raise
                response = self._post(request)
        except httpx.RequestError as exc:
            raise _transport_error(exc, request) from exc
        return decode_response(response)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()


class AsyncHttp:
    """Sends requests with an `httpx.AsyncClient`; shared by a client and every `with_isolation` clone."""

    def __init__(self, opts: Options, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise ParamError("transport must be an httpx.AsyncBaseTransport for an asynchronous client")
        self.options = opts
        self._client = httpx.AsyncClient(timeout=opts.timeout, verify=opts.verify, transport=transport)

    async def _post(self, request: Request) -> httpx.Response:
        return await self._client.post(
            self.options.endpoint + request.path, json=request.body, headers=dict(self.options.headers)
        )

    async def send(self, request: Request) -> JsonObject:
        """POST the request and decode the envelope (a read whose connection dropped is sent once more)."""
        try:
            try:
                response = await self._post(request)
            except DROPPED_CONNECTION:
                if not request.reads:
                    raise
                response = await self._post(request)
        except httpx.RequestError as exc:
            raise _transport_error(exc, request) from exc
        return decode_response(response)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()


class SyncClient:
    """What every synchronous client shares: sending through its `SyncHttp`, closing, `with`."""

    _http: SyncHttp

    def _send(self, request: Request) -> JsonObject:
        return self._http.send(request)

    def close(self) -> None:
        """Close the connection (shared with every `with_isolation` clone)."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """What every asynchronous client shares: sending through its `AsyncHttp`, closing, `async with`."""

    _http: AsyncHttp

    def _send(self, request: Request) -> Awaitable[JsonObject]:
        return self._http.send(request)

    async def close(self) -> None:
        """Close the connection (shared with every `with_isolation` clone)."""
        await self._http.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def coroutine_calls(*bases: type) -> Callable[[ClassT], ClassT]:
    """Class decorator: every public call the `bases` define becomes an `async def` on the decorated class.

    The shared call returns `self._send(request)`, already awaitable in an async client; wrapping it
    keeps `inspect.iscoroutinefunction` true and defers argument errors to the `await`, as callers of
    an async API expect, while signature and docstring stay those of the one shared definition.
    """

    def wrap(method: Callable[..., Awaitable[JsonObject]]) -> Callable[..., Awaitable[JsonObject]]:
        @functools.wraps(method)
        async def call(self: Any, *args: Any, **kwargs: Any) -> JsonObject:
            return await method(self, *args, **kwargs)

        return call

    def decorate(cls: ClassT) -> ClassT:
        for base in bases:
            for name, member in vars(base).items():
                if not name.startswith("_") and inspect.isfunction(member):
                    setattr(cls, name, wrap(member))
        return cls

    return decorate
