"""The interpreter's thread switch interval while groundwire runs in the app.

A thread that wakes (the app's model answered) waits for the GIL until the running thread is
asked to drop it, after Python's switch interval (5 ms). When groundwire's evaluation threads are
busy that wait lands on the app's turns, more than once per turn; 1 ms bounds it. Measured in
docs/online.md ("The latency tail"). `configure()` applies it and `shutdown()` undoes it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_SWITCH_INTERVAL_S", "PYTHON_SWITCH_INTERVAL_S", "SwitchInterval"]

PYTHON_SWITCH_INTERVAL_S: Final = 0.005
"""CPython's own default (`sys.getswitchinterval()` in a process that never changed it)."""
DEFAULT_SWITCH_INTERVAL_S: Final = 0.001
"""What `configure()` sets unless told otherwise (0 leaves the interpreter's value alone)."""
MAX_SWITCH_INTERVAL_S: Final = 1.0
"""Longer intervals would let one thread starve the others for seconds: refused."""
_SAME: Final = 1e-9
"""The interval is kept in microseconds: values closer than this are the same setting."""


def check_switch_interval(value: object, source: str) -> float:
    """`value` as seconds (0 = leave alone), or a ValueError/TypeError naming `source`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{source} must be a number of seconds, got {value!r}")
    seconds = float(value)
    if not math.isfinite(seconds) or not 0.0 <= seconds <= MAX_SWITCH_INTERVAL_S:
        raise ValueError(
            f"{source} must be 0 (leave the interpreter's interval alone) or a number of seconds "
            f"up to {MAX_SWITCH_INTERVAL_S:g}, got {value!r}"
        )
    if 0.0 < seconds < 1e-6:
        raise ValueError(f"{source} must be at least 1e-06 s (one microsecond), got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class SwitchInterval:
    """A switch interval groundwire set, and the one it replaced (restored by `restore`)."""

    previous: float
    applied: float

    @classmethod
    def apply(cls, seconds: float, *, explicit: bool) -> SwitchInterval | None:
        """Set the interval; None when nothing was changed.

        Nothing changes for 0, nor by default (`explicit` False) when the app already chose an
        interval of its own: that choice is the app's to make.
        """
        current = sys.getswitchinterval()
        if seconds == 0.0:
            return None
        if not explicit and abs(current - PYTHON_SWITCH_INTERVAL_S) > _SAME:
            return None
        sys.setswitchinterval(seconds)
        return cls(previous=current, applied=sys.getswitchinterval())

    def restore(self) -> None:
        """Put the earlier interval back, unless someone changed it since (theirs stands)."""
        if abs(sys.getswitchinterval() - self.applied) <= _SAME:
            sys.setswitchinterval(self.previous)
