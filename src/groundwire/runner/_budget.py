"""The judge token budget: LLM-judge tokens allowed per rolling hour.

Usage is known only after a judge answers, so a budget can be overshot by the calls in flight
when it runs out; after that, judge evaluations are skipped (and counted) until old usage leaves
the window. Memory is one entry per minute.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["TokenBudget"]

_WINDOW_S = 3600.0
_BUCKET_S = 60.0


class TokenBudget:
    """Tokens spent in the last hour against a limit; thread-safe."""

    def __init__(self, tokens_per_hour: int, *, clock: Callable[[], float] = time.monotonic):
        if isinstance(tokens_per_hour, bool) or not isinstance(tokens_per_hour, int):
            raise TypeError(f"judge_token_budget must be a whole number, got {tokens_per_hour!r}")
        if tokens_per_hour < 0:
            raise ValueError(f"judge_token_budget must be 0 or more, got {tokens_per_hour}")
        self.limit = tokens_per_hour
        self._clock = clock
        self._buckets: deque[list[float]] = deque()  # [bucket start, tokens]
        self._total = 0.0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        """Forget usage older than the window (lock held)."""
        while self._buckets and self._buckets[0][0] <= now - _WINDOW_S:
            self._total -= self._buckets.popleft()[1]

    def used(self) -> int:
        """Tokens spent in the last hour."""
        with self._lock:
            self._expire(self._clock())
            return int(self._total)

    def allows(self) -> bool:
        """True while the last hour's usage is under the limit."""
        return self.used() < self.limit

    def spend(self, tokens: int) -> None:
        """Record `tokens` spent now."""
        if tokens <= 0:
            return
        with self._lock:
            now = self._clock()
            self._expire(now)
            start = now - (now % _BUCKET_S)
            if self._buckets and self._buckets[-1][0] == start:
                self._buckets[-1][1] += tokens
            else:
                self._buckets.append([start, float(tokens)])
            self._total += tokens
