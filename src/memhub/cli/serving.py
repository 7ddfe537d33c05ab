"""Run an app under uvicorn within the stop budget: the stop signal starts the app's stop clock, requests in
flight get up to half of the budget, and the app's shutdown the rest (memhub.shutdown)."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import uvicorn

from memhub.settings import Settings
from memhub.shutdown import StopClock

STARTUP_FAILURE = 3  # what `uvicorn.run` exits with when the server never started (a port in use …)


class _ClockedServer(uvicorn.Server):
    """uvicorn's server, starting the stop clock when the stop signal arrives."""

    def __init__(self, config: uvicorn.Config, clock: StopClock) -> None:
        super().__init__(config)
        self.clock = clock

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.clock.start()
        super().handle_exit(sig, frame)


def stop_clock(settings: Settings) -> StopClock:
    """The stop clock of a serving process (give it to the app, then to `run`)."""
    return StopClock(settings.shutdown_timeout_seconds)


def run(app: Any, settings: Settings, clock: StopClock) -> None:
    """Serve `app` until a stop signal (uvicorn re-raises it after the shutdown, so this may never return)."""
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        timeout_graceful_shutdown=clock.drain_s,
    )
    server = _ClockedServer(config, clock)
    server.run()
    if not server.started:
        sys.exit(STARTUP_FAILURE)
