"""L0 routes: conversation/add|query|search|delete|count."""

from __future__ import annotations

import re
from typing import Any

from memhub.api.dataplane import Call, DataRoute
from memhub.api.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    IDEMPOTENCY_KEY_RULE,
    ConversationAdd,
    ConversationCount,
    ConversationDelete,
    ConversationQuery,
    ConversationSearch,
    TimeRange,
)
from memhub.errors import FieldError
from memhub.memory.conversation import MessageInput
from memhub.model import MessageFilter, MessageRecord
from memhub.timeutil import ms_to_iso, parse_iso_ms

IDEMPOTENCY_HEADER = "idempotency-key"
_IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)


def _filter(body: TimeRange, session_id: str | None) -> MessageFilter:
    start, end = body.bounds_ms()
    return MessageFilter(session_id=session_id, time_start_ms=start, time_end_ms=end)


def message_view(m: MessageRecord) -> dict[str, Any]:
    """An L0 message on the wire; `timestamp` is the recorded time, as in the original."""
    view: dict[str, Any] = {
        "id": m.id,
        "session_id": m.session_id,
        "team_id": m.team_id,
        "user_id": m.user_id,
        "agent_id": m.agent_id,
        "task_id": m.task_id,
        "role": m.role,
        "content": m.content,
        "timestamp": ms_to_iso(m.recorded_ms),
        "message_time": ms_to_iso(m.message_ms),
    }
    if m.metadata is not None:
        view["metadata"] = m.metadata
    return view


def add(call: Call, body: ConversationAdd) -> dict[str, Any]:
    key = body.idempotency_key or call.request.headers.get(IDEMPOTENCY_HEADER) or None
    if key is not None and not _IDEMPOTENCY_KEY.match(key):
        raise FieldError("Idempotency-Key", IDEMPOTENCY_KEY_RULE)
    messages = [
        MessageInput(
            role=m.role,
            content=m.content,
            message_ms=parse_iso_ms(m.timestamp) if m.timestamp else None,
            recorded_ms=parse_iso_ms(m.recorded_at) if m.recorded_at else None,
            metadata=m.metadata,
        )
        for m in body.messages
    ]
    session_id = call.isolation.session_id or "default"
    result = call.memory.conversation.add(call.isolation, session_id, messages, key)
    call.meta.note_conversation(call.isolation)
    return {
        "accepted_ids": result.ids,
        "accepted_versions": ["v1"] * len(result.ids),
        "total_count": len(result.ids),
    }


def query(call: Call, body: ConversationQuery) -> dict[str, Any]:
    flt = _filter(body, call.isolation.session_id)
    messages, total = call.memory.conversation.query(call.isolation, flt, body.limit, body.offset)
    return {"messages": [message_view(m) for m in messages], "total": total}


def search(call: Call, body: ConversationSearch) -> dict[str, Any]:
    flt = _filter(body, call.isolation.session_id)
    outcome = call.memory.conversation.search(call.isolation, body.query, flt, body.options(body.limit))
    return {
        "messages": [{**message_view(h.record), "score": round(h.score, 6)} for h in outcome.hits],
        "strategy": outcome.strategy,
    }


def delete(call: Call, body: ConversationDelete) -> dict[str, Any]:
    message_ids, session_ids = body.targets()
    return {"deleted_count": call.memory.conversation.delete(call.isolation, message_ids, session_ids)}


def count(call: Call, body: ConversationCount) -> dict[str, Any]:
    return {"total": call.memory.conversation.count(call.isolation, _filter(body, call.isolation.session_id))}


ROUTES = [
    DataRoute("conversation/add", ConversationAdd, add, summary="Append L0 messages"),
    DataRoute("conversation/query", ConversationQuery, query, summary="Page through L0 messages"),
    DataRoute("conversation/search", ConversationSearch, search, summary="Search L0 messages"),
    DataRoute("conversation/delete", ConversationDelete, delete, summary="Delete L0 messages or sessions"),
    DataRoute("conversation/count", ConversationCount, count, v2=False, summary="Count L0 messages"),
]
