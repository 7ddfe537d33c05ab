"""Holding a knowledge build where a test needs it, for the build queues both kinds share."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from memhub.knowledge.builds import ResourceBuilds


def hold_first_run(builds: ResourceBuilds[Any, Any], monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold the first build `builds` runs from its first step until the returned event is set, so under a short
    time limit it can only end by that limit; later builds run as usual."""
    started, release = threading.Event(), threading.Event()
    run = builds.run

    def first_held(job: Any, deadline: Any) -> Any:
        if not started.is_set():
            started.set()
            release.wait(60)
        return run(job, deadline)

    monkeypatch.setattr(builds, "run", first_held)
    return release
