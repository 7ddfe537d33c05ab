"""What every kind's builds share: the queue they run from, the `build_seq` guard around each step, failing,
discarding a build that did not become current, and resuming at start.

A build is queued in the transaction that asks for it (the resource becomes `pending` with a new `build_seq`,
memhub.knowledge.lifecycle) and runs from a `BuildQueue` (fair across tenants, bounded per tenant, each build
time-limited) as `processing`, writing a new generation. Then one transaction points the resource at it, marks
it `ready` and registers it in the knowledge registry. A build only touches the resource while its `build_seq`
is still the resource's: a newer build, a delete or the build's time limit supersedes it, and its files are
discarded. Queued builds are kept nowhere but in the rows: a process that stops leaves them `pending` or
`processing`, and `resume` queues them again at the next start.

Each kind's `builds.py` subclasses `ResourceBuilds` with its job type, `run` (source → generation → commit)
and `requeue`.
"""

from __future__ import annotations

from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import ClassVar, Generic, Protocol, TypeVar

from memhub.knowledge.build_queue import BuildQueue, Deadline, QueueLimits, Reservation
from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.lifecycle import BUSY_STATUSES, SYNC_ERROR_MAX, fail_if_busy, set_if_current
from memhub.knowledge.storage import ResourceFiles
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaStore, MetaWriter


class Job(Protocol):
    """One queued build: the tenant, the resource and the `build_seq` it was queued as."""

    @property
    def service_id(self) -> str: ...

    @property
    def resource_id(self) -> str: ...

    @property
    def seq(self) -> int: ...


J = TypeVar("J", bound=Job)
R = TypeVar("R")


@dataclass(kw_only=True)
class ResourceBuilds(Generic[J, R]):
    """The build queue of every tenant's resources of one kind, with the steps every kind's builds share."""

    KIND: ClassVar[ResourceKind]
    # The end of the failure a build past its time limit records: what the owner can do about it.
    TIMEOUT_ADVICE: ClassVar[str]

    store: MetaStore
    files: ResourceFiles
    public_url: str
    limits: QueueLimits = field(default_factory=QueueLimits)
    pool: BuildQueue = field(init=False)

    def __post_init__(self) -> None:
        self.pool = BuildQueue(f"{self.KIND.name} builds", self.limits)

    def reserve(self, service_id: str) -> AbstractContextManager[Reservation]:
        """A place in the tenant's build line, taken before anything is written (429 when its line is full)."""
        return self.pool.reserve(service_id)

    def run(self, job: J, deadline: Deadline) -> R | None:
        """Run one build; never raises (a failure is recorded on the resource)."""
        raise NotImplementedError

    def requeue(self, w: MetaWriter, row: Row) -> J | None:
        """At resume: queue again a build a previous process left pending or running (in `w`'s transaction)."""
        raise NotImplementedError

    def submit(self, job: J, place: Reservation | None = None) -> Future[R | None]:
        """Run the build in the background, in its `reserve`d place (call it after the transaction that queued
        it commits); the future of its report (None when it failed)."""

        def run(deadline: Deadline) -> R | None:
            return self.run(job, deadline)

        def timed_out(limit: float) -> None:
            self._timed_out(job, limit)

        if place is None:
            return self.pool.submit(job.service_id, run, timed_out)
        return place.submit(run, timed_out)

    def _timed_out(self, job: J, limit: float) -> None:
        """The queue gave the build up at its time limit: the resource fails (if the build is still its current
        one and had not finished); the build's thread discards what it made when it notices."""
        reason = f"build timed out after {limit:g} s (limit {self.limits.time_setting}); {self.TIMEOUT_ADVICE}"
        fail_if_busy(self.store, self.KIND.meta_kind, job.service_id, job.resource_id, job.seq, reason)

    def _set(self, job: J, changes: Row, deadline: Deadline) -> Row | None:
        """Update the resource if it still exists, no newer build was queued and this one was not stopped at its
        time limit; the row after, or None."""
        if deadline.stopped.is_set():
            return None
        return set_if_current(self.store, self.KIND.meta_kind, job.service_id, job.resource_id, job.seq, changes)

    def _fail(self, job: J, reason: str, deadline: Deadline) -> None:
        self._set(job, {"status": "failed", "internal_status": None, "sync_error": reason[:SYNC_ERROR_MAX]}, deadline)
        self._discard(job)

    def _discard(self, job: J) -> None:
        """Remove what a build that did not become current left on disk (everything, if the resource was
        deleted)."""
        with self.store.reading(job.service_id) as r:
            row = r.get(self.KIND.meta_kind, job.resource_id)
        if row is None:
            self.files.remove(job.service_id, job.resource_id)
        elif row["build_seq"] == job.seq or row["status"] not in BUSY_STATUSES:
            self.files.prune_generations(job.service_id, job.resource_id, keep=row["generation"])
        else:
            # A newer build is queued: only this build's own generation goes.
            self.files.remove_generation(job.service_id, job.resource_id, job.seq)

    def resume(self) -> int:
        """At start: queue again the builds a previous process left pending or running (how many are
        returned), and point registrations of this server's resources at its current public URL."""
        kind = self.KIND
        count = 0
        for service_id in self.files.tenants():
            with self.store.writing(service_id) as w:
                jobs = [self.requeue(w, row) for row in w.find(kind.meta_kind, {"status": list(BUSY_STATUSES)})]
                # Registrations follow this server's public URL (it may have moved since they were written).
                moved = w.find(MetaKind.KNOWLEDGE, {"type": kind.name, "service_url !=": self.public_url})
                ids = [m["knowledge_id"] for m in moved]
                ours = {x[kind.id_field] for x in w.find(kind.meta_kind, {kind.id_field: ids})}
                for entry in moved:
                    if entry["knowledge_id"] in ours:
                        w.update(MetaKind.KNOWLEDGE, entry["knowledge_id"], {"service_url": self.public_url})
            for job in jobs:
                if job is not None:
                    self.submit(job)
                    count += 1
        return count

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done (tests, shutdown)."""
        self.pool.wait_idle(timeout)

    def close(self) -> None:
        """Finish the running builds; queued ones stay `pending` and resume at the next start."""
        self.pool.close()
