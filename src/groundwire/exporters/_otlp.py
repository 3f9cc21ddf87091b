"""Tracer, meter and logger providers exporting to one OTLP target, guarded, counted, and shut
down by a deadline that holds whatever the endpoint does.

`build_otlp_providers(target, resource)` is how `groundwire serve` and `rescore --export-otlp`
get their providers (`configure()` uses the same exporters through `build_tracer_provider` and
its siblings, since it may also write a file or use the app's providers). Every exporter sits
behind an `ExportGuard`: an unreachable endpoint opens its breaker instead of holding each batch
through the SDK's retry series, and what was not exported is counted. `OtlpProviders.shutdown`
flushes and closes everything within its deadline: the guards learn the deadline first (an
endpoint that refuses connections is not waited for), the calls that take no timeout run where
the deadline can abandon them, and a provider that fails to close (the SDK's `MeterProvider`
raises when a reader missed the deadline) is logged in one line and reported, never raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from groundwire._breaker import CLOSED
from groundwire._deadline import run_until
from groundwire.emit import metric_views
from groundwire.exporters._counting import (
    CountingBatchLogRecordProcessor,
    CountingBatchSpanProcessor,
    counting_batch,
)
from groundwire.exporters._guard import ExportGuard
from groundwire.exporters._providers import guard_exporter, guarded_exporter
from groundwire.exporters._target import OtlpTarget

__all__ = ["OtlpProviders", "build_otlp_providers"]

logger = logging.getLogger("groundwire")


@dataclass
class OtlpProviders:
    """Providers exporting to `target`; `for_resource` adds ones with another resource that
    share the span and log record queues; `shutdown` closes them all by a deadline."""

    target: OtlpTarget
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider | None
    span_processor: CountingBatchSpanProcessor
    log_processor: CountingBatchLogRecordProcessor | None
    guards: list[ExportGuard]
    """Every exporter's guard: breakers and counts."""
    interval_millis: float | None = None
    """Export interval of the metric readers (None: `OTEL_METRIC_EXPORT_INTERVAL`)."""
    meter_providers: list[MeterProvider] = field(default_factory=list)
    """Meter providers made by `for_resource` (each has a reader of its own)."""
    _closed: bool = False

    def for_resource(
        self, resource: Resource
    ) -> tuple[TracerProvider, MeterProvider, LoggerProvider | None]:
        """Providers with `resource` exporting like these: spans and log records through the
        same processors (closed by ours, so these are never shut on their own), metrics through
        a guarded reader of their own (a meter provider has one resource) whose breaker is our
        metric exporter's (one outage, one warning, however many resources)."""
        tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        tracer_provider.add_span_processor(self.span_processor)
        logger_provider = None
        if self.log_processor is not None:
            logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
            logger_provider.add_log_record_processor(self.log_processor)
        ours = next((g for g in self.guards if g.kind == "metric exports"), None)
        breaker = ours.breaker if ours is not None else None
        exporter, guard = guarded_exporter("metrics", self.target, breaker)
        self.guards.append(guard)
        meter_provider = _meter_provider(resource, exporter, self.interval_millis)
        self.meter_providers.append(meter_provider)
        return tracer_provider, meter_provider, logger_provider

    def not_exported(self) -> dict[str, int]:
        """What has not reached the endpoint, by what the guards count (spans, log records,
        metric exports); only kinds with something missing."""
        out: dict[str, int] = {}
        for guard in self.guards:
            missing = guard.unsent()
            if missing:
                out[guard.kind] = out.get(guard.kind, 0) + missing
        return out

    def shutdown(self, timeout_s: float) -> bool:
        """Flush and close every provider within `timeout_s`; True when all closed in time,
        without failing, and everything reached the endpoint. Never raises."""
        if self._closed:
            return True
        self._closed = True
        deadline = time.monotonic() + max(0.0, timeout_s)
        for guard in self.guards:
            guard.close_by(deadline)
        spans = self.tracer_provider
        calls = [("shut tracer provider", _closing(spans.force_flush, spans.shutdown, deadline))]
        if self.logger_provider is not None:
            logs = self.logger_provider
            calls.append(
                ("shut logger provider", _closing(logs.force_flush, logs.shutdown, deadline))
            )
        for index, meters in enumerate([self.meter_provider, *self.meter_providers]):
            calls.append((f"shut meter provider {index}", _meter_closing(meters, deadline)))
        outcomes = run_until(calls, deadline)
        if not all(outcome.done for outcome in outcomes):
            for guard in self.guards:
                guard.stop()  # abandoned exports stop their retry waits too
        missing = self.not_exported()
        unfinished = [outcome.name for outcome in outcomes if not outcome.done]
        if missing or unfinished:
            down = sorted({guard.name for guard in self.guards if guard.breaker.state != CLOSED})
            logger.warning(
                "telemetry not exported at shutdown (deadline %.1f s): %s%s%s",
                timeout_s,
                ", ".join(f"{count} {kind}" for kind, count in missing.items()) or "nothing",
                f"; still running, abandoned: {', '.join(unfinished)}" if unfinished else "",
                f"; unreachable: {', '.join(down)}" if down else "",
            )
        return all(outcome.ok for outcome in outcomes) and not missing


def _millis(deadline: float) -> int:
    """Whole milliseconds left before `deadline`, at least 1."""
    return max(1, int((deadline - time.monotonic()) * 1000))


def _closing(
    flush: Callable[[int], object], close: Callable[[], object], deadline: float
) -> Callable[[], bool]:
    """Flush with what is left of the deadline, then close; a failure is one log line."""

    def call() -> bool:
        try:
            flushed = flush(_millis(deadline))
            close()
        except Exception as error:
            logger.warning(
                "closing a telemetry provider failed: %s: %s", type(error).__name__, error
            )
            logger.debug("closing a telemetry provider failed", exc_info=True)
            return False
        return flushed is not False

    return call


def _meter_closing(provider: MeterProvider, deadline: float) -> Callable[[], bool]:
    """Close a meter provider (its readers export their last points) within the deadline; the
    SDK raises when a reader did not get to run before it: one log line, not a traceback."""

    def call() -> bool:
        try:
            provider.shutdown(timeout_millis=_millis(deadline))
        except Exception as error:
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            logger.warning("closing a meter provider: %s", first)
            logger.debug("closing a meter provider failed", exc_info=True)
            return False
        return True

    return call


def _meter_provider(
    resource: Resource,
    exporter: Any,
    interval_millis: float | None,
    extra_readers: tuple[MetricReader, ...] = (),
) -> MeterProvider:
    """A meter provider pushing to `exporter` periodically (plus `extra_readers`)."""
    push = PeriodicExportingMetricReader(exporter, export_interval_millis=interval_millis)
    return MeterProvider(
        resource=resource,
        metric_readers=[push, *extra_readers],
        views=metric_views(),
        shutdown_on_exit=False,
    )


def build_otlp_providers(
    target: OtlpTarget,
    resource: Resource,
    *,
    logs: bool = True,
    extra_readers: tuple[MetricReader, ...] = (),
    interval_millis: float | None = None,
    batch_delay_millis: int | None = None,
    exporters: Mapping[str, Any] | None = None,
) -> OtlpProviders:
    """Tracer, meter and (unless not `logs`) logger providers exporting to `target`.

    `extra_readers` join the meter provider (a Prometheus reader); `batch_delay_millis` is how
    long spans and log records wait for a batch (None: the SDK's `OTEL_BSP_SCHEDULE_DELAY` /
    `OTEL_BLRP_SCHEDULE_DELAY`). `exporters` (by signal: `traces`, `metrics`, `logs`) replace
    the OTLP exporters of those signals (a file, a test's in-memory exporter), guarded and
    counted like them but never probed (they have no address).
    """
    given = dict(exporters or {})
    guards: list[ExportGuard] = []

    def exporter(signal: str) -> tuple[Any, ExportGuard]:
        """The given exporter of `signal` behind a guard, else a guarded OTLP one; the guard
        is listed in `guards`."""
        inner = given.get(signal)
        if inner is None:
            made, guard = guarded_exporter(signal, target)
        else:
            guard = ExportGuard(f"{signal} exporter {type(inner).__name__}", None)
            made = guard_exporter(signal, inner, guard)
        guards.append(guard)
        return made, guard

    options: dict[str, Any] = {}
    if batch_delay_millis is not None:
        options["schedule_delay_millis"] = batch_delay_millis
    span_processor = counting_batch(CountingBatchSpanProcessor, *exporter("traces"), **options)
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    tracer_provider.add_span_processor(span_processor)
    logger_provider = log_processor = None
    if logs:
        log_processor = counting_batch(
            CountingBatchLogRecordProcessor, *exporter("logs"), **options
        )
        logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        logger_provider.add_log_record_processor(log_processor)
    meter_exporter, _ = exporter("metrics")
    meter_provider = _meter_provider(resource, meter_exporter, interval_millis, extra_readers)
    return OtlpProviders(
        target,
        tracer_provider,
        meter_provider,
        logger_provider,
        span_processor,
        log_processor,
        guards,
        interval_millis,
    )
