"""Exporters that never hold the app: a circuit breaker for an unreachable endpoint, a deadline
for shutdown, and counts of what was exported and what was not.

`GuardedSpanExporter`, `GuardedMetricExporter` and `GuardedLogExporter` wrap the SDK's OTLP
exporters in every provider groundwire builds (`configure()`, `serve`, `rescore --export-otlp`).
While the endpoint answers, they add nothing but a counter. When an export
fails and the endpoint refuses TCP connections (a Collector being redeployed, a wrong network
policy, a laptop offline), the breaker (`groundwire._breaker`) opens: later batches are dropped at
once and counted instead of each waiting through the exporter's full retry series, one warning
says so, and every few seconds one batch probes the endpoint (a TCP connect first, then the real
export), so export resumes by itself when the Collector is back. During shutdown the guard knows
the deadline: the exporter's own timeout is capped to what is left, and nothing is sent after it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from groundwire._breaker import CLOSED, CircuitBreaker

__all__ = [
    "EXPORT_BREAKER_COOLDOWN_S",
    "ExportGuard",
    "GuardedLogExporter",
    "GuardedMetricExporter",
    "GuardedSpanExporter",
    "probe_address",
]

logger = logging.getLogger("groundwire")

EXPORT_BREAKER_COOLDOWN_S = 5.0
"""Seconds between probes of an unreachable OTLP endpoint."""
_PROBE_TIMEOUT_S = 1.0
_DEFAULT_PORTS = {"http": 80, "https": 443}


def probe_address(endpoint: str, *, default_port: int) -> tuple[str, int] | None:
    """The host and port a TCP probe of `endpoint` connects to; None when a proxy stands in
    the way (the proxy, not the endpoint, would answer) or the endpoint cannot be parsed."""
    text = endpoint if "://" in endpoint else f"//{endpoint}"
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    proxied = parts.scheme in _DEFAULT_PORTS and urllib.request.getproxies().get(parts.scheme)
    if proxied and not urllib.request.proxy_bypass(host):
        return None
    return host, port or _DEFAULT_PORTS.get(parts.scheme, default_port)


def _reachable(address: tuple[str, int], timeout_s: float) -> bool:
    """True when a TCP connection to `address` opens within `timeout_s`."""
    try:
        with socket.create_connection(address, timeout=max(timeout_s, 0.01)):
            return True
    except OSError:
        return False


def _cap_timeout(exporter: Any, seconds: float) -> None:
    """Cap an OTLP exporter's per-export timeout (its retry series) to `seconds`, where the
    SDK keeps it (1.45: `_client._timeout` over HTTP, `_timeout` over gRPC); best effort: the
    shutdown deadline does not depend on it (the call runs where it can be abandoned)."""
    for owner in (getattr(exporter, "_client", None), exporter):
        current = getattr(owner, "_timeout", None)
        if owner is None:
            continue
        if isinstance(current, int | float) and not isinstance(current, bool):
            with contextlib.suppress(AttributeError, TypeError):
                owner._timeout = max(min(float(current), seconds), 0.001)
            return


class ExportGuard:
    """The breaker, the deadline and the counts of one exporter; thread-safe."""

    def __init__(
        self, name: str, address: tuple[str, int] | None, breaker: CircuitBreaker | None = None
    ) -> None:
        self.name = name
        self.endpoint = ""
        """Where the exporter sends, for messages (empty when unknown)."""
        self.address = address
        """Where a TCP probe connects (None: no probe; every failed export counts)."""
        self.breaker = breaker or CircuitBreaker(
            name, threshold=1, cooldown_s=EXPORT_BREAKER_COOLDOWN_S
        )
        self._lock = threading.Lock()
        self.exported = 0
        """Items (spans, metric batches) the endpoint accepted."""
        self.not_exported = 0
        """Items given to the exporter that did not reach the endpoint (failed or skipped)."""
        self.deadline: float | None = None
        """`time.monotonic()` after which nothing is sent (set by shutdown)."""
        self.given: Callable[[], int] | None = None
        """Items handed to the batch processor in front of the exporter, when it counts them."""
        self.kind = _kind(name)
        """What the counts count, for log lines."""
        self.observer: Callable[[str, int, str | None], None] | None = None
        """Told every outcome as it happens: (`exported`, `failed` or `skipped`, items, why
        or None), e.g. for a report of what an endpoint accepted."""
        self.last_failure = ""
        """Why the endpoint last counted as down (for reports of what was skipped)."""
        self.abort: Callable[[], None] | None = None
        """Stops the wrapped exporter's retry waits (its `shutdown`), set by the wrapper."""

    def _fail(self, reason: str) -> None:
        """The endpoint failed for `reason`: tell the breaker, keep the reason."""
        self.last_failure = reason
        self.breaker.failure(reason)

    def close_by(self, deadline: float) -> None:
        """Shutdown begins: nothing is sent after `deadline`, and an endpoint that refuses
        connections now is not waited for (an export in its retry series is stopped)."""
        self.deadline = deadline
        if self.address is None:
            return
        if not _reachable(self.address, min(_PROBE_TIMEOUT_S, deadline - time.monotonic())):
            self._fail(f"connection to {self.address[0]}:{self.address[1]} failed")
            self.stop()

    def stop(self) -> None:
        """Stop the wrapped exporter's retry waits now (shutdown's deadline passed)."""
        if self.abort is not None:
            try:
                self.abort()
            except Exception:
                logger.debug("could not stop the exporter", exc_info=True)

    def unsent(self) -> int:
        """Items that have not reached the endpoint: handed over minus exported when the batch
        processor counts (covers its queue and its drops), else the failed and skipped ones."""
        if self.given is not None:
            return max(self.given() - self.exported, 0)
        return self.not_exported

    def admit(self) -> bool:
        """True when an export may be attempted now (the breaker, the probe and the deadline)."""
        remaining = None if self.deadline is None else self.deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return False
        if not self.breaker.allow():
            return False
        probing = self.breaker.state != CLOSED or remaining is not None
        if probing and self.address is not None:
            timeout = _PROBE_TIMEOUT_S if remaining is None else min(_PROBE_TIMEOUT_S, remaining)
            if not _reachable(self.address, timeout):
                self._fail(f"connection to {self.address[0]}:{self.address[1]} failed")
                return False
        return True

    def remaining_s(self) -> float | None:
        """Seconds left before the deadline (None when there is none)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def settle(self, ok: bool, count: int, why: str | None = None) -> None:
        """Record an export's result; a failure against a refusing endpoint opens the breaker."""
        with self._lock:
            if ok:
                self.exported += count
            else:
                self.not_exported += count
        if self.observer is not None:
            self.observer("exported" if ok else "failed", count, why)
        if ok:
            self.breaker.success()
        elif self.address is None or not _reachable(self.address, _PROBE_TIMEOUT_S):
            self._fail("export failed and the endpoint refuses connections")
        else:
            self.breaker.success()  # it answered (an error status): reachable, not an outage

    def skip(self, count: int) -> None:
        """Count items dropped without an attempt (breaker open or deadline passed)."""
        with self._lock:
            self.not_exported += count
        if self.observer is not None:
            remaining = self.remaining_s()
            why = (
                "not sent: the shutdown deadline had passed"
                if remaining is not None and remaining <= 0
                else f"not sent: {self.name} unreachable ({self.last_failure or 'circuit open'})"
            )
            self.observer("skipped", count, why)


def _kind(name: str) -> str:
    """What a guard named `name` counts."""
    if "traces" in name:
        return "spans"
    return "log records" if "logs" in name else "metric exports"


def _why(error: Exception) -> str:
    """An exporter's exception, for a report."""
    return f"{type(error).__name__}: {error}"[:300]


_R = TypeVar("_R")


def _guarded_export(
    guard: ExportGuard,
    inner: Any,
    count: int,
    what: str,
    send: Callable[[float | None], _R],
    success: _R,
    failure: _R,
) -> _R:
    """One export through `guard`, for every signal: refused and counted as skipped while the
    endpoint is known to be down or the deadline passed; else `send(remaining seconds)` runs with
    the exporter's timeout capped to the deadline, and its outcome is counted (an exception is a
    failure with its reason)."""
    if not guard.admit():
        guard.skip(count)
        return failure
    remaining = guard.remaining_s()
    if remaining is not None:
        _cap_timeout(inner, remaining)
    why = None
    try:
        result = send(remaining)
    except Exception as error:
        logger.debug("%s export raised", what, exc_info=True)
        result, why = failure, _why(error)
    guard.settle(result is success, count, why)
    return result


class _Guarded:
    """What every guarded exporter shares: the wrapped exporter, its guard, a one-time shutdown
    (the guard's `abort` shuts it, which also stops a retry wait in progress)."""

    def __init__(self, inner: Any, guard: ExportGuard) -> None:
        self.inner = inner
        self.guard = guard
        self._shut = False
        guard.abort = self.shutdown

    def shutdown(self, *args: Any, **kwargs: Any) -> None:
        """Shut the wrapped exporter once; nothing is sent after it."""
        if not self._shut:
            self._shut = True
            self.inner.shutdown(*args, **kwargs)
        self.guard.deadline = self.guard.deadline or time.monotonic()  # nothing more to send


class _GuardedBatches(_Guarded):
    """Span and log record exporters: a batch is a sequence, counted item by item."""

    what = ""
    """What one item is, for the debug log of an export that raised."""
    results: tuple[Any, Any] = (None, None)
    """The signal's success and failure results."""

    def export(self, batch: Sequence[Any]) -> Any:
        """Export unless the endpoint is known to be down or the deadline passed."""
        success, failure = self.results
        return _guarded_export(
            self.guard,
            self.inner,
            len(batch),
            self.what,
            lambda _remaining: self.inner.export(batch),
            success,
            failure,
        )

    def shutdown(self) -> None:
        """Shut the wrapped exporter once (it also stops any retry wait in progress)."""
        super().shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the wrapped exporter."""
        return bool(self.inner.force_flush(timeout_millis))


class GuardedSpanExporter(_GuardedBatches, SpanExporter):
    """A span exporter behind an `ExportGuard`."""

    what = "span"
    results = (SpanExportResult.SUCCESS, SpanExportResult.FAILURE)


class GuardedMetricExporter(_Guarded, MetricExporter):
    """A metric exporter behind an `ExportGuard` (counts are export batches, not points)."""

    inner: MetricExporter

    def __init__(self, inner: MetricExporter, guard: ExportGuard) -> None:
        MetricExporter.__init__(
            self,
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        _Guarded.__init__(self, inner, guard)

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export unless the endpoint is known to be down or the deadline passed."""

        def send(remaining: float | None) -> MetricExportResult:
            capped = timeout_millis
            if remaining is not None:
                capped = min(timeout_millis, max(remaining, 0.001) * 1000)
            return self.inner.export(metrics_data, timeout_millis=capped, **kwargs)

        return _guarded_export(
            self.guard,
            self.inner,
            1,
            "metric",
            send,
            MetricExportResult.SUCCESS,
            MetricExportResult.FAILURE,
        )

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the wrapped exporter."""
        return self.inner.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut the wrapped exporter once."""
        super().shutdown(timeout_millis=timeout_millis, **kwargs)


class GuardedLogExporter(_GuardedBatches, LogRecordExporter):
    """A log record exporter behind an `ExportGuard` (counts are log records)."""

    what = "log record"
    results = (LogRecordExportResult.SUCCESS, LogRecordExportResult.FAILURE)
