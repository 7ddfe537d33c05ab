"""What the pipeline tells and takes from clients: status, jobs, replay, flush, memory history."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhub.errors import NotFound
from memhub.memory.atomic import in_scope
from memhub.pipeline.worker import PipelineWorker
from memhub.scope import Isolation
from memhub.store import MemoryStore
from memhub.store.pipeline import Job
from memhub.timeutil import ms_to_iso, now_ms

STAGES = ("l1", "l2", "l3")


def job_view(job: Job) -> dict[str, Any]:
    """A job on the wire."""
    return {
        "job_id": job.seq,
        "kind": job.kind,
        "target": job.target,
        "scope": job.scope,
        "state": job.state,
        "attempts": job.attempts,
        "run_after": ms_to_iso(job.run_after_ms),
        "last_error": job.last_error,
        "created_at": ms_to_iso(job.created_ms),
        "updated_at": ms_to_iso(job.updated_ms),
    }


@dataclass
class PipelineService:
    """Status and control of the pipeline of one store."""

    store: MemoryStore
    worker: PipelineWorker | None
    generator: str

    def status(self, service_id: str) -> dict[str, Any]:
        """Spec §2.8 shape per stage, plus dead-lettered counts and the worker's state."""
        counts = self.store.pipeline.counts(service_id)
        out: dict[str, Any] = {}
        for stage in STAGES:
            queued = counts.queued.get(stage, [])
            running = counts.running.get(stage, [])
            out[stage] = {
                "queued": len(queued),
                "running": len(running),
                "queued_sessions": queued,
                "running_sessions": running,
                "idle": not queued and not running,
                "dead": counts.dead.get(stage, 0),
            }
        out["waiting_sessions"] = counts.waiting_sessions
        worker = self.worker
        out["worker"] = {
            "running": bool(worker and worker.running),
            "generator": self.generator,
            "jobs_done": worker.jobs_done if worker else 0,
            "jobs_failed": worker.jobs_failed if worker else 0,
            "last_error": worker.last_error if worker else None,
        }
        return out

    def jobs(self, service_id: str, states: Sequence[str], limit: int) -> list[dict[str, Any]]:
        """Jobs in these states, newest first."""
        return [job_view(j) for j in self.store.pipeline.jobs(service_id, states, limit)]

    def replay(self, service_id: str, job_ids: Sequence[int]) -> int:
        """Dead-lettered jobs back into the queue."""
        replayed = self.store.pipeline.replay(service_id, job_ids, now_ms())
        if replayed and self.worker is not None:
            self.worker.nudge()
        return replayed

    def flush(self, iso: Isolation) -> int:
        """Extract everything waiting in the caller's scope now (one session, or all), then L2 and L3."""
        marked = self.store.pipeline.request_flush(iso.memory, iso.session_id)
        if self.worker is not None:
            self.worker.nudge()
        return marked

    def history(self, iso: Isolation, memory_id: str) -> dict[str, Any]:
        """The versions a memory went through and the memories merged into it."""
        current = self.store.get_atomic(iso.service_id, memory_id)
        versions = self.store.pipeline.atomic_history(iso.service_id, memory_id)
        if current is None and not versions:
            raise NotFound(f"Atomic memory not found: {memory_id}")
        if current is not None and not in_scope(current, iso):
            raise NotFound(f"Atomic memory not found: {memory_id}")  # as if absent: a 403 would confirm it exists
        if current is None and any(v["scope_key"] != iso.memory.key for v in versions):
            raise NotFound(f"Atomic memory not found: {memory_id}")
        for version in versions:
            version.pop("scope_key", None)
            version["valid_from"] = ms_to_iso(version.pop("valid_from_ms"))
            version["valid_to"] = ms_to_iso(version.pop("valid_to_ms"))
        return {"id": memory_id, "current": current, "versions": versions}
