"""The memory proxy's HTTP face: an agent points its LLM base URL here and keeps its protocol.

`/{agent}/{space_id}/v1/...` where `agent` is the client kind (`proxy` for the default, `codex`, `codebuddy` …)
and `space_id` the memhub service id. The bodies are the providers' own, so these routes stay out of memhub's
OpenAPI document.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from memhub.ids import MAX_SERVICE_ID_CHARS, valid_service_id
from memhub.proxy.model import WireProtocol
from memhub.proxy.protocols import Family, adapter_for, dumps
from memhub.proxy.service import MEMORY_HEADER, ProxyReply, ProxyService

# Providers accept request bodies up to 32 MB (long conversations with images); more is refused unread.
MAX_BODY_BYTES = 32 * 1024 * 1024
TURNS: dict[str, WireProtocol] = {
    "chat/completions": WireProtocol.OPENAI_CHAT,
    "messages": WireProtocol.ANTHROPIC,
    "responses": WireProtocol.RESPONSES,
}
PASSTHROUGH: dict[str, Family] = {
    "embeddings": Family.OPENAI,
    "messages/count_tokens": Family.ANTHROPIC,
}


def _send(reply: ProxyReply) -> Response:
    if reply.stream is not None:
        return StreamingResponse(reply.stream, status_code=reply.status, headers=reply.headers)
    return Response(reply.body, status_code=reply.status, headers=reply.headers)


def _refuse(protocol: WireProtocol, status: int, message: str) -> Response:
    body = adapter_for(protocol).error("invalid_request_error", message)
    headers = {MEMORY_HEADER: "passthrough; reason=bad-request"}
    return Response(dumps(body), status_code=status, media_type="application/json", headers=headers)


async def _body(request: Request) -> bytes | None:
    """The request body, or None once it grows past the limit."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def mount(app: FastAPI, service: ProxyService) -> None:
    """Add the proxy's routes (turns in three protocols, auxiliary passthrough) to `app`."""

    async def checked(request: Request, protocol: WireProtocol) -> bytes | Response:
        if not valid_service_id(request.path_params["space_id"]):
            return _refuse(protocol, 400, f"space_id: must be 1..{MAX_SERVICE_ID_CHARS} printable characters")
        raw = await _body(request)
        if raw is None:
            return _refuse(protocol, 413, f"body: must be at most {MAX_BODY_BYTES} bytes")
        return raw

    def turn_route(protocol: WireProtocol):  # type: ignore[no-untyped-def]
        async def route(request: Request, agent: str, space_id: str) -> Response:
            raw = await checked(request, protocol)
            if isinstance(raw, Response):
                return raw
            return _send(await service.turn(protocol, agent, space_id, request.headers, raw, request.url.query))

        return route

    def passthrough_route(family: Family, path: str):  # type: ignore[no-untyped-def]
        protocol = WireProtocol.ANTHROPIC if family is Family.ANTHROPIC else WireProtocol.OPENAI_CHAT

        async def route(request: Request, agent: str, space_id: str) -> Response:
            raw = await checked(request, protocol)
            if isinstance(raw, Response):
                return raw
            reply = await service.passthrough(
                family, request.method, path, agent, space_id, request.headers, raw, request.url.query
            )
            return _send(reply)

        return route

    async def models(request: Request, agent: str, space_id: str, model: str | None = None) -> Response:
        # Both providers serve `/v1/models`; an Anthropic client says so with its version header.
        family = Family.ANTHROPIC if "anthropic-version" in request.headers else Family.OPENAI
        tail = "/models" + (f"/{model}" if model else "")
        path = f"/v1{tail}" if family is Family.ANTHROPIC else tail
        return await passthrough_route(family, path)(request, agent, space_id)

    for suffix, protocol in TURNS.items():
        app.add_api_route(
            f"/{{agent}}/{{space_id}}/v1/{suffix}",
            turn_route(protocol),
            methods=["POST"],
            include_in_schema=False,
            name=f"proxy {suffix}",
        )
    for suffix, family in PASSTHROUGH.items():
        path = f"/v1/{suffix}" if family is Family.ANTHROPIC else f"/{suffix}"
        app.add_api_route(
            f"/{{agent}}/{{space_id}}/v1/{suffix}",
            passthrough_route(family, path),
            methods=["POST"],
            include_in_schema=False,
            name=f"proxy {suffix}",
        )
    app.add_api_route("/{agent}/{space_id}/v1/models", models, methods=["GET"], include_in_schema=False)
    app.add_api_route("/{agent}/{space_id}/v1/models/{model}", models, methods=["GET"], include_in_schema=False)
