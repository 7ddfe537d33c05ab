"""`POST /memory-bridge/v3/<op>`: the memory tools the proxy offers the model, called with a session token.

The `<tdai_memory_tools>` recipes send only `x-memhub-session: <token>` (memhub.proxy.session_token): no user key
and no ids are in the prompt. Each operation runs the same data-plane route handler as `/v3/<op>` (same body
rules, same answer, same 400 envelope for a bad body), with the caller the token's user key stands for and the
isolation the token names: team, user, agent and task from the token override any the body carries, so the model
cannot read another scope; the key's authorization (memhub.meta.access) still applies, exactly as it would to the
key on `/v3`. Only reads are served (the original's allow-list plus `recall`); any other operation is a 404.

`tools/list` and `tools/call` run the `/v3/tools/*` handlers as the token's user, so the `<knowledge_tools>` and
skill recipes the proxy injects reach this gateway's wikis, code graphs and skills with the same token: an agent
needs no key of its own in its shell. Every tool is a read.

Session: searches span the scope's sessions unless the body names a `session_id`; `conversation/query` pages
through the token's session unless the body names another of the same scope.

`offload/read-ref` (when the gateway serves context offload) reads back a tool result the proxy's offload took
out of the context, as `/v2/offload/read-ref` does: from the token's session unless the body names another of
the user's sessions under the same team and agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from memhub.api.body import read_json_object
from memhub.api.dataplane import DataPlane, DataRoute
from memhub.api.envelope import request_id_of
from memhub.api.guarded import GuardedPlane, GuardedRoute
from memhub.api.routes import atomic, conversation, profile, recall, tools
from memhub.api.schemas import Body
from memhub.api.validation import parse_model
from memhub.errors import Forbidden, Unauthorized
from memhub.proxy.ports import ProxyDenied
from memhub.proxy.session_token import BRIDGE_PATH, SESSION_HEADER, SessionTokens, VerifiedSession
from memhub.scope import Isolation

READ_ONLY = (
    "atomic/search",
    "atomic/query",
    "conversation/search",
    "conversation/query",
    "scenario/ls",
    "scenario/read",
    "recall",
)
# Operations that read one session's history by default (the others span the scope's sessions).
SESSION_DEFAULT = frozenset({"conversation/query"})
OFFLOAD_READ = "offload/read-ref"  # its body requires a session id: the token's unless the body names one
MISSING_TOKEN = f"unauthorized: missing {SESSION_HEADER} header"
NO_SCOPE = "team_id: the session has no memory scope (no team and agent were decided for it)"


def tools_routes() -> dict[str, GuardedRoute]:
    """The knowledge tools routes the bridge serves, by operation path."""
    return {f"tools/{route.path}": route for route in tools.ROUTES}


def read_only_routes(routes: Sequence[DataRoute] | None = None) -> dict[str, DataRoute]:
    """The data-plane routes the bridge serves, by operation path."""
    every = routes if routes is not None else [*atomic.ROUTES, *conversation.ROUTES, *profile.ROUTES, *recall.ROUTES]
    by_path = {route.path: route for route in every}
    return {path: by_path[path] for path in READ_ONLY}


def _isolation(session: VerifiedSession, op: str, body: Body) -> Isolation:
    identity = session.identity
    if not identity.has_memory_scope:
        raise Forbidden(NO_SCOPE, data={"errors": [{"field": "team_id", "rule": "the session has no memory scope"}]})
    assert identity.team_id is not None and identity.agent_id is not None
    asked = (body.session_id or "").strip() or None
    return Isolation(
        service_id=identity.service_id,
        team_id=identity.team_id,
        user_id=identity.user_id,
        agent_id=identity.agent_id,
        task_id=identity.task_id or "",
        session_id=asked or (identity.session_id if op in SESSION_DEFAULT else None),
        profile_team_id=identity.team_id,
    )


@dataclass(frozen=True, slots=True)
class MemoryBridge:
    """The bridge's routes over a data plane and the proxy's session tokens."""

    plane: DataPlane
    tokens: SessionTokens
    routes: Mapping[str, DataRoute] = field(default_factory=read_only_routes)
    tools: GuardedPlane | None = None  # the plane serving /v3/tools/*; None: no knowledge in this process
    tool_routes: Mapping[str, GuardedRoute] = field(default_factory=tools_routes)
    offload_read: DataRoute | None = None  # `/v2/offload/read-ref`'s route; None: no offload in this process

    async def _session(self, request: Request) -> VerifiedSession:
        token = request.headers.get(SESSION_HEADER, "").strip()
        if not token:
            raise Unauthorized(MISSING_TOKEN)
        try:
            # Reads the key store: off the event loop.
            return await run_in_threadpool(self.tokens.verify, token, request_id_of(request))
        except ProxyDenied as exc:
            raise Unauthorized(exc.message) from None

    def endpoint(self, op: str) -> Callable[[Request], Awaitable[Response]]:
        route = self.routes[op]

        async def run(request: Request) -> Response:
            session = await self._session(request)
            body = await self.plane.read_body(route, request)
            isolation = _isolation(session, op, body)
            caller = replace(session.caller, request_id=request_id_of(request))
            return await self.plane.answer(route, request, caller, isolation, body)

        run.__name__ = "memory_bridge_" + op.replace("/", "_")
        return run

    def offload_endpoint(self, route: DataRoute) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            session = await self._session(request)
            raw = await read_json_object(request, self.plane.max_body_bytes, self.plane.body_read_timeout)
            if "session_id" not in raw:
                raw = {**raw, "session_id": session.identity.session_id}
            body = parse_model(route.model, raw)
            isolation = _isolation(session, OFFLOAD_READ, body)
            caller = replace(session.caller, request_id=request_id_of(request))
            return await self.plane.answer(route, request, caller, isolation, body)

        run.__name__ = "memory_bridge_offload_read_ref"
        return run

    def tools_endpoint(self, plane: GuardedPlane, op: str) -> Callable[[Request], Awaitable[Response]]:
        route = self.tool_routes[op]

        async def run(request: Request) -> Response:
            session = await self._session(request)
            body = await plane.read_body(route, request)
            return await plane.answer(route, request, replace(session.caller, request_id=request_id_of(request)), body)

        run.__name__ = "memory_bridge_" + op.replace("/", "_")
        return run

    def mount(self, app: FastAPI) -> None:
        """Register `POST /memory-bridge/v3/<op>` for each read-only operation; others answer the app's 404.

        Left out of the OpenAPI document: the bridge is for the model behind the proxy, not for API clients.
        """
        endpoints = {op: self.endpoint(op) for op in self.routes}
        if self.tools is not None:
            endpoints |= {op: self.tools_endpoint(self.tools, op) for op in self.tool_routes}
        if self.offload_read is not None:
            endpoints[OFFLOAD_READ] = self.offload_endpoint(self.offload_read)
        for op, endpoint in endpoints.items():
            app.add_api_route(
                f"{BRIDGE_PATH}/{op}", endpoint, methods=["POST"], include_in_schema=False, name=f"memory-bridge:{op}"
            )
