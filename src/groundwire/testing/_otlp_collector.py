"""What a test OTLP receiver has collected: the thread-safe store both receivers feed.

`OtlpHttpReceiver` and `OtlpGrpcReceiver` differ only in how requests arrive; each decoded request
lands here (`_add_traces`, `_add_metrics`, `_add_logs`), is counted per signal (`_count`), and is
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


class Collector:
    """What a receiver has collected so far; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._points: list[ReceivedMetricPoint] = []
        self._logs: list[ReceivedLogRecord] = []
        self.log_requests = 0
        """Log export requests received (including ones answered with an error)."""
        self.trace_requests = 0
        """Trace export requests received (including ones answered with an error)."""
        self.metric_requests = 0
        """Metric export requests received (including ones answered with an error)."""

    def _add_traces(self, request: Any) -> None:
        """Decode and keep the spans of one request."""
        spans = decode_spans(request)
        with self._lock:
            self._spans.extend(spans)
            self._lock.notify_all()

    def _add_metrics(self, request: Any) -> None:
        """Decode and keep the metric points of one request."""
        points = decode_metric_points(request)
        with self._lock:
            self._points.extend(points)
            self._lock.notify_all()

    def _add_logs(self, request: Any) -> None:
        """Decode and keep the log records of one request."""
        records = decode_log_records(request)
        with self._lock:
            self._logs.extend(records)
            self._lock.notify_all()

    def _count(self, signal: str) -> None:
        """Count one export request of `signal`."""
        with self._lock:
            if signal == "traces":
                self.trace_requests += 1
            elif signal == "logs":
                self.log_requests += 1
            else:
                self.metric_requests += 1
            self._lock.notify_all()

    def spans(self, name: str | None = None) -> list[ReceivedSpan]:
        """Spans received so far (optionally only those called `name`), in arrival order."""
        with self._lock:
            return [s for s in self._spans if name is None or s.name == name]

    def metric_points(self, name: str | None = None) -> list[ReceivedMetricPoint]:
        """Metric data points received so far (optionally of one metric)."""
        with self._lock:
            return [p for p in self._points if name is None or p.name == name]

    def log_records(self, event_name: str | None = None) -> list[ReceivedLogRecord]:
        """Log records received so far (optionally only events called `event_name`)."""
        with self._lock:
            return [r for r in self._logs if event_name is None or r.event_name == event_name]

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
            self._spans.clear()
            self._points.clear()
            self._logs.clear()
