"""Wiring only: build the FastAPI app from settings and a store."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
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
from memhub.api.metaplane import MetaPlane
from memhub.api.middleware import CorsPolicy, GatewayMiddleware
from memhub.api.routes import (
    atomic,
    chat_memory,
    context,
    conversation,
    generation_log,
    memory_prompt,
    pipeline,
    profile,
)
from memhub.api.routes.health import health_payload
from memhub.api.routes.knowledge_kinds import knowledge_routes
from memhub.api.routes.meta import INTERNAL_ROUTES, META_ROUTES
from memhub.context import ContextComposer
from memhub.errors import HttpStatusError, MemhubError, RequestTimeout
from memhub.gateway_key import GatewayKey
from memhub.knowledge.services import KnowledgeServices
from memhub.memory.chat_memory import ChatMemoryService
from memhub.memory.embedding import EmbeddingRuntime
from memhub.memory.prompt_access import PromptAccess
from memhub.memory.prompts import MemoryPromptService
from memhub.memory.services import MemoryServices
from memhub.meta.keys import KeyHasher, load_key_hasher
from memhub.meta.quotas import Quotas
from memhub.meta.services import MetaServices
from memhub.pipeline.generation_access import GenerationAccess
from memhub.pipeline.generation_log import GenerationLogService
from memhub.pipeline.service import PipelineService
from memhub.runtime import pipeline_worker
from memhub.settings import Settings
from memhub.store import MemoryStore

DATA_ROUTES: list[DataRoute] = [*conversation.ROUTES, *atomic.ROUTES, *profile.ROUTES, *pipeline.ROUTES]


def create_app(
    settings: Settings,
    store: MemoryStore,
    gateway_key: GatewayKey | None,
    embedding: EmbeddingRuntime | None = None,
    key_hasher: KeyHasher | None = None,
    run_pipeline: bool = True,
    knowledge_only: bool = False,
) -> FastAPI:
    """The gateway app. `gateway_key=None` disables layer-1 auth (only with --insecure-no-auth).

    Without an embedding runtime, search is BM25 only. The app owns the store and the runtime from
    here on: the embedding worker starts with the app and both are closed on shutdown (uvicorn
    re-raises SIGTERM after its own shutdown, so a caller's `finally` would never run).
    The pipeline worker (settings.pipeline_enabled) starts with the app unless `run_pipeline` is
    False; then `app.state.pipeline_worker.drain()` runs it on demand (tests).
    `knowledge_only` serves the knowledge service alone (`memhub serve --knowledge-only`): health, the
    wiki, code-graph, tools and knowledge routes, without the memory data plane, the management plane or the pipeline.
    """

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if embedding is not None:
            embedding.start()
        if worker is not None and run_pipeline:
            worker.start()
        knowledge.resume()  # builds a previous process left queued or running
        yield
        knowledge.close()
        if worker is not None:
            worker.close()
        if embedding is not None:
            embedding.close()
        store.close()

    app = FastAPI(title="memhub", version=__version__, docs_url="/docs", redoc_url=None, lifespan=lifespan)
    hasher = key_hasher or load_key_hasher(settings.data_dir, settings.key_secret)
    quotas = Quotas(settings.max_users_per_instance, settings.max_teams_per_instance, settings.max_active_keys_per_user)
    origins = settings.knowledge_origins()
    meta = MetaServices.over(store.meta, hasher, quotas, origins)
    open_tools = settings.knowledge_tools_auth == "open"
    auth = Authenticator(
        gateway_key, meta.users, require_user_key=settings.data_plane_auth == "user_key", open_tools=open_tools
    )
    cors = CorsPolicy(settings.cors_origins)
    memory = MemoryServices.over(store, embedding)
    worker = pipeline_worker(settings, store, memory) if settings.pipeline_enabled and not knowledge_only else None
    generator = worker.runner.stages.generator if worker is not None else "none"
    memory = replace(memory, pipeline=PipelineService(store, worker, generator))
    knowledge = KnowledgeServices.over(
        store.meta,
        meta.config,
        settings.knowledge_configs(),
        public_url=settings.knowledge_url(),
        language=settings.knowledge_language,
        open_tools=open_tools,
        origins=origins,
    )
    started = time.monotonic()
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

    management = MetaPlane(auth, meta, settings.max_body_bytes, knowledge, settings.body_read_timeout_seconds)
    knowledge_groups = knowledge_routes()
    for prefix, routes, tag in knowledge_groups:
        management.mount(app, prefix, routes, tag=tag)
    models = [r.model for _, routes, _ in knowledge_groups for r in routes]
    if not knowledge_only:
        plane = DataPlane(
            auth, memory, meta, settings.max_body_bytes, settings.strict_isolation, settings.body_read_timeout_seconds
        )
        plane.mount(app, DATA_ROUTES)
        prompts = MemoryPromptService(store.prompts)
        generations = GenerationLogService(store.prompts)
        prompt_access = PromptAccess(store.meta)
        generation_access = GenerationAccess(store.meta)
        v3_only = [
            *memory_prompt.routes(prompts, prompt_access),
            *generation_log.routes(generations, generation_access),
        ]
        memory_prompt.mount(plane, app, v3_only)
        app.state.memory_prompts = prompts
        app.state.generation_log = generations
        management.mount(app, "/v3/meta", META_ROUTES, tag="meta")
        management.mount(app, "/v3/internal/meta", INTERNAL_ROUTES, tag="internal")
        context_routes = context.routes(ContextComposer(knowledge, memory.conversation, meta.access, meta.config))
        management.mount(app, "/v3/context", context_routes, tag="context")
        # Data-plane authentication without isolation fields (the ids name the scope): a MetaRoute, guard DATA.
        chat_memory_routes = chat_memory.routes(ChatMemoryService(store))
        management.mount(app, "/v3/chat-memory", chat_memory_routes, tag="v3")
        models += [
            r.model
            for r in (*DATA_ROUTES, *v3_only, *META_ROUTES, *INTERNAL_ROUTES, *context_routes, *chat_memory_routes)
        ]

    def openapi_document() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi.document(app, models)
        return app.openapi_schema

    app.openapi = openapi_document  # type: ignore[method-assign]
    app.add_middleware(GatewayMiddleware, cors=cors)
    return app
