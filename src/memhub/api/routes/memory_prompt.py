"""/v3/memory-prompt/* (the original's seven routes), and mounting of the v3-only prompt and generation-log routes.

As in the original, these routes are exempt from strict isolation and v3 only, and five of them also
answer GET with the body's fields in the query string; both methods share authentication,
validation, authorization and handler.

The body's team_id/agent_id/agent_ids name the targets (a setting's team and agents, whose effective
prompt, a filter), not a scope to act as: each handler authorizes the targets and the prompt ids it
is given through memhub.memory.prompt_access before the service reads or writes anything.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from memhub.api.dataplane import Call, DataPlane, DataRoute, request_endpoint
from memhub.api.envelope import ok, request_id_of
from memhub.api.isolation import resolve_isolation
from memhub.api.openapi import query_operation
from memhub.api.prompt_schemas import (
    MemoryPromptCreate,
    MemoryPromptDelete,
    MemoryPromptGet,
    MemoryPromptLog,
    MemoryPromptSet,
    MemoryPromptSettingList,
    MemoryPromptUpdate,
)
from memhub.api.schemas import Body
from memhub.api.validation import parse_model
from memhub.memory.prompt_access import PromptAccess
from memhub.memory.prompts import (
    MemoryPromptService,
    prompt_view,
    resolved_view,
    setting_log_view,
    setting_view,
)
from memhub.model.prompts import Page, PromptTarget, SettingFilter
from memhub.scope import DEFAULT_ID

# Paths (without the /v3 prefix) that also accept GET with query-string parameters.
GET_PATHS = frozenset(
    {
        "memory-prompt/get",
        "memory-prompt/setting/list",
        "memory-prompt/log",
        "memory-generation-log/list",
        "memory-generation-log/get",
    }
)
_INTEGER = re.compile(r"^[+-]?\d{1,18}$")
_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}


def _page(body: MemoryPromptGet | MemoryPromptSettingList | MemoryPromptLog) -> Page:
    return Page(body.limit, body.offset, newest_first=body.time_order == "desc")


def _agents(agent_id: str | None) -> list[str]:
    return [agent_id] if agent_id is not None else []


def routes(service: MemoryPromptService, access: PromptAccess) -> list[DataRoute]:
    """The 7 memory-prompt routes over one service; `access` says what each caller may touch."""

    def create(call: Call, body: MemoryPromptCreate) -> dict[str, Any]:
        # A prompt belongs to the team the request is made for (body, else x-tdai-team-id); none: the instance.
        team = call.isolation.team_id if call.isolation.team_id != DEFAULT_ID else None
        rights = access.rights(call.caller, team, write=True)
        record = service.create(call.isolation.service_id, rights, team or "", body.name, body.layer, body.prompt)
        return {
            "memory_prompt_id": record.memory_prompt_id,
            "version": record.version,
            "created_at_ms": record.created_ms,
        }

    def get(call: Call, body: MemoryPromptGet) -> dict[str, Any]:
        sid = call.isolation.service_id
        team = body.team()
        rights = access.rights(call.caller, team, _agents(body.agent()))
        if body.memory_prompt_id is not None:
            return prompt_view(service.get(sid, rights, body.memory_prompt_id))
        if team is not None and body.layer is not None:
            return resolved_view(service.resolve(sid, team, body.agent() or "", body.layer))
        items, total = service.list(sid, rights, body.layer, _page(body))
        return {"items": [prompt_view(p) for p in items], "total": total}

    def update(call: Call, body: MemoryPromptUpdate) -> dict[str, Any]:
        rights = access.rights(call.caller)
        record = service.update(call.isolation.service_id, rights, body.memory_prompt_id, body.name, body.prompt)
        return {
            "memory_prompt_id": record.memory_prompt_id,
            "version": record.version,
            "updated_at_ms": record.updated_ms,
        }

    def delete(call: Call, body: MemoryPromptDelete) -> dict[str, Any]:
        rights = access.rights(call.caller)
        return service.delete(call.isolation.service_id, rights, body.memory_prompt_ids, call.request_id)

    def set_(call: Call, body: MemoryPromptSet) -> dict[str, Any]:
        team = body.team()
        rights = access.rights(call.caller, team, body.agent_ids or [], write=True, agent_field="agent_ids")
        targets = (
            [PromptTarget(team or "", a) for a in body.agent_ids] if body.agent_ids else [PromptTarget(team or "")]
        )
        affected = service.set(
            call.isolation.service_id, rights, body.action, body.layer, targets, body.memory_prompt_id, call.request_id
        )
        return {"affected": affected}

    def setting_list(call: Call, body: MemoryPromptSettingList) -> dict[str, Any]:
        rights = access.rights(call.caller, body.team(), _agents(body.agent()))
        flt = SettingFilter(body.memory_prompt_id, body.target_type, body.team(), body.agent(), body.layer)
        items, total = service.settings(call.isolation.service_id, rights, flt, _page(body))
        return {"items": [setting_view(s) for s in items], "total": total}

    def log(call: Call, body: MemoryPromptLog) -> dict[str, Any]:
        rights = access.rights(call.caller, body.team(), _agents(body.agent()))
        items, total = service.logs(
            call.isolation.service_id,
            rights,
            _page(body),
            window=body.window(),
            memory_prompt_id=body.memory_prompt_id,
            team_id=body.team(),
            agent_id=body.agent(),
            action=body.action,
        )
        return {"items": [setting_log_view(e) for e in items], "total": total}

    def route(path: str, model: type[Body], handler: Any, summary: str) -> DataRoute:
        return DataRoute(path, model, handler, v2=False, summary=summary, authorize_isolation=False)

    return [
        route("memory-prompt/create", MemoryPromptCreate, create, "Create a custom memory prompt"),
        route("memory-prompt/get", MemoryPromptGet, get, "Get, resolve or list memory prompts"),
        route("memory-prompt/update", MemoryPromptUpdate, update, "Change a memory prompt"),
        route("memory-prompt/delete", MemoryPromptDelete, delete, "Delete memory prompts"),
        route("memory-prompt/set", MemoryPromptSet, set_, "Apply or clear a memory prompt"),
        route("memory-prompt/setting/list", MemoryPromptSettingList, setting_list, "Prompt settings"),
        route("memory-prompt/log", MemoryPromptLog, log, "Prompt setting changes"),
    ]


# -- mounting ----------------------------------------------------------------------------------
def _kinds(annotation: Any) -> set[Any]:
    """The plain types a field accepts (Optional, unions and Annotated unwrapped; list[...] → list)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _kinds(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return set().union(*(_kinds(a) for a in typing.get_args(annotation)))
    if origin is list:
        return {list}
    return {origin or annotation}


def query_to_body(model: type[Body], request: Request) -> dict[str, Any]:
    """Query-string parameters as a JSON-like body for `model`.

    Strings become ints or booleans where the field wants one (when they spell one; otherwise the
    model's own rule rejects them); repeated keys, or keys of list fields, become lists.
    """
    body: dict[str, Any] = {}
    for key in dict.fromkeys(k for k, _ in request.query_params.multi_items()):
        values = request.query_params.getlist(key)
        field = model.model_fields.get(key)
        kinds = _kinds(field.annotation) if field is not None else set()
        if list in kinds or len(values) > 1:
            body[key] = values
            continue
        value: Any = values[-1]
        if int in kinds and _INTEGER.match(value):
            value = int(value)
        elif bool in kinds and value.lower() in _BOOLEANS:
            value = _BOOLEANS[value.lower()]
        body[key] = value
    return body


def _get_endpoint(plane: DataPlane, route: DataRoute) -> Callable[[Request], Any]:
    # The same steps as DataPlane.endpoint, with the body read from the query string.
    async def run(request: Request) -> Response:
        rid = request_id_of(request)
        caller = await plane.auth.data_caller(request, rid)
        body = parse_model(route.model, query_to_body(route.model, request))
        isolation = resolve_isolation(caller.service_id, body, request, strict=False, default_user=caller.user_id)
        call = Call(request, rid, isolation, plane.memory, plane.pipeline, plane.meta, caller)
        return ok(request, await run_in_threadpool(plane._serve, route, caller, call, body))

    return request_endpoint(run, "get_" + route.path.replace("/", "_").replace("-", "_"))


def mount(plane: DataPlane, app: FastAPI, v3_routes: Sequence[DataRoute]) -> None:
    """Mount v3-only routes exempt from strict isolation (POST), plus GET for the paths of GET_PATHS."""
    replace(plane, strict_isolation=False).mount(app, v3_routes)
    for route in v3_routes:
        if route.path in GET_PATHS:
            path = f"/v3/{route.path}"
            app.add_api_route(
                path,
                _get_endpoint(plane, route),
                methods=["GET"],
                summary=(route.summary or route.path) + " (query string)",
                tags=["v3"],
                name=f"v3:GET:{path}",
                openapi_extra=query_operation(route.model, security="data"),
            )
