"""/v3/memory-generation-log/list|get; mounted with memory_prompt.mount (GET too).

The request's isolation is authorized as on the rest of the data plane, then names the caller's own
scope: each handler reads only the records `GenerationAccess` lets the caller see (a user key: its
own scope and profile, plus its admin teams'; the gateway key and a system admin: the tenant).
"""

from __future__ import annotations

from typing import Any

from memhub.api.dataplane import Call, DataRoute
from memhub.api.prompt_schemas import GenerationLogGet, GenerationLogList
from memhub.pipeline.generation_access import GenerationAccess
from memhub.pipeline.generation_log import GenerationLogService, log_view


def routes(service: GenerationLogService, access: GenerationAccess) -> list[DataRoute]:
    """The 2 generation-log routes over one service; `access` says which records each caller reads."""

    def list_(call: Call, body: GenerationLogList) -> dict[str, Any]:
        return service.list(
            call.isolation.service_id,
            window=body.window(),
            layer=body.layer,
            status=body.status,
            team_id=body.team(),
            agent_id=body.agent(),
            limit=body.limit,
            cursor=body.cursor,
            visible=access.visible(call.caller, call.isolation),
        )

    def get(call: Call, body: GenerationLogGet) -> dict[str, Any]:
        sid = call.isolation.service_id
        visible = access.visible(call.caller, call.isolation)
        if body.log_id is not None:
            return log_view(service.get(sid, body.log_id, visible))
        assert body.memory_id is not None and body.layer is not None  # the model's rules
        return log_view(service.for_memory(sid, body.memory_id, body.layer, visible))

    return [
        DataRoute(
            "memory-generation-log/list",
            GenerationLogList,
            list_,
            v2=False,
            summary="Memory generation log, newest first",
        ),
        DataRoute(
            "memory-generation-log/get", GenerationLogGet, get, v2=False, summary="One generation, by log or by memory"
        ),
    ]
