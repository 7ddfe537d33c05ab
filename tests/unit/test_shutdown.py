"""The stop budget: its clock, waiting for a blocking stop within it, and the setting that sizes it."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from memhub.settings import Settings
from memhub.shutdown import StopClock, finish_within

WAIT_S = 60.0  # a failure bound only


def test_the_clock_starts_once_and_only_runs_down() -> None:
    clock = StopClock(60.0)
    first = clock.remaining()  # starts it
    assert 0 < first <= 60.0
    clock.start()  # a second signal: no new budget
    assert clock.remaining() <= first
    assert StopClock(0.0).remaining() == 0.0


def test_the_requests_drain_is_half_the_budget() -> None:
    long = StopClock(120.0)
    assert long.drain_s == 60.0
    assert not long.drain_over()
    short = StopClock(0.2)
    short.start()
    time.sleep(short.drain_s)  # at least that long: the drain is over, however busy the machine
    assert short.drain_over()


def test_finish_within_waits_for_a_stop_that_ends_and_not_for_one_that_does_not() -> None:
    done: list[str] = []
    assert finish_within(StopClock(WAIT_S), "quick", lambda: done.append("quick"))
    assert finish_within(None, "unbounded", lambda: done.append("unbounded"))
    assert done == ["quick", "unbounded"]

    release = threading.Event()
    try:
        # The budget is spent while the stop is blocked: it is left running, and reported as not finished.
        assert not finish_within(StopClock(0.0), "stuck", lambda: release.wait(WAIT_S))
    finally:
        release.set()


def test_finish_within_reports_a_stop_that_fails(caplog: pytest.LogCaptureFixture) -> None:
    def fail() -> None:
        raise RuntimeError("disk gone")

    with caplog.at_level(logging.ERROR, logger="memhub.shutdown"):
        assert not finish_within(StopClock(WAIT_S), "builds", fail)
    [record] = caplog.records
    assert record.getMessage() == "stopping builds failed"
    assert record.exc_info is not None and str(record.exc_info[1]) == "disk gone"


def test_the_shutdown_timeout_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).shutdown_timeout_seconds == 4.0
    monkeypatch.setenv("MEMHUB_SHUTDOWN_TIMEOUT_SECONDS", "2.5")
    assert Settings(data_dir=tmp_path).shutdown_timeout_seconds == 2.5
    for value, rule in (("0", "greater than 0"), ("601", "less than or equal to 600"), ("soon", "a valid number")):
        monkeypatch.setenv("MEMHUB_SHUTDOWN_TIMEOUT_SECONDS", value)
        with pytest.raises(ValidationError, match=rf"MEMHUB_SHUTDOWN_TIMEOUT_SECONDS\n  Input should be {rule}"):
            Settings(data_dir=tmp_path)
