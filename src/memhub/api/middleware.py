"""ASGI middleware: request ids, CORS allow-list and OPTIONS → 204 before any route runs; 500s after."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memhub.api.envelope import internal_error
from memhub.ids import request_id

log = logging.getLogger("memhub.api")

ALLOWED_HEADERS = ", ".join(
    [
        "authorization", "content-type", "content-encoding", "idempotency-key", "x-request-id",
        "x-tdai-service-id", "x-tdai-user-key", "x-tdai-team-id", "x-tdai-agent-id", "x-tdai-user-id",
        "x-tdai-session-id", "x-tdai-task-id",
        # A browser-based MCP client of `/mcp` sends these (streamable HTTP).
        "mcp-protocol-version", "mcp-session-id", "last-event-id",
    ]
)  # fmt: skip


class CorsPolicy:
    """Which browser origins may read responses (an allow-list, `*` for any)."""

    def __init__(self, origins: Sequence[str]) -> None:
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)

    def allows(self, origin: str | None) -> bool:
        return origin is not None and (self.any_origin or origin in self.origins)

    def apply(self, headers: MutableHeaders, origin: str | None) -> None:
        """Add the response headers an allowed origin needs (nothing for others)."""
        if self.allows(origin):
            headers["access-control-allow-origin"] = "*" if self.any_origin else str(origin)
            headers["access-control-expose-headers"] = "x-request-id, mcp-session-id"
            headers.add_vary_header("Origin")


class GatewayMiddleware:
    """Assigns `req-<16hex>` ids, answers OPTIONS with 204 and adds CORS headers for allowed origins.

    It also turns an unhandled error into the 500 envelope (with a trace id for the logs). Starlette's
    own error middleware would send that response and then re-raise, and uvicorn closes a connection
    whose application raised: every 500 would silently cost the client its keep-alive connection.
    """

    def __init__(self, app: ASGIApp, cors: CorsPolicy) -> None:
        self.app = app
        self.cors = cors

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id()
        scope.setdefault("state", {})["request_id"] = rid
        origin = Headers(scope=scope).get("origin")

        if scope["method"] == "OPTIONS":
            headers = MutableHeaders()
            headers["x-request-id"] = rid
            self.cors.apply(headers, origin)
            if self.cors.allows(origin):
                headers["access-control-allow-methods"] = "GET, POST, OPTIONS"
                headers["access-control-allow-headers"] = ALLOWED_HEADERS
                headers["access-control-max-age"] = "600"
            await send({"type": "http.response.start", "status": 204, "headers": headers.raw})
            await send({"type": "http.response.body", "body": b""})
            return

        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                # A route may adopt the caller's transaction id (the management plane does).
                headers["x-request-id"] = scope["state"].get("request_id", rid)
                self.cors.apply(headers, origin)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:
            if started:
                raise  # half a response is out: the connection cannot carry another one
            response, trace_id = internal_error(Request(scope))
            log.error("unhandled error trace_id=%s path=%s", trace_id, scope.get("path"), exc_info=exc)
            await response(scope, receive, send_with_headers)
