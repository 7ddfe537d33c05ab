"""pipeline/status (the original's, in every mode), jobs, replay, flush; atomic/history (memhub).

Status, jobs and replay cover the whole tenant for the gateway key and a system admin; a user key
sees only the jobs of the isolation it was authorized for (memhub.pipeline.service).
"""

from __future__ import annotations

from typing import Any

from memhub.api.dataplane import Call, DataRoute
from memhub.api.routes.atomic import atomic_view
from memhub.api.schemas import AtomicHistory, PipelineFlush, PipelineJobs, PipelineReplay, PipelineStatus
from memhub.errors import ServiceUnavailable
from memhub.pipeline.service import PipelineService
from memhub.scope import Isolation


def _pipeline(call: Call) -> PipelineService:
    if call.pipeline is None:
        raise ServiceUnavailable("The memory pipeline is not available in this process")
    return call.pipeline


def _visible(call: Call) -> Isolation | None:
    """The isolation whose jobs the caller sees, or None for the whole tenant."""
    return None if call.caller.is_instance_admin else call.isolation


def status(call: Call, body: PipelineStatus) -> dict[str, Any]:
    # The worker serves every tenant of the process: only the gateway key sees its last error.
    return _pipeline(call).status(call.isolation.service_id, _visible(call), worker_error=call.caller.is_service_key)


def jobs(call: Call, body: PipelineJobs) -> dict[str, Any]:
    items = _pipeline(call).jobs(call.isolation.service_id, body.states, body.limit, _visible(call))
    return {"items": items, "total": len(items)}


def replay(call: Call, body: PipelineReplay) -> dict[str, Any]:
    return {"replayed": _pipeline(call).replay(call.isolation.service_id, body.job_ids, _visible(call))}


def flush(call: Call, body: PipelineFlush) -> dict[str, Any]:
    return {"sessions": _pipeline(call).flush(call.isolation)}


def history(call: Call, body: AtomicHistory) -> dict[str, Any]:
    chain = _pipeline(call).history(call.isolation, body.id)
    current = chain["current"]
    return {**chain, "current": atomic_view(current) if current is not None else None}


ROUTES = [
    DataRoute("pipeline/status", PipelineStatus, status, summary="Pipeline queues per stage"),
    DataRoute("pipeline/jobs", PipelineJobs, jobs, summary="Pipeline jobs with their last errors (memhub)"),
    DataRoute("pipeline/replay", PipelineReplay, replay, summary="Re-queue dead-lettered jobs (memhub)"),
    DataRoute("pipeline/flush", PipelineFlush, flush, summary="Extract the scope's waiting messages now (memhub)"),
    DataRoute("atomic/history", AtomicHistory, history, summary="Versions of an L1 memory (memhub)"),
]
