"""Background threads run at a lower CPU priority than the threads that answer requests."""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger("memhub.background")

BACKGROUND_NICE = 10  # added to the thread's nice value: a tenth of a request thread's CPU share when both want it


def lower_thread_priority() -> None:
    """Lower the calling thread's CPU priority, so that embedding, the pipeline, knowledge builds and the proxy's
    capture yield the CPU to request handling on a busy machine, and catch up as soon as it is idle.

    Linux schedules each thread on its own, so the thread's own nice value is raised; other systems have no
    per-thread nice value, and there the thread keeps the process's priority.
    """
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BACKGROUND_NICE))
    except OSError as exc:  # a sandbox that forbids it: the thread keeps its priority
        log.debug("thread priority left as is: %s", exc)
