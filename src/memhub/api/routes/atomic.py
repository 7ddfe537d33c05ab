"""L1 routes: atomic/add|update|query|search|delete|count."""

from __future__ import annotations

from typing import Any

from memhub.api.dataplane import Call, DataRoute
from memhub.api.schemas import AtomicAdd, AtomicCount, AtomicDelete, AtomicQuery, AtomicSearch, AtomicUpdate
from memhub.memory.atomic import AtomicInput
from memhub.model import AtomicFilter, AtomicRecord
from memhub.timeutil import ms_to_iso


def _filter(body: AtomicQuery | AtomicSearch | AtomicCount) -> AtomicFilter:
    start, end = body.bounds_ms()
    return AtomicFilter(type=body.type, time_start_ms=start, time_end_ms=end)


def atomic_view(a: AtomicRecord) -> dict[str, Any]:
    """AtomicDetail on the wire (version is an int here, as the original returns it)."""
    view: dict[str, Any] = {
        "id": a.id,
        "type": a.type,
        "content": a.content,
        "priority": a.priority,
        "version": a.version,
        "team_id": a.team_id,
        "user_id": a.user_id,
        "agent_id": a.agent_id,
        "task_id": a.task_id,
        "session_id": a.session_id,
        "source_message_ids": list(a.source_message_ids),
        "created_at": ms_to_iso(a.created_ms),
        "updated_at": ms_to_iso(a.updated_ms),
    }
    if a.scene_name is not None:
        view["background"] = a.scene_name
    if a.metadata is not None:
        view["metadata"] = a.metadata
    return view


def add(call: Call, body: AtomicAdd) -> dict[str, Any]:
    item = AtomicInput(
        content=body.content,
        type=body.type,
        priority=body.priority,
        background=body.background,
        source_message_ids=tuple(body.source_message_ids),
        metadata=body.metadata,
    )
    (record,) = call.memory.atomic.add(call.isolation, [item])
    return atomic_view(record)


def update(call: Call, body: AtomicUpdate) -> dict[str, Any]:
    record = call.memory.atomic.update(call.isolation, body.id, body.content, body.background, call.request_id)
    # The original returns "v<n>" here and ints everywhere else; clients rely on both.
    return {"id": record.id, "version": f"v{record.version}", "updated_at": ms_to_iso(record.updated_ms)}


def query(call: Call, body: AtomicQuery) -> dict[str, Any]:
    items, total = call.memory.atomic.query(call.isolation, _filter(body), body.limit, body.offset)
    return {"items": [atomic_view(a) for a in items], "total": total}


def search(call: Call, body: AtomicSearch) -> dict[str, Any]:
    outcome = call.memory.atomic.search(call.isolation, body.query, _filter(body), body.options(body.limit))
    return {
        "items": [{**atomic_view(h.record), "score": round(h.score, 6)} for h in outcome.hits],
        "strategy": outcome.strategy,
    }


def delete(call: Call, body: AtomicDelete) -> dict[str, Any]:
    return {"deleted_count": call.memory.atomic.delete(call.isolation, body.ids, call.request_id)}


def count(call: Call, body: AtomicCount) -> dict[str, Any]:
    return {"total": call.memory.atomic.count(call.isolation, _filter(body))}


ROUTES = [
    DataRoute("atomic/add", AtomicAdd, add, summary="Write an L1 memory directly (memhub extension)"),
    DataRoute("atomic/update", AtomicUpdate, update, summary="Update an L1 memory"),
    DataRoute("atomic/query", AtomicQuery, query, summary="Page through L1 memories"),
    DataRoute("atomic/search", AtomicSearch, search, summary="Search L1 memories"),
    DataRoute("atomic/delete", AtomicDelete, delete, summary="Delete L1 memories"),
    DataRoute("atomic/count", AtomicCount, count, v2=False, summary="Count L1 memories"),
]
