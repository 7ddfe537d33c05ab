"""What the pipeline tells and takes from clients: status, jobs, replay, flush, memory history.

Status, jobs and replay cover what the caller may see: the whole tenant for an instance
administrator, otherwise the jobs of the request's own scopes (its L0/L1 scope's sessions and its
L2/L3 profile), chosen inside the store's queries. A job outside them does not exist for the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memhub.errors import NotFound
from memhub.memory.atomic import in_scope
from memhub.model.pipeline import Job, JobScope
from memhub.pipeline.worker import PipelineWorker
from memhub.scope import Isolation
from memhub.store import MemoryStore
from memhub.store.offload import OFFLOAD_JOBS
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


def _job_scope(iso: Isolation | None) -> JobScope | None:
    # Through the isolation's own scope helpers: the jobs are exactly those of the scopes the layers use.
    return JobScope.of(iso.memory, iso.profile) if iso is not None else None


@dataclass
class PipelineService:
    """Status and control of the pipeline of one store."""

    store: MemoryStore
    worker: PipelineWorker | None
    generator: str

    def status(self, service_id: str, scope: Isolation | None = None, *, worker_error: bool = True) -> dict[str, Any]:
        """The original's `/v2/pipeline/status` shape per stage, plus dead-lettered counts and the worker's state.

        `scope`: count only the jobs and sessions of this isolation (None: the whole tenant).
        `worker_error`: show the worker's last error, which may come from any tenant's job.
        """
        counts = self.store.pipeline.counts(service_id, _job_scope(scope))
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
        if scope is None:
            # Context offload's stages ride on the same jobs; its backlog is shown tenant-wide.
            offload: dict[str, Any] = {
                kind.removeprefix("offload-"): {
                    "queued": len(counts.queued.get(kind, [])),
                    "running": len(counts.running.get(kind, [])),
                    "dead": counts.dead.get(kind, 0),
                }
                for kind in OFFLOAD_JOBS
            }
            offload.update(self.store.offload.counts(service_id))
            out["offload"] = offload
        worker = self.worker
        out["worker"] = {
            "running": bool(worker and worker.running),
            "generator": self.generator,
            "jobs_done": worker.jobs_done if worker else 0,
            "jobs_failed": worker.jobs_failed if worker else 0,
            "last_error": worker.last_error if worker and worker_error else None,
        }
        return out

    def jobs(
        self, service_id: str, states: Sequence[str], limit: int, scope: Isolation | None = None
    ) -> list[dict[str, Any]]:
        """Jobs in these states (of this isolation's scopes; None: the whole tenant), newest first."""
        return [job_view(j) for j in self.store.pipeline.jobs(service_id, states, limit, _job_scope(scope))]

    def replay(self, service_id: str, job_ids: Sequence[int], scope: Isolation | None = None) -> int:
        """Dead-lettered jobs back into the queue; 404 naming the ids that are not jobs the caller may see."""
        result = self.store.pipeline.replay(service_id, job_ids, now_ms(), _job_scope(scope))
        if result.missing:
            positions = {job_id: i for i, job_id in reversed(list(enumerate(job_ids)))}
            text = "; ".join(f"job_ids[{positions[j]}]: job not found: {j}" for j in result.missing[:5])
            raise NotFound(text, data={"missing_ids": list(result.missing)})
        if result.count and self.worker is not None:
            self.worker.nudge()
        return result.count

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
