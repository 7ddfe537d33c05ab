"""How a data-plane route runs: authenticate, read, validate, resolve isolation, call, wrap.

Each route is declared once (path, body model, handler) and mounted at `/v3/<path>` and, unless
it is v3-only, at `/v2/<path>` with lax isolation.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from memhub.api.auth import Authenticator
from memhub.api.body import read_json_object
from memhub.api.envelope import ok, request_id_of
from memhub.api.isolation import resolve_isolation
from memhub.api.openapi import post_operation
from memhub.api.schemas import Body
from memhub.api.validation import parse_model
from memhub.memory.services import MemoryServices
from memhub.meta.caller import Caller
from memhub.meta.services import MetaServices
from memhub.pipeline.service import PipelineService
from memhub.scope import Isolation

NO_DATA = object()  # a handler returns this when the envelope carries no `data` (e.g. scenario/rm)
# FastAPI reads each endpoint's signature (twice per route) with its annotations evaluated. Ours are strings
# (postponed evaluation), which it would evaluate again for every route of every app built: endpoints carry their
# signature, made once, with the classes themselves.
ENDPOINT_ANNOTATIONS: dict[str, Any] = {"request": Request, "return": Response}
ENDPOINT_SIGNATURE = inspect.Signature(
    [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request)],
    return_annotation=Response,
)
EndpointT = TypeVar("EndpointT", bound=Callable[..., Any])


def request_endpoint(run: EndpointT, name: str) -> EndpointT:
    """`run(request) -> Response` named `name`, with the signature FastAPI reads ready-made."""
    run.__name__ = name
    run.__annotations__ = dict(ENDPOINT_ANNOTATIONS)
    run.__signature__ = ENDPOINT_SIGNATURE  # type: ignore[attr-defined]
    return run


@dataclass(frozen=True, slots=True)
class Call:
    """Everything a handler may use about the request it serves."""

    request: Request
    request_id: str
    isolation: Isolation
    memory: MemoryServices
    pipeline: PipelineService | None  # status and control of the L0→L3 pipeline (None: not in this process)
    meta: MetaServices
    caller: Caller  # who is asking: a handler narrows what it reads or changes to what this caller may see


Handler = Callable[[Call, Any], Any]


@dataclass(frozen=True, slots=True)
class DataRoute:
    """One data-plane operation."""

    path: str
    model: type[Body]
    handler: Handler
    v2: bool = True
    summary: str = ""
    # False: the body's ids name targets, not the scope acted as; the handler authorizes them itself.
    authorize_isolation: bool = True


@dataclass(frozen=True, slots=True)
class DataPlane:
    """What every data-plane endpoint shares."""

    auth: Authenticator
    memory: MemoryServices
    meta: MetaServices
    max_body_bytes: int
    strict_isolation: bool
    body_read_timeout: float | None = None
    pipeline: PipelineService | None = None

    def endpoint(self, route: DataRoute, *, strict: bool) -> Callable[[Request], Any]:
        async def run(request: Request) -> Response:
            caller = await self.auth.data_caller(request, request_id_of(request))
            body = await self.read_body(route, request)
            isolation = resolve_isolation(caller.service_id, body, request, strict=strict, default_user=caller.user_id)
            return await self.answer(route, request, caller, isolation, body)

        return request_endpoint(run, route.path.replace("/", "_").replace("-", "_"))

    async def read_body(self, route: DataRoute, request: Request) -> Body:
        """The request's JSON body, validated by the route's model (400 envelope otherwise)."""
        raw = await read_json_object(request, self.max_body_bytes, self.body_read_timeout)
        return parse_model(route.model, raw)

    async def answer(
        self, route: DataRoute, request: Request, caller: Caller, isolation: Isolation, body: Body
    ) -> Response:
        """Authorize the caller for the isolation, run the handler off the event loop, wrap its data.

        Also the memory bridge's way in: it resolves the caller and isolation from a session token instead.
        """
        rid = request_id_of(request)
        call = Call(request, rid, isolation, self.memory, self.pipeline, self.meta, caller)
        data = await run_in_threadpool(self._serve, route, caller, call, body)
        return ok(request, None, include_data=False) if data is NO_DATA else ok(request, data)

    @staticmethod
    def _serve(route: DataRoute, caller: Caller, call: Call, body: Any) -> Any:
        # Authorization runs first, in the same worker thread: a denied request reads and writes nothing.
        if route.authorize_isolation:
            call = replace(call, isolation=call.meta.access.authorize(caller, call.isolation))
        return route.handler(call, body)

    def mount(self, app: FastAPI, routes: Sequence[DataRoute]) -> None:
        """Register each route under /v3 (strict when configured) and its /v2 mirror."""
        for route in routes:
            mounts = [("/v3", self.strict_isolation)] + ([("/v2", False)] if route.v2 else [])
            for prefix, strict in mounts:
                tag = prefix.strip("/")
                openapi = post_operation(route.model, security="data")
                mount_post(
                    app, f"{prefix}/{route.path}", self.endpoint(route, strict=strict), openapi, tag, route.summary
                )


def mount_post(
    app: FastAPI,
    path: str,
    endpoint: Callable[[Request], Any],
    openapi: dict[str, Any],
    tag: str,
    summary: str,
    *,
    status: int = 200,
) -> None:
    """A POST route whose OpenAPI entry (memhub.api.openapi) names its body model, validated by hand."""
    app.add_api_route(
        path,
        endpoint,
        methods=["POST"],
        summary=summary or None,
        tags=[tag],
        openapi_extra=openapi,
        name=f"{tag}:{path}",
        status_code=status,  # the document's first success status (FastAPI adds it by default)
    )
