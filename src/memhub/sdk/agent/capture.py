"""Fire-and-forget capture: a bounded queue on the kit's loop, one sender, retries that cannot duplicate.

Each batch carries an idempotency key derived from its content, so a retry after a timeout whose request
did land is recorded once by the gateway. The queue is bounded: when a long outage fills it, new batches
are dropped and counted (the agent's memory must never grow without limit), and the drop is logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub.sdk.agent.breaker import CircuitBreaker, is_outage
from memhub.sdk.agent.config import SERVER_MAX_BATCH, SERVER_MAX_BATCH_BYTES, AgentConfig


def wire_bytes(messages: Sequence[Mapping[str, Any]]) -> int:
    """The UTF-8 size of messages as JSON, to keep a request under the gateway's body limit."""
    return len(json.dumps(list(messages), ensure_ascii=False).encode("utf-8"))


def idempotency_key(session_id: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """A key that names this batch's content, so the same batch sent twice is stored once."""
    payload = json.dumps([session_id, list(messages)], ensure_ascii=False, sort_keys=True, default=str)
    return "cap-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:40]


@dataclass(slots=True)
class CaptureJob:
    """One `/v3/conversation/add` call waiting to be sent."""

    session_id: str
    messages: list[dict[str, Any]]
    key: str
    attempts: int = 0


@dataclass(slots=True)
class CaptureStats:
    """Counters of the capture path, for `MemoryAgent.stats`."""

    queued: int = 0
    sent: int = 0
    messages_sent: int = 0
    retries: int = 0
    dropped: int = 0
    rejected: int = 0
    last_error: str | None = None


class CaptureQueue:
    """Bounded queue plus one sender task; every method runs on the kit's event loop."""

    def __init__(
        self,
        send: Callable[[CaptureJob], Awaitable[Any]],
        breaker: CircuitBreaker,
        config: AgentConfig,
        logger: logging.Logger,
    ) -> None:
        self._send = send
        self._breaker = breaker
        self._config = config
        self._log = logger
        self._queue: asyncio.Queue[CaptureJob] = asyncio.Queue(maxsize=config.capture_queue_size)
        self._worker: asyncio.Task[None] | None = None
        self._in_flight = False
        self._carry: CaptureJob | None = None  # taken off the queue, next to send
        self.stats = CaptureStats()

    def offer(self, job: CaptureJob) -> bool:
        """Queue a batch without waiting; False (and a warning) when the queue is full."""
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run(), name="memhub-capture")
        try:
            self._queue.put_nowait(job)
        except asyncio.QueueFull:
            self.stats.dropped += 1
            self._log.warning(
                "memhub capture: queue full (%d batches), dropped %d message(s) of session %s",
                self._config.capture_queue_size,
                len(job.messages),
                job.session_id,
            )
            return False
        self.stats.queued += 1
        return True

    async def join(self, timeout: float) -> bool:
        """Wait until every queued batch was sent or given up; False on timeout."""
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
        except TimeoutError:
            return False
        return True

    def pending(self) -> int:
        """Batches not yet sent or given up, including the one being sent."""
        return self._queue.qsize() + (1 if self._in_flight else 0) + (1 if self._carry is not None else 0)

    def snapshot(self) -> dict[str, Any]:
        """The counters and the pending count, for `MemoryAgent.stats`."""
        s = self.stats
        return {
            "queued": s.queued,
            "sent": s.sent,
            "messages_sent": s.messages_sent,
            "retries": s.retries,
            "dropped": s.dropped,
            "rejected": s.rejected,
            "pending": self.pending(),
            "last_error": s.last_error,
        }

    async def _run(self) -> None:
        while True:
            first = self._carry if self._carry is not None else await self._queue.get()
            self._carry = None
            job, taken = first, 1
            # Batches that queued up behind a slow or absent gateway go out together: one request instead of
            # one per turn, within the gateway's message and byte limits, and only within one session.
            while not self._queue.empty():
                nxt = self._queue.get_nowait()
                merged = job.messages + nxt.messages
                if (
                    nxt.session_id != job.session_id
                    or len(merged) > SERVER_MAX_BATCH
                    or (wire_bytes(merged) > SERVER_MAX_BATCH_BYTES)
                ):
                    self._carry = nxt
                    break
                job = CaptureJob(job.session_id, merged, idempotency_key(job.session_id, merged))
                taken += 1
            self._in_flight = True
            try:
                await self._deliver(job)
            finally:
                self._in_flight = False
                for _ in range(taken):
                    self._queue.task_done()

    async def _deliver(self, job: CaptureJob) -> None:
        cfg = self._config
        delay = cfg.capture_backoff
        while True:
            wait = self._breaker.retry_after()
            if wait > 0 or not self._breaker.allow():
                # The gateway is known to be down: waiting costs nothing, failing would burn attempts.
                await asyncio.sleep(max(wait, 0.05))
                continue
            job.attempts += 1
            try:
                await self._send(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._breaker.record_failure(exc)
                self.stats.last_error = _describe(exc)
                if not is_outage(exc):
                    self.stats.rejected += 1
                    self._log.error("memhub capture: gateway rejected a batch (%s); not retried", _describe(exc))
                    return
                if job.attempts >= cfg.capture_max_attempts:
                    self.stats.dropped += 1
                    self._log.error(
                        "memhub capture: gave up after %d attempts (%s); %d message(s) of session %s lost",
                        job.attempts,
                        _describe(exc),
                        len(job.messages),
                        job.session_id,
                    )
                    return
                self.stats.retries += 1
                self._log.warning("memhub capture: attempt %d failed (%s); retrying", job.attempts, _describe(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, cfg.capture_backoff_max)
                continue
            self._breaker.record_success()
            self.stats.sent += 1
            self.stats.messages_sent += len(job.messages)
            return


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]
