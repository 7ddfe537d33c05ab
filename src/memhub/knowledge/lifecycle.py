"""The status rules every kind's resources follow, and the `build_seq` guard of their builds (the steps
around it are `builds.py`, the queue `build_queue.py`).

A resource is `pending` while a build is queued and `processing` while one runs; the build that was
queued last owns the resource (its `build_seq`), so a build superseded by a newer one or by a delete
changes nothing. Reads keep answering from the last good generation and say `stale` until a build
makes a newer one current.
"""

from __future__ import annotations

from memhub.errors import Conflict
from memhub.meta.clock import now_iso
from memhub.model.meta import ID_FIELD, MetaKind, Row
from memhub.store.meta import MetaStore, MetaWriter

BUSY_STATUSES = ("pending", "processing")
SYNC_ERROR_MAX = 500


def busy(row: Row) -> Conflict:
    """The reference's busy answer: 409 with the resource's status and build step."""
    return Conflict("busy", data={"status": row["status"], "step": row.get("internal_status")})


def stale(row: Row) -> bool:
    """Whether reads come from an older generation than the source (a build is queued, running or failed)."""
    return row["status"] != "ready" and row["generation"] > 0


def mark_queued(w: MetaWriter, kind: MetaKind, row: Row) -> int:
    """Mark the resource `pending` under a new `build_seq` (in the caller's transaction); that seq."""
    seq = int(row["build_seq"]) + 1
    w.update(
        kind,
        row[ID_FIELD[kind]],
        {"status": "pending", "internal_status": None, "build_seq": seq, "updated_at": now_iso()},
    )
    return seq


def set_if_current(
    store: MetaStore, kind: MetaKind, service_id: str, resource_id: str, seq: int, changes: Row
) -> Row | None:
    """Update the resource if it still exists and no newer build was queued; the row after, or None."""
    with store.writing(service_id) as w:
        row = w.get(kind, resource_id)
        if row is None or row["build_seq"] != seq:
            return None
        w.update(kind, resource_id, {**changes, "updated_at": now_iso()})
        return w.get(kind, resource_id)


def fail_if_busy(store: MetaStore, kind: MetaKind, service_id: str, resource_id: str, seq: int, reason: str) -> bool:
    """Mark the resource `failed` with `reason` if build `seq` is still its current one and has not finished
    (a build that just committed stays `ready`); whether it did."""
    with store.writing(service_id) as w:
        row = w.get(kind, resource_id)
        if row is None or row["build_seq"] != seq or row["status"] not in BUSY_STATUSES:
            return False
        changes = {"status": "failed", "internal_status": None, "sync_error": reason[:SYNC_ERROR_MAX]}
        w.update(kind, resource_id, {**changes, "updated_at": now_iso()})
        return True
