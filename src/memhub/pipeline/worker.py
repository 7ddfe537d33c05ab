"""The pipeline worker: schedules due work, claims jobs under a lease and runs them, in the background.

Every gateway process runs one; they share the job table, so several processes (or a restart after
`kill -9`) never run a job twice at the same time and never lose one: a job whose worker died is
taken over when its lease expires.
"""

from __future__ import annotations

import logging
import threading
import uuid

from memhub.background import lower_thread_priority
from memhub.model.pipeline import Job, LeaseLost
from memhub.pipeline.config import PipelineConfig
from memhub.pipeline.runner import PipelineRunner
from memhub.store import MemoryStore
from memhub.timeutil import now_ms

log = logging.getLogger("memhub.pipeline")


class PipelineWorker:
    """One background thread per process."""

    def __init__(self, store: MemoryStore, runner: PipelineRunner, config: PipelineConfig) -> None:
        self.store = store
        self.runner = runner
        self.config = config
        self.owner = f"worker-{uuid.uuid4().hex[:12]}"
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self.jobs_done = 0
        self.jobs_failed = 0

    @property
    def running(self) -> bool:
        """Whether the background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the background thread (idempotent)."""
        if self.running:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="memhub-pipeline", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the thread to stop after the job in hand, without waiting for it."""
        self._stop.set()
        self._wake.set()

    def close(self, timeout: float = 10.0) -> bool:
        """Stop after the job in hand, waiting up to `timeout` seconds; False if that job still runs. A job left
        running is taken over (by the next start's worker or another process) when its lease expires."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(max(timeout, 0.0))
            return not self._thread.is_alive()
        return True

    def nudge(self) -> None:
        """Look for work now instead of at the next poll."""
        self._wake.set()

    def _loop(self) -> None:
        lower_thread_priority()
        while not self._stop.is_set():
            try:
                worked = self.run_once()
            except Exception as exc:  # the store itself failed: log, back off, keep going
                log.exception("pipeline worker iteration failed")
                self.last_error = f"{type(exc).__name__}: {exc}"
                worked = 0
            if not worked:
                self._wake.wait(self.config.poll_ms / 1000)
                self._wake.clear()

    def run_once(self) -> int:
        """Schedule due work, then claim and run what is due; returns how many jobs ran."""
        stamp = now_ms()
        self.store.pipeline.schedule(stamp, self.config.schedule)
        jobs = self.store.pipeline.claim(self.owner, stamp, self.config.lease_ms, self.config.claim_limit)
        for job in jobs:
            if self._stop.is_set():
                break  # leased jobs not started are taken over when their lease expires
            self._execute(job)
        return len(jobs)

    def drain(self, max_rounds: int = 1000) -> int:
        """Run in this thread until no job is due (tests, `memhub` commands); returns jobs run."""
        total = 0
        for _ in range(max_rounds):
            ran = self.run_once()
            total += ran
            if not ran:
                return total
        return total

    def _execute(self, job: Job) -> None:
        try:
            self.runner.run(job, self.owner)
            self.jobs_done += 1
        except LeaseLost as exc:
            log.warning("%s", exc)
        except Exception as exc:
            self.jobs_failed += 1
            message = f"{type(exc).__name__}: {exc}"
            self.last_error = message
            retryable = getattr(exc, "retryable", True)
            stamp = now_ms()
            failure = self.config.retry.after_failure(job.kind, job.attempts, retryable, stamp)
            log.warning("pipeline job %s %s failed (attempt %d): %s", job.kind, job.target, job.attempts, message)
            self.store.pipeline.fail(job, self.owner, message, stamp, failure.retry_at_ms, failure.hold_session)
