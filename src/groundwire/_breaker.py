"""A circuit breaker: stop calling a dependency that cannot be reached, probe it, recover by itself.

Shared by the judge client (an LLM server) and groundwire's OTLP exporters (a Collector). While
the breaker is *closed* every call goes through; `threshold` consecutive failures open it. While
*open*, calls are refused at once (the caller fails fast and counts what it gave up) until the
cool-down has passed; then exactly one call is let through as a probe (*half-open*). A probe that
succeeds closes the breaker; one that fails opens it again for another cool-down. The outage is
logged once, when the breaker opens, and once more when it closes, with the number of calls it
refused meanwhile: never a line per refused call.

Only failures of reaching the dependency count (connection refused, DNS, TLS, timeout): an answer
of any kind, even an error status, proves the dependency is there, so it counts as a success.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "CircuitBreaker"]

logger = logging.getLogger("groundwire")

CLOSED: Final = "closed"
"""Calls go through."""
OPEN: Final = "open"
"""Calls are refused until the cool-down has passed."""
HALF_OPEN: Final = "half_open"
"""One probe call is in flight; the others are refused."""


class CircuitBreaker:
    """Closed, open or half-open; thread-safe; every method is cheap and never raises."""

    def __init__(
        self,
        name: str,
        *,
        threshold: int = 5,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ValueError(f"threshold must be a whole number of at least 1, got {threshold!r}")
        if (
            isinstance(cooldown_s, bool)
            or not isinstance(cooldown_s, int | float)
            or cooldown_s < 0
        ):
            raise ValueError(f"cooldown_s must be a number of seconds >= 0, got {cooldown_s!r}")
        self.name = name
        """What is being called, for the log lines (e.g. `judge http://host:8000/v1`)."""
        self.threshold = threshold
        self.cooldown_s = float(cooldown_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._state: str = CLOSED
        self._failures = 0
        self._opened_at = 0.0
        self._probe_started = 0.0
        self._refused = 0
        self._refused_total = 0
        self._outage_started = 0.0
        self._last_error = ""
        self.opened = 0
        """How many times the breaker opened (outages noticed)."""

    @property
    def state(self) -> str:
        """`closed`, `open` or `half_open`."""
        with self._lock:
            return self._state

    @property
    def refused(self) -> int:
        """Calls refused while open, over the breaker's life."""
        with self._lock:
            return self._refused_total

    def allow(self) -> bool:
        """True when a call may go ahead (closed, or the one probe after a cool-down)."""
        with self._lock:
            if self._state == CLOSED:
                return True
            now = self._clock()
            if self._state == OPEN and now - self._opened_at >= self.cooldown_s:
                self._state, self._probe_started = HALF_OPEN, now
                return True
            if self._state == HALF_OPEN and now - self._probe_started >= max(self.cooldown_s, 1.0):
                self._probe_started = now  # the probe never reported back: let another one try
                return True
            self._refused += 1
            self._refused_total += 1
            return False

    def success(self) -> None:
        """The dependency answered: close the breaker (and say so if it was open)."""
        with self._lock:
            self._failures = 0
            if self._state == CLOSED:
                return
            refused, down_s = self._refused, self._clock() - self._outage_started
            self._state, self._refused = CLOSED, 0
        logger.warning(
            "%s is reachable again after %.0f s; %d calls were skipped while it was down",
            self.name,
            down_s,
            refused,
        )

    def abandon(self) -> None:
        """A call ended without a verdict (cancelled): if it was the probe, let the next call
        probe at once instead of waiting for the stale-probe timeout."""
        with self._lock:
            if self._state == HALF_OPEN:
                self._state, self._opened_at = OPEN, self._clock() - self.cooldown_s

    def failure(self, error: BaseException | str | None = None) -> None:
        """The dependency could not be reached: count it; open the breaker at the threshold."""
        description = _describe(error)
        with self._lock:
            now = self._clock()
            if self._state == HALF_OPEN:
                self._state, self._opened_at = OPEN, now  # the probe failed: another cool-down
                return
            if self._state == OPEN:
                return
            self._failures += 1
            if self._failures < self.threshold:
                return
            self._state, self._opened_at, self._outage_started = OPEN, now, now
            self._refused = 0
            self._last_error = description
            self.opened += 1
        logger.warning(
            "%s is unreachable (%d failures in a row%s); calls to it are skipped and counted, "
            "with a new attempt every %.0f s, until it answers",
            self.name,
            self.threshold,
            f", last: {description}" if description else "",
            self.cooldown_s,
        )


def _describe(error: BaseException | str | None) -> str:
    """`Type: message` for an exception, the text itself for a string."""
    if error is None:
        return ""
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"
