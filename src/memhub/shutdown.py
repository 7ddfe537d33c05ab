"""A process's stop budget: how long it may take from the stop signal to its exit.

A supervisor that sends SIGTERM kills the process a few seconds later, so stopping must never wait for
background work to finish. It need not: every worker keeps its work durable (records queued for embedding,
leased pipeline jobs, pending knowledge builds, the capture spool) and takes it up again at the next start,
exactly as after a crash. A stop therefore drains the requests in flight and asks every worker to stop within
what is left of the budget; a worker still busy past it is left to the process's exit, and so is everything it
may still use (the store, the models): nothing is closed under it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("memhub.shutdown")


class StopClock:
    """Started by the stop signal (or by the app's shutdown when no signal came first); tells what is left."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._started: float | None = None

    def start(self) -> None:
        """Start counting (the first call only: a second signal does not extend the budget).

        No lock: this runs in a signal handler, which would deadlock on a lock its own thread holds. Two threads
        starting the clock at once both store the current instant, which is the same to well within a second.
        """
        if self._started is None:
            self._started = time.monotonic()

    @property
    def drain_s(self) -> float:
        """The requests' share of the budget: how long the server lets the requests in flight finish."""
        return max(self.budget_s / 2, 0.1)

    def elapsed(self) -> float:
        """Seconds since the clock started; starts it if nothing has yet."""
        self.start()
        started = self._started
        assert started is not None
        return time.monotonic() - started

    def remaining(self) -> float:
        """Seconds left of the budget (0 once spent); starts the clock if nothing has yet."""
        return max(0.0, self.budget_s - self.elapsed())

    def drain_over(self) -> bool:
        """Whether the requests' share is spent. The server then cancels the requests still in flight, but a
        request's handler running in a thread goes on (nothing waits for that thread), so whatever it uses must
        be left open."""
        return self.elapsed() >= self.drain_s


def finish_within(clock: StopClock | None, what: str, stop: Callable[[], object]) -> bool:
    """Run a blocking `stop` within the clock's remaining budget (wholly without a clock); False when it is
    still running then (it goes on in a daemon thread until the process exits) or failed (logged)."""
    if clock is None:
        stop()
        return True
    failure: list[BaseException] = []

    def run() -> None:
        try:
            stop()
        except BaseException as exc:  # reported below, in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name=f"memhub-stop-{what}", daemon=True)
    thread.start()
    thread.join(clock.remaining())
    if thread.is_alive():
        return False
    if failure:
        log.error("stopping %s failed", what, exc_info=failure[0])
        return False
    return True
