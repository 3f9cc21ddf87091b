"""What a test OTLP receiver has collected: the thread-safe store both receivers feed.

`OtlpHttpReceiver` and `OtlpGrpcReceiver` differ only in how requests arrive; each decoded request
lands here (`_keep`, decoded by its signal's decoder), is counted per signal (`_count`), and is
read back by the test (`spans`, `metric_points`, `log_records`, `wait_for`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Self

from groundwire.testing._otlp_decode import (
    ReceivedLogRecord,
    ReceivedMetricPoint,
    ReceivedSpan,
    decode_log_records,
    decode_metric_points,
    decode_spans,
)

__all__ = ["Collector"]


_DECODERS: dict[str, Callable[[Any], list[Any]]] = {
    "traces": decode_spans,
    "metrics": decode_metric_points,
    "logs": decode_log_records,
}
"""Each signal's decoder: an `Export*ServiceRequest` to the records a test asserts on."""


class Collector:
    """What a receiver has collected so far, by signal (`traces`, `metrics`, `logs`);
    thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._kept: dict[str, list[Any]] = {signal: [] for signal in _DECODERS}
        self._requests: dict[str, int] = dict.fromkeys(_DECODERS, 0)

    @property
    def trace_requests(self) -> int:
        """Trace export requests received (including ones answered with an error)."""
        return self._requests["traces"]

    @property
    def metric_requests(self) -> int:
        """Metric export requests received (including ones answered with an error)."""
        return self._requests["metrics"]

    @property
    def log_requests(self) -> int:
        """Log export requests received (including ones answered with an error)."""
        return self._requests["logs"]

    def _keep(self, signal: str, request: Any) -> None:
        """Decode and keep the telemetry of one request of `signal`."""
        records = _DECODERS[signal](request)
        with self._lock:
            self._kept[signal].extend(records)
            self._lock.notify_all()

    def _count(self, signal: str) -> None:
        """Count one export request of `signal`."""
        with self._lock:
            self._requests[signal] += 1
            self._lock.notify_all()

    def spans(self, name: str | None = None) -> list[ReceivedSpan]:
        """Spans received so far (optionally only those called `name`), in arrival order."""
        with self._lock:
            return [s for s in self._kept["traces"] if name is None or s.name == name]

    def metric_points(self, name: str | None = None) -> list[ReceivedMetricPoint]:
        """Metric data points received so far (optionally of one metric)."""
        with self._lock:
            return [p for p in self._kept["metrics"] if name is None or p.name == name]

    def log_records(self, event_name: str | None = None) -> list[ReceivedLogRecord]:
        """Log records received so far (optionally only events called `event_name`)."""
        with self._lock:
            kept = self._kept["logs"]
            return [r for r in kept if event_name is None or r.event_name == event_name]

    def wait_for(self, predicate: Callable[[Self], bool], timeout_s: float = 10.0) -> bool:
        """Wait until `predicate(self)` holds; False when `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(min(remaining, 0.05))
        return True

    def clear(self) -> None:
        """Forget everything received so far."""
        with self._lock:
            for kept in self._kept.values():
                kept.clear()
