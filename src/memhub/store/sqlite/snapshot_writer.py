"""The background thread that writes vector snapshots: one at a time, when due, never in a request's way."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

from memhub.background import lower_thread_priority

log = logging.getLogger(__name__)

# A job returns None when done, or the seconds after which it wants to run again.
SnapshotJob = Callable[[], float | None]


class SnapshotWriter:
    """Runs snapshot jobs by key when they fall due; asking again for a key that waits keeps the earlier time."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[Hashable, tuple[float, SnapshotJob]] = {}
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None

    @property
    def stopping(self) -> bool:
        """True once `close` was called: a job in progress gives up (a write leaves no file behind)."""
        return self._closed

    def request(self, key: Hashable, job: SnapshotJob, delay: float = 0.0) -> None:
        """Run `job` in the writer's thread `delay` seconds from now, unless it is due sooner already."""
        due = time.monotonic() + max(0.0, delay)
        with self._cond:
            if self._closed:
                return
            waiting = self._due.get(key)
            if waiting is None or due < waiting[0]:
                self._due[key] = (due, job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._main, name="memhub-vector-snapshots", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no job runs and none is due within `timeout` (tests, benchmarks); False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                now = time.monotonic()
                soon = [due for due, _ in self._due.values() if deadline is None or due <= deadline]
                if not self._running and not soon:
                    return True
                if deadline is not None and now >= deadline:
                    return False
                self._cond.wait(None if deadline is None else deadline - now)

    def close(self, timeout: float = 5.0) -> None:
        """Stop: jobs not yet begun are dropped, the one running stops at its next chunk."""
        with self._cond:
            self._closed = True
            self._due.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _next(self) -> tuple[Hashable, SnapshotJob] | None:
        with self._cond:
            while not self._closed:
                if self._due:
                    key, (due, job) = min(self._due.items(), key=lambda item: item[1][0])
                    wait = due - time.monotonic()
                    if wait <= 0:
                        del self._due[key]
                        self._running = True
                        return key, job
                    self._cond.wait(wait)
                else:
                    self._cond.wait()
            return None

    def _main(self) -> None:
        lower_thread_priority()  # a snapshot is worth having, but never at a search's expense
        while (item := self._next()) is not None:
            key, job = item
            try:
                retry = job()
            except Exception:  # the index keeps serving; only this snapshot is lost
                if not self._closed:
                    log.exception("vector snapshot failed")
                retry = None
            with self._cond:
                self._running = False
                if retry is not None and not self._closed and key not in self._due:
                    self._due[key] = (time.monotonic() + retry, job)
                self._cond.notify_all()
