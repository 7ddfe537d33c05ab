"""The append-only audit log of management actions: who did what, when, under which request."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memhub.meta.caller import Caller
from memhub.meta.clock import canonical, now_iso
from memhub.meta.keys import relation_id
from memhub.meta.paging import Page, read_page
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaStore, MetaWriter


def record(
    w: MetaWriter,
    caller: Caller,
    action: str,
    target_ids: Sequence[str],
    detail: Mapping[str, Any] | None = None,
) -> None:
    """Log an action inside the transaction that performs it: both commit, or neither."""
    w.insert(
        MetaKind.AUDIT,
        {
            "id": "maudit-" + relation_id().replace("-", "")[:16],
            "action": action,
            "actor_user_id": caller.actor,
            "actor_kind": "gateway_key" if caller.is_service_key else caller.user_type,
            "target_ids": json.dumps(list(target_ids), ensure_ascii=False),
            "detail_json": json.dumps(dict(detail or {}), ensure_ascii=False, default=str),
            "request_id": caller.request_id,
            "created_at": now_iso(),
        },
    )


def changed(w: MetaWriter, caller: Caller, kind: MetaKind, entity_id: str, patch: Row, action: str) -> Row:
    """Apply a patch (moving updated_at), log which fields changed, and return the entity as stored."""
    w.update(kind, entity_id, {**patch, "updated_at": now_iso()})
    record(w, caller, action, [entity_id], {"fields": sorted(patch)})
    row = w.get(kind, entity_id)
    assert row is not None  # the caller checked it exists, inside this transaction
    return row


def entry_view(row: Row) -> Row:
    """An audit entry on the wire."""
    return {
        "id": row["id"],
        "seq": row["seq"],
        "action": row["action"],
        "actor_user_id": row["actor_user_id"],
        "actor_kind": row["actor_kind"],
        "target_ids": json.loads(row["target_ids"]),
        "detail": json.loads(row["detail_json"]),
        "request_id": row["request_id"],
        "created_at": row["created_at"],
    }


def query(store: MetaStore, service_id: str, filters: Mapping[str, Any], page: Page) -> Row:
    """Newest first, filtered by action, actor and a time window."""
    where: dict[str, Any] = {}
    for name in ("action", "actor_user_id"):
        if filters.get(name):
            where[name] = filters[name]
    if filters.get("since"):
        where["created_at >="] = canonical(filters["since"])
    if filters.get("until"):
        where["created_at <="] = canonical(filters["until"])
    with store.reading(service_id) as r:
        return read_page(r, MetaKind.AUDIT, where, ["-seq"], page, entry_view)
