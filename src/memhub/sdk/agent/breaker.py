"""A circuit breaker, so an unreachable gateway costs the agent nothing instead of a timeout per call."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal

from memhub.sdk._errors import TDAMError

BreakerState = Literal["closed", "open", "half_open"]


def is_outage(exc: BaseException) -> bool:
    """True when an error says the gateway is unhealthy (down, slow, 5xx, garbled), not that the call was bad.

    A 4xx is the caller's mistake and says nothing about the gateway's health, so it never trips the breaker.
    """
    if isinstance(exc, TDAMError):
        code = exc.code
        return code < 0 or 500 <= code < 600 or 50000 <= code < 60000 or code in (408, 429)
    return True


class CircuitBreaker:
    """Closed → open after `threshold` consecutive outages → half-open after `cooldown` → one probe decides."""

    def __init__(self, threshold: int, cooldown: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._threshold = threshold
        self._cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._probing = False
        self.trips = 0

    @property
    def state(self) -> BreakerState:
        """The current state, for stats and logs."""
        with self._lock:
            return self._state_locked()

    def _state_locked(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self._cooldown:
            return "half_open"
        return "open"

    def allow(self) -> bool:
        """Whether a call may go out now; in half-open state only one probe at a time is let through."""
        with self._lock:
            state = self._state_locked()
            if state == "closed":
                return True
            if state == "open" or self._probing:
                return False
            self._probing = True
            return True

    def retry_after(self) -> float:
        """Seconds until the breaker lets a probe through (0 when closed or half-open)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self._cooldown - (self._clock() - self._opened_at))

    def record_success(self) -> None:
        """A call reached a healthy gateway: close the breaker."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._probing = False

    def record_failure(self, exc: BaseException) -> None:
        """A call failed; outages count towards opening, a failed probe re-opens at once."""
        if not is_outage(exc):
            with self._lock:
                self._probing = False
            return
        with self._lock:
            self._failures += 1
            if self._probing or (self._opened_at is None and self._failures >= self._threshold):
                self._opened_at = self._clock()
                self.trips += 1
            self._probing = False
