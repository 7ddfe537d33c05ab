"""`/mcp` inside `memhub serve`: the same MCP server over streamable HTTP.

Each request is checked before any MCP work: its `Host` (421) and `Origin` (403) against `MEMHUB_MCP_ALLOWED_HOSTS`
/ `MEMHUB_MCP_ALLOWED_ORIGINS` (loopback only by default, which stops a web page from reaching a local gateway
through DNS rebinding), then its key as the data plane checks it (`Authorization: Bearer` with the gateway key or a
user key, `x-tdai-service-id`; 401 otherwise). No OAuth metadata is published: a host that found some would start
an OAuth flow instead of sending the key it was given.

Who a call acts as comes from that request's headers (`x-tdai-team-id`, `-agent-id`, `-user-id`, `x-tdai-user-key`;
with a user key, the ids it leaves out are resolved as `Connection.resolve` does), and every tool call goes through
the SDK to this same app in process (`httpx.ASGITransport`), so the gateway's own authentication and isolation
decide what it may read and write, exactly as for an HTTP client.

Stateless: every POST is authenticated and answered on its own (JSON, no SSE stream, no server-side session).
Nothing is pinned to one process, so several workers or replicas serve `/mcp` without sticky sessions; a session id
could not be hijacked by another key, since there is none; and the tool list needs no change notifications, because
each `tools/list` reads the catalogue afresh.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memhub.api.auth import Authenticator, bearer_token
from memhub.api.envelope import error, request_id_of
from memhub.errors import MemhubError
from memhub.mcp.backend import Clients, close_clients, open_clients
from memhub.mcp.server import MemhubMCP
from memhub.sdk.connection import HEADERS, Connection

PATH = "/mcp"
IN_PROCESS_URL = "http://memhub.internal"
RESOLVED_CACHE = 1024
DEFAULT_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
DEFAULT_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def _matches(value: str, allowed: Sequence[str]) -> bool:
    """An exact entry, `*` for anything, or `base:*` for `base` on any port."""
    for entry in allowed:
        if entry == "*" or value == entry or (entry.endswith(":*") and value.startswith(entry[:-1])):
            return True
    return False


def _headers_missing(missing: list[str]) -> str:
    names = ", ".join(HEADERS.get(flag[2:].replace("-", "_"), flag) for flag in missing)
    return (
        f"memhub connection incomplete: this request to /mcp needs the headers {names} "
        "(a user key implies them when its user has one team with one active agent)"
    )


def request_connection(request: Request) -> Connection:
    """The connection a request to /mcp stands for: its key, tenant and identity headers, to this app."""
    headers = request.headers

    def header(name: str) -> str | None:
        return headers.get(name, "").strip() or None

    ids = {name: header(HEADERS[name]) for name in ("service_id", "team_id", "agent_id", "user_id", "user_key")}
    return Connection(url=IN_PROCESS_URL, key=bearer_token(request), **ids)


class RequestBackend:
    """Clients per request, over the app itself; the ids a user key implies are remembered (not the answers)."""

    def __init__(self, app: FastAPI) -> None:
        self.transport = httpx.ASGITransport(app=app)
        self._resolved: OrderedDict[str, Connection] = OrderedDict()

    async def _resolve(self, connection: Connection) -> Connection:
        if not connection.missing():
            return connection
        # Keyed by a digest of everything presented: a changed header or key is a new lookup. A cached identity
        # grants nothing by itself: each call is checked again by the gateway with the key it carries.
        marker = hashlib.sha256(repr(connection).encode()).hexdigest()
        cached = self._resolved.get(marker)
        if cached is not None:
            self._resolved.move_to_end(marker)
            return cached
        resolved = await connection.resolve(transport=self.transport)
        if not resolved.missing():
            self._resolved[marker] = resolved
            while len(self._resolved) > RESOLVED_CACHE:
                self._resolved.popitem(last=False)
        return resolved

    @asynccontextmanager
    async def clients(self, request: Any) -> AsyncIterator[Clients]:
        if not isinstance(request, Request):
            raise RuntimeError("the /mcp backend serves HTTP requests only")
        resolved = await self._resolve(request_connection(request))
        clients = open_clients(resolved, self.transport, _headers_missing)
        try:
            yield clients
        finally:
            await close_clients(clients)


class McpEndpoint:
    """Host and origin, then the key, then the MCP session manager."""

    def __init__(
        self, auth: Authenticator, manager: StreamableHTTPSessionManager, hosts: Sequence[str], origins: Sequence[str]
    ) -> None:
        self.auth = auth
        self.manager = manager
        self.hosts = tuple(hosts)
        self.origins = tuple(origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        if not _matches(request.headers.get("host", ""), self.hosts):
            refusal = "Invalid Host header: add it to MEMHUB_MCP_ALLOWED_HOSTS"
            await PlainTextResponse(refusal, status_code=421)(scope, receive, send)
            return
        origin = request.headers.get("origin")
        if origin and not _matches(origin, self.origins):
            refusal = "Invalid Origin header: add it to MEMHUB_MCP_ALLOWED_ORIGINS"
            await PlainTextResponse(refusal, status_code=403)(scope, receive, send)
            return
        try:
            await self.auth.data_caller(request, request_id_of(request))
        except MemhubError as exc:
            response = error(request, exc)
            if response.status_code == 401:
                response.headers["www-authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def default_hosts(public_urls: Sequence[str | None]) -> tuple[str, ...]:
    """Loopback, and the host of each public URL the operator configured (an address they said clients use)."""
    declared = []
    for url in public_urls:
        if url:
            parsed = httpx.URL(url)
            declared += [parsed.host, f"{parsed.host}:*"] if parsed.host else []
    return (*DEFAULT_HOSTS, *declared)


def mount(
    app: FastAPI,
    *,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    public_urls: Sequence[str | None] = (),
) -> None:
    """Serve `/mcp` on `app`, the session manager running inside the app's lifespan.

    Empty allow-lists mean loopback only (and, for hosts, those of `public_urls`); `*` allows any (behind a proxy
    that checks them itself).
    """
    server = MemhubMCP(RequestBackend(app)).server()
    manager = StreamableHTTPSessionManager(server, stateless=True, json_response=True)
    hosts = allowed_hosts or default_hosts(public_urls)
    endpoint = McpEndpoint(app.state.auth, manager, hosts, allowed_origins or DEFAULT_ORIGINS)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(application: Any) -> AsyncIterator[Any]:
        # A mounted MCP app's own lifespan would never run: the manager runs inside the gateway's, and stops first.
        async with inner(application) as state, manager.run():
            yield state

    app.router.lifespan_context = lifespan
    # First: no route of the gateway (the proxy's catch-all patterns included) may shadow it.
    app.router.routes.insert(0, Route(PATH, endpoint=endpoint))
