"""A provider client's clock for tests: time moves only when the client sleeps or a test says so."""

from __future__ import annotations

from memhub.provider_http import Clock


class FakeClock:
    """The time a call's budget is measured in: it moves only when the client sleeps or a test says so.

    The budget rules are checked against it, so no assertion depends on how busy the machine is. A
    scripted reply can advance it to say how long that attempt took at the provider.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> Clock:
        return Clock(lambda: self.now, self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
