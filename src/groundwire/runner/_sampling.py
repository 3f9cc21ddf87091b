"""Which turns get scored: a ratio decided by the trace id, so a trace is all in or all out.

The rule is OpenTelemetry's `TraceIdRatioBased`: the low 64 bits of the trace id below
`rate * 2**64`. The same rule at a lower rate picks a subset, so an evaluator sampled at 10% scores
a subset of the traces scored at 50%, and their scores can be compared on the same traces.
"""

from __future__ import annotations

import random

__all__ = ["check_rate", "trace_sampled"]

_LOW_64 = (1 << 64) - 1


def check_rate(name: str, rate: object) -> float:
    """`rate` as a float in [0, 1], or a ValueError naming `name`."""
    if isinstance(rate, bool) or not isinstance(rate, int | float):
        raise TypeError(f"{name} must be a number in [0, 1], got {rate!r}")
    value = float(rate)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {rate!r}")
    return value


def trace_sampled(trace_id: str | None, rate: float) -> bool:
    """True when the trace (32 hex digits) falls inside `rate`; no trace id: a coin toss."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    bound = round(rate * (_LOW_64 + 1))
    if trace_id is None:
        return random.random() < rate
    return (int(trace_id, 16) & _LOW_64) < bound
