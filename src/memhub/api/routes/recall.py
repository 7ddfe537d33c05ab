"""recall (memhub): what an agent should see this turn — memories, turns, persona and scene index — in one call."""

from __future__ import annotations

from typing import Any

from memhub.api.dataplane import Call, DataRoute
from memhub.api.schemas import Recall
from memhub.memory.recall import DEFAULT_MAX_TOKENS, RecalledItem, RecallRequest, RecentMessage
from memhub.timeutil import ms_to_iso


def item_view(item: RecalledItem) -> dict[str, Any]:
    """One recalled memory or turn on the wire: the fields of its layer only."""
    view: dict[str, Any] = {
        "layer": item.layer,
        "id": item.id,
        "content": item.content,
        "score": round(item.score, 6),
        "timestamp": ms_to_iso(item.time_ms),
    }
    if item.layer == "l1":
        view["type"] = item.type
        view["source_message_ids"] = list(item.source_message_ids)
    else:
        view["session_id"] = item.session_id
        view["role"] = item.role
        if item.truncated:
            view["truncated"] = True
    return view


def recall(call: Call, body: Recall) -> dict[str, Any]:
    unbounded = body.max_tokens is None and body.max_chars is None
    request = RecallRequest(
        query=body.query,
        messages=[RecentMessage(m.role, m.content) for m in body.messages],
        max_tokens=DEFAULT_MAX_TOKENS if unbounded else body.max_tokens,
        max_chars=body.max_chars,
        include_persona=body.include_persona,
        include_scenes=body.include_scenes,
    )
    result = call.memory.recall.recall(call.isolation, request)
    data: dict[str, Any] = {
        "memories": [item_view(item) for item in result.memories],
        "persona": result.persona,
        "scenes": [{"path": e.path, "summary": e.summary or None} for e in result.scenes],
        "tokens": result.tokens,
        "strategy": result.strategy,
    }
    if result.notes:
        data["notes"] = result.notes
    return data


ROUTES = [
    DataRoute(
        "recall",
        Recall,
        recall,
        v2=False,
        summary="Memories, turns, persona and scene index for this turn, within a budget (memhub)",
    ),
]
