"""How a guarded route runs: authenticate by its `Guard`, read, validate, call one service function, wrap.

A guarded route names what it acts on in its body (a team, a wiki, a code graph, an agent) instead of carrying
the data plane's isolation fields, and its `Guard` says which credentials it needs. The management plane
(`/v3/meta/*`: a user key, except on auth/verify; `/v3/internal/meta/*`: the gateway key only) runs this way,
and so do the knowledge routes (`/v3/knowledge/*`, `/v3/wiki/*`, `/v3/code-graph/*`, `/v3/tools/*`), the
runtime context (`/v3/context/*`) and chat-memory clearing, which authenticate as the data plane does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from memhub.api.auth import Authenticator
from memhub.api.body import read_json_object
from memhub.api.dataplane import mount_post, request_endpoint
from memhub.api.envelope import ok, request_id_of
from memhub.api.meta_schemas import MetaBody
from memhub.api.openapi import post_operation
from memhub.api.validation import parse_model
from memhub.errors import BadRequest
from memhub.knowledge.services import KnowledgeServices
from memhub.meta.caller import Caller
from memhub.meta.services import MetaServices

_INBOUND_ID = re.compile(r"^[\w.:\-]{1,128}$")
INBOUND_ID_HEADERS = ("x-qcloud-transaction-id", "x-request-id")


class Guard(Enum):
    """Which credentials a route needs."""

    USER = "user"  # /v3/meta/*: a user key
    ANYONE = "anyone"  # auth/verify: the gateway key (or any user key) without a user
    GATEWAY = "gateway"  # /v3/internal/meta/*: the gateway key only
    DATA = "data"  # /v3/knowledge/*, /v3/wiki/*: as the data plane
    TOOLS = "tools"  # /v3/tools/*: as the data plane, or the tenant header alone when tools are open


@dataclass(frozen=True, slots=True)
class GuardedCall:
    """What a guarded handler may use."""

    request: Request
    caller: Caller
    meta: MetaServices
    knowledge: KnowledgeServices | None = None


GuardedHandler = Callable[[GuardedCall, Any], Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's data with an HTTP status other than 200 (201 created, 202 accepted)."""

    data: Any
    status: int = 200


@dataclass(frozen=True, slots=True)
class GuardedRoute:
    """One management operation, mounted at `<prefix>/<path>`."""

    path: str
    model: type[MetaBody]
    handler: GuardedHandler
    guard: Guard = Guard.USER
    summary: str = ""
    max_body_bytes: int | None = None  # None: the plane's limit
    statuses: tuple[int, ...] = (200,)  # the success statuses it answers (201 created, 202 accepted)
    # A body that breaks the model answers this envelope code instead of 400 (the skill routes' 40001, HTTP 200).
    invalid_code: int | None = None


def _adopt_inbound_request_id(request: Request) -> None:
    # The management plane echoes a caller's transaction id (x-qcloud-transaction-id, then x-request-id).
    for name in INBOUND_ID_HEADERS:
        value = request.headers.get(name, "").strip()
        if value and _INBOUND_ID.match(value):
            request.state.request_id = value
            return


def _parse(route: GuardedRoute, raw: dict[str, Any]) -> Any:
    try:
        return parse_model(route.model, raw)
    except BadRequest as exc:
        if route.invalid_code is not None:
            exc.code = route.invalid_code
        raise


@dataclass(frozen=True, slots=True)
class GuardedPlane:
    """What every guarded endpoint shares."""

    auth: Authenticator
    meta: MetaServices
    max_body_bytes: int
    knowledge: KnowledgeServices | None = None
    body_read_timeout: float | None = None

    async def _caller(self, route: GuardedRoute, request: Request) -> Caller:
        rid = request_id_of(request)
        if route.guard is Guard.USER:
            return await self.auth.meta_caller(request, rid)
        if route.guard is Guard.ANYONE:
            return await self.auth.meta_caller(request, rid, needs_user=False)
        if route.guard is Guard.DATA:
            return await self.auth.data_caller(request, rid)
        if route.guard is Guard.TOOLS:
            return await self.auth.tools_caller(request, rid)
        self.auth.check_gateway(request)
        return Caller(request.headers.get("x-tdai-service-id", "").strip(), request_id=rid)

    async def read_body(self, route: GuardedRoute, request: Request) -> Any:
        """The request's JSON body, validated by the route's model (the route's error envelope otherwise)."""
        raw = await read_json_object(request, route.max_body_bytes or self.max_body_bytes, self.body_read_timeout)
        return _parse(route, raw)

    async def answer(self, route: GuardedRoute, request: Request, caller: Caller, body: Any) -> Response:
        """Run the handler for `caller` off the event loop and wrap its data.

        Also the memory bridge's way in to the tools routes: it resolves the caller from a session token.
        """
        data = await run_in_threadpool(route.handler, GuardedCall(request, caller, self.meta, self.knowledge), body)
        if isinstance(data, Reply):
            return ok(request, data.data, status=data.status)
        return ok(request, data)

    def endpoint(self, route: GuardedRoute, *, adopt_request_id: bool) -> Callable[[Request], Any]:
        async def run(request: Request) -> Response:
            if adopt_request_id:
                _adopt_inbound_request_id(request)
            caller = await self._caller(route, request)
            body = await self.read_body(route, request)
            return await self.answer(route, request, caller, body)

        return request_endpoint(run, route.path.replace("/", "_").replace("-", "_"))

    def mount(self, app: FastAPI, prefix: str, routes: Sequence[GuardedRoute], *, tag: str) -> None:
        """Register each route under the prefix."""
        for route in routes:
            endpoint = self.endpoint(route, adopt_request_id=prefix.startswith(("/v3/meta", "/v3/internal/")))
            openapi = post_operation(
                route.model,
                security=self._security(route.guard),
                statuses=route.statuses,
                service_required=route.guard is not Guard.GATEWAY,  # instance bootstrap may name it in the body
                business_errors=route.invalid_code is not None,
            )
            mount_post(app, f"{prefix}/{route.path}", endpoint, openapi, tag, route.summary, status=route.statuses[0])

    def _security(self, guard: Guard) -> str:
        if guard is Guard.USER:
            return "user"
        if guard is Guard.TOOLS and self.auth.open_tools:
            return "open"
        return "gateway" if guard is Guard.GATEWAY else "data"
