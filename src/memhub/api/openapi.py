"""The OpenAPI document: each route's body model as it is validated, its envelope responses and its credentials.

Bodies are validated by hand (memhub.api.validation), not by FastAPI, so every operation names its model
here. The document states the real limits, so that a client generated from it sends only valid requests.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, ValidationError

from memhub.api.auth import USER_KEY_HEADER
from memhub.ids import MAX_SERVICE_ID_CHARS, NO_CONTROL_PATTERN

SERVICE_HEADER = "x-tdai-service-id"
# Every error a route may answer, with the envelope as its body (the status is the envelope's code).
ERRORS = {
    400: "The request breaks a rule; `message` names the field and the rule",
    401: "Missing or invalid credentials",
    403: "The caller may not do this",
    404: "No such resource (or one the caller may not see)",
    408: "The request body did not arrive in time",
    409: "The resource's state does not allow it",
    413: "The request body is too large",
    415: "Unsupported Content-Encoding",
    422: "Strict isolation: team_id, agent_id and user_id are required",
    500: "Internal error; `trace_id` ties it to the server log",
    503: "Storage busy or a dependency unavailable; retry",
}
SUCCESS_TEXT = {200: "OK", 201: "Created", 202: "Accepted: the work continues in the background"}
ENVELOPE: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message", "request_id"],
    "properties": {
        "code": {"const": 0},
        "message": {"const": "ok"},
        "request_id": {"type": "string"},
        "data": {},
    },
}
ERROR_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message", "request_id"],
    "properties": {
        "code": {"type": "integer"},
        "message": {"type": "string"},
        "request_id": {"type": "string"},
        "data": {},
        "trace_id": {"type": "string"},
        "retryable": {"type": "boolean"},
    },
}
SECURITY_SCHEMES = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "The gateway key, or a user key (`sk-mem-…`) in its place",
    },
    "userKey": {"type": "apiKey", "in": "header", "name": USER_KEY_HEADER, "description": "A user key"},
}
# Which credentials each kind of route takes; an empty requirement means none. The management plane wants a
# user key: in its header beside the gateway key, or as the Bearer token itself.
SECURITY: dict[str, list[dict[str, list[str]]]] = {
    "data": [{"bearer": []}],
    "user": [{"bearer": [], "userKey": []}, {"bearer": []}],
    "gateway": [{"bearer": []}],
    "open": [{"bearer": []}, {}],
}


def _service_header(required: bool) -> dict[str, Any]:
    return {
        "name": SERVICE_HEADER,
        "in": "header",
        "required": required,
        "description": "The tenant (service instance)",
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_SERVICE_ID_CHARS, "pattern": NO_CONTROL_PATTERN},
    }


BUSINESS_ERRORS_TEXT = (
    "OK, or a business error: a five-digit `code` (e.g. 40001 a field breaks a rule, 40901 a stale version) "
    "answered with HTTP 200, as the original does"
)


def _responses(statuses: Iterable[int], business_errors: bool = False) -> dict[str, Any]:
    success: dict[str, Any] = {"$ref": "#/components/schemas/Envelope"}
    error = {"$ref": "#/components/schemas/ErrorEnvelope"}
    out: dict[str, Any] = {
        str(s): {"description": SUCCESS_TEXT[s], "content": {"application/json": {"schema": success}}} for s in statuses
    }
    if business_errors:
        out["200"] = {
            "description": BUSINESS_ERRORS_TEXT,
            "content": {"application/json": {"schema": {"anyOf": [success, error]}}},
        }
    for status, text in ERRORS.items():
        out[str(status)] = {"description": text, "content": {"application/json": {"schema": error}}}
    return out


def post_operation(
    model: type[BaseModel],
    *,
    security: str,
    statuses: Sequence[int] = (200,),
    service_required: bool = True,
    business_errors: bool = False,
) -> dict[str, Any]:
    """The OpenAPI fields of a POST route whose JSON body is `model` (`business_errors`: HTTP 200 may carry
    an error envelope with a five-digit code)."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}},
        },
        "parameters": [_service_header(service_required)],
        "responses": _responses(statuses, business_errors),
        "security": SECURITY[security],
    }


def query_operation(model: type[BaseModel], *, security: str) -> dict[str, Any]:
    """The OpenAPI fields of a GET route that reads `model`'s fields from the query string.

    One form-exploded object parameter (`?a=1&b=2`) carries the model's schema whole, with the rules
    between its fields, which separate parameters could not state.
    """
    return {
        "parameters": [_service_header(True), copy.deepcopy(_query_parameter(model))],
        "responses": _responses((200,)),
        "security": SECURITY[security],
    }


@functools.cache
def _query_parameter(model: type[BaseModel]) -> dict[str, Any]:
    """The query parameter of `model`, built once per model (a JSON Schema generation, rebuilt for every app
    otherwise); callers get a copy."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    fields = {name: _plain(prop) for name, prop in schema.pop("properties").items()}
    for key in ("title", "description"):
        schema.pop(key, None)
    query = {**schema, "type": "object", "properties": fields}
    return {
        "name": "query",
        "in": "query",
        "style": "form",
        "explode": True,
        "required": not _accepts_nothing(model),
        "schema": query,
    }


def _accepts_nothing(model: type[BaseModel]) -> bool:
    try:
        model.model_validate({})
    except ValidationError:
        return False
    return True


def _plain(prop: dict[str, Any]) -> dict[str, Any]:
    """A property as a query value: an optional one is simply left out, never null."""
    options = [o for o in prop.get("anyOf", ()) if o.get("type") != "null"]
    base = {k: v for k, v in prop.items() if k not in ("anyOf", "default", "title")}
    return {**options[0], **base} if len(options) == 1 else base


def document(app: FastAPI, models: Iterable[type[BaseModel]]) -> dict[str, Any]:
    """The whole document, with each body model under components/schemas."""
    schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
    components = schema.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for model in models:
        model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, part in {**model_schema.pop("$defs", {}), model.__name__: model_schema}.items():
            # Schemas are keyed by class name: two models of one name would silently describe one route's
            # body with the other's rules.
            if schemas.setdefault(name, part) != part:
                raise ValueError(f"two body models are named {name}: give one of them another name")
    schemas["Envelope"] = ENVELOPE
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    components["securitySchemes"] = SECURITY_SCHEMES
    return schema
