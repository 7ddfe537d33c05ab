"""The queue wiki and code-graph builds run from: fair across tenants, bounded per tenant, each build timed.

- Fair: each tenant (service id) has its own line of waiting builds, and the workers take one build from
  each tenant in turn, so one tenant's hundred queued builds delay another's single build by at most one
  build per worker, not by a hundred.
- Bounded: a tenant may have `per_tenant` builds waiting; one more is refused with 429 naming the limit
  (`reserve`, called before anything is written, so a refused request changes nothing).
- Timed: a build that runs past `time_limit` seconds is given up: its `on_timeout(limit)` records the failure,
  its `Deadline` is stopped (the build checks it between steps and ends at the next one, its result
  discarded) and the worker moves on to the next build at once.

Builds run on worker threads started on first use; closing lets the running builds finish (or reach their
limit) and leaves the waiting ones to `resume` at the next start, as their rows still say `pending`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from memhub.background import lower_thread_priority
from memhub.errors import TooManyRequests

log = logging.getLogger("memhub.knowledge")


class BuildStopped(Exception):
    """The build's deadline passed (or the queue gave it up): it ends without a result."""


@dataclass
class Deadline:
    """When a running build must end; `stopped` is set once it timed out, so the build stops at its next step."""

    limit: float
    started: float = field(default_factory=time.monotonic)
    stopped: threading.Event = field(default_factory=threading.Event)

    def remaining(self) -> float:
        """Seconds left (0 once passed or stopped)."""
        if self.stopped.is_set():
            return 0.0
        return max(0.0, self.limit - (time.monotonic() - self.started))

    def check(self) -> None:
        """BuildStopped once the build was given up."""
        if self.stopped.is_set():
            raise BuildStopped("the build was stopped at its time limit")


Build = Callable[[Deadline], Any]
PER_TENANT_SETTING = "MEMHUB_KNOWLEDGE_BUILD_QUEUE_PER_TENANT"


@dataclass
class _Item:
    tenant: str
    run: Build
    on_timeout: Callable[[float], None]
    future: Future[Any] = field(default_factory=Future)


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """How many builds run at once, how long one may run, and how many one tenant may have waiting; the
    setting names go into the errors that enforce them."""

    workers: int = 1
    time_limit: float = 1800.0
    per_tenant: int = 20
    time_setting: str = "the build time limit"
    per_tenant_setting: str = PER_TENANT_SETTING


class Reservation:
    """A place in a tenant's line, taken before the request writes anything; `submit` fills it, and leaving
    the `reserve` block without submitting gives it back."""

    def __init__(self, queue: BuildQueue, tenant: str) -> None:
        self._queue = queue
        self.tenant = tenant
        self.used = False

    def submit(self, run: Build, on_timeout: Callable[[float], None]) -> Future[Any]:
        """Queue the build in this place; a future of its result (None when it timed out or was left queued)."""
        self.used = True
        return self._queue._enqueue(self.tenant, run, on_timeout, reserved=True)


class BuildQueue:
    """Background builds of every tenant of one kind (wikis or code graphs)."""

    def __init__(self, name: str, limits: QueueLimits) -> None:
        self.name = name
        self.limits = limits
        self._lock = threading.Condition()
        self._waiting: OrderedDict[str, deque[_Item]] = OrderedDict()
        self._reserved: dict[str, int] = {}
        self._running = 0
        self._given_up = 0  # builds past their limit whose threads have not reached their next step yet
        self._workers: list[threading.Thread] = []
        self._closed = False

    @contextmanager
    def reserve(self, tenant: str) -> Iterator[Reservation]:
        """A place for one more build of `tenant`, or 429 when it already has `per_tenant` waiting."""
        limit = self.limits.per_tenant
        with self._lock:
            waiting = len(self._waiting.get(tenant, ())) + self._reserved.get(tenant, 0)
            if waiting >= limit:
                raise TooManyRequests(
                    f"{self.name}: {waiting} builds of this service are already waiting "
                    f"(limit {self.limits.per_tenant_setting}={limit}); retry when some have finished",
                    data={"waiting": waiting, "limit": limit, "retryable": True},
                )
            self._reserved[tenant] = self._reserved.get(tenant, 0) + 1
        reservation = Reservation(self, tenant)
        try:
            yield reservation
        finally:
            if not reservation.used:
                self._unreserve(tenant)

    def submit(self, tenant: str, run: Build, on_timeout: Callable[[float], None]) -> Future[Any]:
        """Queue a build without a reservation (builds resumed at start: their rows are already pending)."""
        return self._enqueue(tenant, run, on_timeout, reserved=False)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until no build waits or runs, the ones given up at their limit included (tests, shutdown);
        TimeoutError past `timeout`."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._waiting or self._running or self._given_up:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self.name}: builds still running after {timeout:g} s")
                self._lock.wait(left)

    def close(self) -> None:
        """Let the running builds finish (or reach their limit); waiting ones stay `pending` for `resume`."""
        with self._lock:
            self._closed = True
            left = [item for line in self._waiting.values() for item in line]
            self._waiting.clear()
            self._lock.notify_all()
        for item in left:
            item.future.set_result(None)
        for worker in self._workers:
            worker.join()

    # -- inside ---------------------------------------------------------------------------------------------

    def _enqueue(self, tenant: str, run: Build, on_timeout: Callable[[float], None], *, reserved: bool) -> Future[Any]:
        item = _Item(tenant, run, on_timeout)
        with self._lock:
            if reserved:
                self._release_reservation(tenant)
            if self._closed:
                item.future.set_result(None)  # shutting down: the row stays pending and resumes at the next start
                return item.future
            self._waiting.setdefault(tenant, deque()).append(item)
            if len(self._workers) < self.limits.workers:
                worker = threading.Thread(target=self._work, name=f"{self.name}-{len(self._workers)}", daemon=True)
                self._workers.append(worker)
                worker.start()
            self._lock.notify_all()
        return item.future

    def _unreserve(self, tenant: str) -> None:
        with self._lock:
            self._release_reservation(tenant)
            self._lock.notify_all()

    def _release_reservation(self, tenant: str) -> None:
        count = self._reserved.get(tenant, 0) - 1
        if count > 0:
            self._reserved[tenant] = count
        else:
            self._reserved.pop(tenant, None)

    def _next(self) -> _Item | None:
        """The next build: the first waiting one of the tenant whose turn it is (that tenant then goes last)."""
        with self._lock:
            while not self._waiting and not self._closed:
                self._lock.wait()
            if self._closed:
                return None
            tenant, line = self._waiting.popitem(last=False)
            item = line.popleft()
            if line:
                self._waiting[tenant] = line
            self._running += 1
            return item

    def _work(self) -> None:
        lower_thread_priority()  # the build threads it starts inherit it
        while (item := self._next()) is not None:
            try:
                self._run(item)
            finally:
                with self._lock:
                    self._running -= 1
                    self._lock.notify_all()

    def _run(self, item: _Item) -> None:
        """Run one build on a thread of its own and wait for it up to its limit; past that, give it up."""
        deadline = Deadline(self.limits.time_limit)
        outcome: Future[Any] = Future()

        def build() -> None:
            try:
                outcome.set_result(item.run(deadline))
            except BaseException as exc:  # the build's own handler records failures; anything else surfaces here
                outcome.set_exception(exc)
            finally:
                with self._lock:
                    if deadline.stopped.is_set():
                        self._given_up -= 1
                        self._lock.notify_all()

        threading.Thread(target=build, name=f"{self.name}-build", daemon=True).start()
        wait([outcome], timeout=deadline.limit)
        with self._lock:
            given_up = not outcome.done()
            if given_up:
                self._given_up += 1
                deadline.stopped.set()
        if given_up:
            try:
                item.on_timeout(deadline.limit)
            except Exception:  # recording the failure must not take the worker down with it
                log.exception("%s: recording a timed-out build failed", self.name)
            item.future.set_result(None)
        elif outcome.exception() is not None:
            item.future.set_exception(outcome.exception())  # type: ignore[arg-type]
        else:
            item.future.set_result(outcome.result())
