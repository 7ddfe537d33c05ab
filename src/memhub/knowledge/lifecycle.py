"""What wiki and code-graph builds share: the status rules, the build pool, and the `build_seq` guard.

A resource is `pending` while a build is queued and `processing` while one runs; the build that was
queued last owns the resource (its `build_seq`), so a build superseded by a newer one or by a delete
changes nothing. Reads keep answering from the last good generation and say `stale` until a build
makes a newer one current.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from memhub.errors import Conflict
from memhub.meta.clock import now_iso
from memhub.store.meta import ID_FIELD, MetaKind, MetaStore, MetaWriter, Row

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


class BuildPool:
    """Background threads for builds, started on first use; closing keeps queued builds for `resume`."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers = workers
        self.name = name
        self._executor: ThreadPoolExecutor | None = None
        self._futures: set[Future[Any]] = set()
        self._closed = False

    def submit(self, run: Callable[[Any], Any], job: Any) -> None:
        """Run `run(job)` in the background (call it after the transaction that queued the job commits)."""
        if self._closed:
            return  # shutting down: the row stays `pending` and is resumed at the next start
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix=self.name)
        future = self._executor.submit(run, job)
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done (tests, shutdown)."""
        for future in list(self._futures):
            future.result(timeout=timeout)

    def close(self) -> None:
        """Finish the running build; queued ones stay `pending` and resume at the next start."""
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
