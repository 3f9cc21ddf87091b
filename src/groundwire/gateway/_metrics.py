"""The gateway's own metrics: OTel instruments (exported downstream by OTLP and on `/metrics`).

Plain integer tallies are kept beside the instruments so that `/healthz`, the shutdown summary
and the tests can read exact counts without a metric reader.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from groundwire import semconv
from groundwire._version import __version__

__all__ = ["GatewayMetrics"]

_MAX_LAGS = 10_000
"""Lag samples held between two reports of the scoring process (more are not recorded)."""


class GatewayMetrics:
    """Counts what the gateway received, forwarded, retried, dropped and refused."""

    def __init__(
        self, meter_provider: MeterProvider | None, *, scope: str = "groundwire.gateway"
    ) -> None:
        """Create the instruments on `meter_provider` (None: tallies only) under `scope`."""
        self._lock = threading.Lock()
        self.tallies: Counter[str] = Counter()
        """Exact counts by `kind:signal[:reason]` (e.g. `dropped:traces:expired`)."""
        self._gauges: dict[str, Callable[[], float]] = {}
        self._lags: list[float] = []
        self._meter = None
        self._counters: dict[str, Any] = {}
        """The OTel counters by metric name (none with tallies only)."""
        if meter_provider is None:
            return
        meter = meter_provider.get_meter(scope, __version__)
        self._meter = meter
        self._counters = {
            name: meter.create_counter(name, unit=unit, description=description)
            for name, unit, description in (
                (semconv.METRIC_GATEWAY_RECEIVED, "{item}", "Items accepted."),
                (semconv.METRIC_GATEWAY_FORWARDED, "{item}", "Items delivered."),
                (semconv.METRIC_GATEWAY_RETRIED, "{item}", "Items sent again."),
                (
                    semconv.METRIC_GATEWAY_DROPPED,
                    "{item}",
                    "Accepted items that never reached downstream.",
                ),
                (
                    semconv.METRIC_GATEWAY_REFUSED,
                    "{request}",
                    "Requests answered with an error status.",
                ),
                (semconv.METRIC_GATEWAY_LATE_SPANS, "{span}", "Spans after scoring."),
                (
                    semconv.METRIC_GATEWAY_EVICTED_TRACES,
                    "{trace}",
                    "Traces closed early at the open-trace or memory bound.",
                ),
                (
                    semconv.METRIC_GATEWAY_NOT_SCORED,
                    "{span}",
                    "Spans forwarded but left out of scoring.",
                ),
                (semconv.METRIC_GATEWAY_REPLAYED, "{request}", "Requests replayed from disk."),
                (semconv.METRIC_GATEWAY_CORRUPT, "{request}", "Damaged queue records skipped."),
                (
                    semconv.METRIC_GATEWAY_QUEUED_RESULTS,
                    "{item}",
                    "Evaluation-result items committed to the persistent queue.",
                ),
                (semconv.METRIC_GATEWAY_SCORED_TURNS, "{turn}", "Turns scored."),
            )
        }
        self._lag = meter.create_histogram(
            semconv.METRIC_GATEWAY_SCORING_LAG,
            unit="s",
            description="First span of a trace received to its turns handed to the runner.",
            explicit_bucket_boundaries_advisory=[0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300],
        )
        for name, unit, description in (
            (semconv.METRIC_GATEWAY_QUEUE_SIZE, "{request}", "Requests in the forward buffer."),
            (semconv.METRIC_GATEWAY_QUEUE_BYTES, "By", "Bytes in the forward buffer."),
            (semconv.METRIC_GATEWAY_QUEUE_CAPACITY, "By", "Size limit of the forward buffer."),
            (semconv.METRIC_GATEWAY_OPEN_TRACES, "{trace}", "Traces being grouped."),
            (semconv.METRIC_GATEWAY_DISK_BYTES, "By", "Bytes in the persistent queue."),
            (semconv.METRIC_GATEWAY_DISK_RECORDS, "{request}", "Requests in the persistent queue."),
        ):
            meter.create_observable_gauge(
                name, callbacks=[self._observer(name)], unit=unit, description=description
            )

    def _observer(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            read = self._gauges.get(name)
            return [] if read is None else [Observation(read())]

        return observe

    def watch(self, name: str, read: Callable[[], float]) -> None:
        """Report `read()` as the gauge `name` at each collection."""
        self._gauges[name] = read

    def gauge(self, name: str) -> float:
        """The current value of a watched gauge (0 when not watched)."""
        read = self._gauges.get(name)
        return 0.0 if read is None else float(read())

    def _tally(self, key: str, amount: int) -> None:
        with self._lock:
            self.tallies[key] += amount

    def _count(
        self, key: str, amount: int, metric: str, attributes: dict[str, Any] | None = None
    ) -> None:
        """Tally `amount` under `key` and add it to the counter `metric` (when there are
        instruments)."""
        self._tally(key, amount)
        counter = self._counters.get(metric)
        if counter is not None:
            counter.add(amount, attributes)

    def count(self, key: str) -> int:
        """An exact tally, e.g. `count("forwarded:traces")`."""
        with self._lock:
            return self.tallies[key]

    def snapshot(self) -> dict[str, int]:
        """All tallies."""
        with self._lock:
            return dict(self.tallies)

    def _attrs(self, signal: str, reason: str | None = None) -> dict[str, Any]:
        attrs = {semconv.GATEWAY_SIGNAL: signal}
        if reason is not None:
            attrs[semconv.GATEWAY_REASON] = reason
        return attrs

    def received(self, signal: str, items: int) -> None:
        """Items accepted into the forward buffer."""
        self._count(
            f"received:{signal}", items, semconv.METRIC_GATEWAY_RECEIVED, self._attrs(signal)
        )

    def forwarded(self, signal: str, items: int) -> None:
        """Items acknowledged by downstream."""
        self._count(
            f"forwarded:{signal}", items, semconv.METRIC_GATEWAY_FORWARDED, self._attrs(signal)
        )

    def retried(self, signal: str, items: int) -> None:
        """Items about to be sent again."""
        self._count(f"retried:{signal}", items, semconv.METRIC_GATEWAY_RETRIED, self._attrs(signal))

    def dropped(self, signal: str, items: int, reason: str) -> None:
        """Accepted items given up (`expired`, `rejected_downstream`, `shutdown`)."""
        self._tally(f"dropped:{signal}:{reason}", items)
        self._count(
            f"dropped:{signal}", items, semconv.METRIC_GATEWAY_DROPPED, self._attrs(signal, reason)
        )

    def refused(self, signal: str, reason: str) -> None:
        """A request answered with an error (`buffer_full`, `malformed`, `too_large`, ...)."""
        self._count(
            f"refused:{signal}:{reason}",
            1,
            semconv.METRIC_GATEWAY_REFUSED,
            self._attrs(signal, reason),
        )

    def late_spans(self, count: int) -> None:
        """Spans of an already-scored trace."""
        self._count("late_spans", count, semconv.METRIC_GATEWAY_LATE_SPANS)

    def not_scored(self, spans: int, reason: str) -> None:
        """Spans forwarded but not scored (`scoring_queue_full`, `unreadable`, `shutdown`)."""
        self._count(
            f"not_scored:{reason}",
            spans,
            semconv.METRIC_GATEWAY_NOT_SCORED,
            {semconv.GATEWAY_REASON: reason},
        )

    def evicted(self, traces: int) -> None:
        """Traces given up at the open-trace or memory bound."""
        self._count("evicted_traces", traces, semconv.METRIC_GATEWAY_EVICTED_TRACES)

    def replayed(self, requests: int) -> None:
        """Requests read back from the persistent queue at start."""
        self._count("queue_replayed", requests, semconv.METRIC_GATEWAY_REPLAYED)

    def corrupt(self, requests: int) -> None:
        """Damaged records found (and skipped) in the persistent queue."""
        self._count("queue_corrupt", requests, semconv.METRIC_GATEWAY_CORRUPT)

    def queued_results(self, signal: str, items: int) -> None:
        """Evaluation-result items (spans, log records) committed to the persistent queue: not
        `received` (no client sent them), then forwarded, retried or dropped like the rest."""
        self._count(
            f"queue_results:{signal}",
            items,
            semconv.METRIC_GATEWAY_QUEUED_RESULTS,
            self._attrs(signal),
        )

    def scored_turns(self, turns: int) -> None:
        """Turns whose evaluation finished (from the scoring process's runner counts)."""
        self._count("scored_turns", turns, semconv.METRIC_GATEWAY_SCORED_TURNS)

    def scoring_lag(self, seconds: float) -> None:
        """One trace handed to the runner `seconds` after its first span arrived."""
        self._tally("scored_traces", 1)
        if self._meter is not None:
            self._lag.record(seconds)
        else:
            with self._lock:
                if len(self._lags) < _MAX_LAGS:
                    self._lags.append(seconds)

    def take_lags(self) -> list[float]:
        """Lag samples kept since the last call (tallies-only metrics: the scoring process)."""
        with self._lock:
            lags, self._lags = self._lags, []
        return lags

    def absorb(self, before: dict[str, int], after: dict[str, int], lags: list[float]) -> None:
        """Record what the scoring process counted between two of its reports."""
        for key, value in after.items():
            delta = value - before.get(key, 0)
            if delta <= 0:
                continue
            if key == "late_spans":
                self.late_spans(delta)
            elif key == "evicted_traces":
                self.evicted(delta)
            elif key.startswith("not_scored:"):
                self.not_scored(delta, key.split(":", 1)[1])
        for seconds in lags:
            self.scoring_lag(seconds)
