"""The response envelope `{code, message, request_id, data}` and its HTTP status rule."""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from memhub.errors import MemhubError
from memhub.ids import request_id as new_request_id


class JSONResponse(Response):
    """Compact UTF-8 JSON (Chinese stays readable, no ASCII escapes)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()


def request_id_of(request: Request) -> str:
    """The request id assigned by the gateway middleware (one is made if it is missing)."""
    rid = getattr(request.state, "request_id", None)
    if rid is None:
        rid = new_request_id()
        request.state.request_id = rid
    return rid


def ok(request: Request, data: Any = None, *, include_data: bool = True, status: int = 200) -> JSONResponse:
    """A success envelope (HTTP 201 / 202 where the reference answers so: created, accepted)."""
    body: dict[str, Any] = {"code": 0, "message": "ok", "request_id": request_id_of(request)}
    if include_data:
        body["data"] = data
    return JSONResponse(body, status_code=status)


def error(request: Request, exc: MemhubError) -> JSONResponse:
    """An error envelope; HTTP status = code when it is 400–599, else 200."""
    body: dict[str, Any] = {"code": exc.code, "message": exc.message, "request_id": request_id_of(request)}
    if exc.data is not None:
        body["data"] = exc.data
    return JSONResponse(body, status_code=exc.http_status)


def internal_error(request: Request) -> tuple[JSONResponse, str]:
    """A 500 envelope with a trace id for the logs; never a stack trace."""
    trace_id = str(uuid.uuid4())
    body = {
        "code": 500,
        "message": "Internal server error",
        "request_id": request_id_of(request),
        "trace_id": trace_id,
        "retryable": True,
    }
    return JSONResponse(body, status_code=500, headers={"x-request-id": body["request_id"]}), trace_id
