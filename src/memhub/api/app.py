"""Wiring only: build the FastAPI app from settings and a store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response

from memhub import __version__
from memhub.api import openapi
from memhub.api.auth import Authenticator
from memhub.api.dataplane import DataPlane, DataRoute
from memhub.api.envelope import JSONResponse, error
from memhub.api.guarded import GuardedPlane
from memhub.api.middleware import CorsPolicy, GatewayMiddleware
from memhub.api.routes import (
    atomic,
    chat_memory,
    context,
    conversation,
    generation_log,
    memory_prompt,
    offload,
    pipeline,
    profile,
    proxy,
    recall,
    skill,
    skill_mining,
    skill_search,
)
from memhub.api.routes.health import health_payload
from memhub.api.routes.knowledge_kinds import knowledge_routes
from memhub.api.routes.memory_bridge import MemoryBridge
from memhub.api.routes.meta import INTERNAL_ROUTES, META_ROUTES
from memhub.errors import HttpStatusError, MemhubError, RequestTimeout
from memhub.gateway_key import GatewayKey
from memhub.runtime import Hub
from memhub.shutdown import StopClock

DATA_ROUTES: list[DataRoute] = [
    *conversation.ROUTES,
    *atomic.ROUTES,
    *profile.ROUTES,
    *pipeline.ROUTES,
    *recall.ROUTES,
]


def create_app(
    hub: Hub,
    gateway_key: GatewayKey | None,
    *,
    run_pipeline: bool = True,
    proxy_only: bool = False,
    stop: StopClock | None = None,
) -> FastAPI:
    """The gateway app over a hub's services. `gateway_key=None` disables layer-1 auth (only with --insecure-no-auth).

    The app owns the hub from here on: its workers start with the app and the hub is closed on shutdown
    (uvicorn re-raises SIGTERM after its own shutdown, so a caller's `finally` would never run). With a `stop`
    clock (`memhub serve`: started by the signal) the shutdown stays within its budget (memhub.shutdown);
    without one it waits for every worker.
    The pipeline worker starts with the app unless `run_pipeline` is False; then
    `app.state.pipeline_worker.drain()` runs it on demand (tests).
    A knowledge-only hub (`memhub serve --knowledge-only`) serves health, the wiki, code-graph, tools and
    knowledge routes, without the memory data plane, the management plane or the pipeline.
    A `proxy_only` app (`memhub proxy`) serves health, the memory proxy and its memory bridge.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        hub.start(pipeline=run_pipeline, knowledge=not proxy_only)
        yield
        # First, before the steps below take time of their own: whether the server cancelled requests.
        cut_short = stop is not None and stop.drain_over()
        hub.request_stop()  # the workers wind down while the proxy flushes
        running = await hub.proxy.aclose(stop) if hub.proxy is not None else []
        if cut_short:
            running.insert(0, "requests cancelled at the end of their drain")
        hub.close(stop, still_running=running)

    settings = hub.settings
    store, embedding, worker, knowledge, memory, meta = (
        hub.store,
        hub.embedding,
        hub.worker,
        hub.knowledge,
        hub.memory,
        hub.meta,
    )
    app = FastAPI(title="memhub", version=__version__, docs_url="/docs", redoc_url=None, lifespan=lifespan)
    open_tools = settings.knowledge_tools_auth == "open"
    auth = Authenticator(
        gateway_key, meta.users, require_user_key=settings.data_plane_auth == "user_key", open_tools=open_tools
    )
    cors = CorsPolicy(settings.cors_origins)
    started = time.monotonic()
    app.state.hub = hub
    app.state.auth = auth  # what `/mcp` (memhub.mcp.http) checks a caller's key with
    app.state.knowledge = knowledge
    app.state.pipeline_worker = worker
    app.state.store = store
    app.state.memory = memory
    app.state.meta = meta

    @app.exception_handler(MemhubError)
    async def on_domain_error(request: Request, exc: MemhubError) -> Response:
        response = error(request, exc)
        if isinstance(exc, RequestTimeout):
            # The rest of the body may still be on its way: this connection cannot carry another request.
            response.headers["connection"] = "close"
        return response

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = f"Not found: {request.method} {request.url.path}" if exc.status_code == 404 else str(exc.detail)
        response = error(request, HttpStatusError(exc.status_code, message))
        response.headers.update(exc.headers or {})  # 405 names the allowed methods in `Allow`
        return response

    @app.get("/health", tags=["ops"])
    async def health() -> JSONResponse:
        payload = health_payload(store, embedding, started, auth_enabled=gateway_key is not None, pipeline=worker)
        return JSONResponse(payload)

    management = GuardedPlane(auth, meta, settings.max_body_bytes, knowledge, settings.body_read_timeout_seconds)
    knowledge_groups = [] if proxy_only else knowledge_routes()
    for prefix, routes, tag in knowledge_groups:
        management.mount(app, prefix, routes, tag=tag)
    models = [r.model for _, routes, _ in knowledge_groups for r in routes]
    plane = DataPlane(
        auth,
        memory,
        meta,
        settings.max_body_bytes,
        settings.strict_isolation,
        settings.body_read_timeout_seconds,
        hub.pipeline,
    )
    offload_routes = offload.routes(hub.offload)
    if not hub.knowledge_only and not proxy_only:
        plane.mount(app, DATA_ROUTES)
        v3_only = [
            *memory_prompt.routes(hub.prompts, hub.prompt_access),
            *generation_log.routes(hub.generations, hub.generation_access),
        ]
        memory_prompt.mount(plane, app, v3_only)
        app.state.memory_prompts = hub.prompts
        app.state.generation_log = hub.generations
        management.mount(app, "/v3/meta", META_ROUTES, tag="meta")
        management.mount(app, "/v3/internal/meta", INTERNAL_ROUTES, tag="internal")
        context_routes = context.routes(hub.composer)
        management.mount(app, "/v3/context", context_routes, tag="context")
        # Data-plane authentication without isolation fields (the ids name the scope): a GuardedRoute, guard DATA.
        chat_memory_routes = chat_memory.routes(hub.chat_memory)
        management.mount(app, "/v3/chat-memory", chat_memory_routes, tag="v3")
        # Skills: data-plane authentication, ids from the body, business errors as HTTP 200 (the original's).
        skill_routes = skill.routes(hub.skills, files_body_bytes=settings.skill_max_body_bytes)
        skill_routes += skill_search.routes(hub.skill_finder)
        skill_routes += skill_mining.routes(hub.skill_mining, hub.skills.access)
        management.mount(app, "/v3/skill", skill_routes, tag="skill")
        offload.mount(plane, app, offload_routes)
        models += [
            r.model
            for r in (
                *DATA_ROUTES,
                *v3_only,
                *META_ROUTES,
                *INTERNAL_ROUTES,
                *context_routes,
                *chat_memory_routes,
                *skill_routes,
                *offload_routes,
            )
        ]

    if hub.session_tokens is not None:
        read_ref = next(r for r in offload_routes if r.path == offload.READ_REF)
        MemoryBridge(plane, hub.session_tokens, tools=management, offload_read=read_ref).mount(app)
    if hub.proxy is not None:
        # Last: the proxy's `/{agent}/{space_id}/v1/...` patterns must not shadow a route of memhub's own.
        proxy.mount(app, hub.proxy)

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi.document(app, models)
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    app.add_middleware(GatewayMiddleware, cors=cors)
    return app
