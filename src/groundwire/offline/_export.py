"""`--export-otlp`: re-scored results as evaluation spans under the original turns, and metrics.

Each turn's scores travel on one EVALUATOR carrier span (`groundwire.evaluation.mode=offline`),
a child of the turn's root span in the original trace with one link to it, so Jaeger or Tempo
show it under the original request; as `gen_ai.evaluation.result` log records on the turn's root
span (unless `GROUNDWIRE_EVENTS=span`; see `groundwire.emit`); and as points of the groundwire
metric instruments. Spans, logs and metrics go over OTLP to `endpoint` (an OTLP/HTTP base URL
such as `http://collector:4318`, or a gRPC `host:port` when `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`),
or, without one, wherever the standard `OTEL_EXPORTER_OTLP_*` variables say.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from groundwire import semconv
from groundwire.emit import Emitter, metric_views, resolve_events
from groundwire.exporters._providers import otlp_protocol
from groundwire.offline._results import TurnResult

__all__ = ["ExportReport", "OtlpExport"]

logger = logging.getLogger("groundwire.offline")

_DEFAULT_SERVICE = "groundwire-rescore"


_EXPORTER_LOGGER: Final = "opentelemetry.exporter.otlp"
"""Where the OTLP exporters log why an export failed (captured for the report)."""


@dataclass(slots=True)
class ExportReport:
    """What `--export-otlp` delivered: spans the endpoint accepted, and why the rest were not."""

    endpoint: str
    emitted: int = 0
    """Carrier spans created (one per turn with ids and scores)."""
    accepted: int = 0
    """Spans in export calls the endpoint answered with success."""
    rejected: int = 0
    """Spans in export calls that failed (refused, unreachable, an error status, a timeout)."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Why exports failed: the exporter's message -> spans it concerned."""

    @property
    def not_exported(self) -> int:
        """Spans emitted but not accepted: rejected, or dropped before an export was tried."""
        return self.emitted - self.accepted

    @property
    def failed(self) -> bool:
        """True when spans were emitted and the endpoint accepted none of them."""
        return self.emitted > 0 and self.accepted == 0

    def lines(self) -> list[str]:
        """The report's summary lines (each number a counter above)."""
        out = [f"exported {self.accepted} of {self.emitted} evaluation spans to {self.endpoint}"]
        if self.not_exported:
            why = "; ".join(f"{reason} ({count})" for reason, count in self.reasons.items())
            dropped = self.not_exported - self.rejected
            if dropped > 0:
                why = "; ".join(filter(None, [why, f"never sent, export queue full ({dropped})"]))
            out.append(f"not exported: {self.not_exported} evaluation spans: {why or 'unknown'}")
        return out


class _ReasonLog(logging.Handler):
    """Keeps the OTLP exporters' failure messages (first line each) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Remember a failure message."""
        try:
            text = record.getMessage().splitlines()[0][:300]
        except Exception:  # a malformed log call must not break the export
            text = str(record.msg)[:300]
        self.messages.append(text)
        del self.messages[1:-1]

    def reason(self) -> str | None:
        """The last message, with the first (usually the cause) when they differ."""
        if not self.messages:
            return None
        first, last = self.messages[0], self.messages[-1]
        return last if first == last else f"{last} (first: {first})"


class _CountingExporter(SpanExporter):
    """Wraps the real span exporter and counts what each export call delivered."""

    def __init__(self, inner: SpanExporter, report: ExportReport, reasons: _ReasonLog) -> None:
        self._inner = inner
        self._report = report
        self._reasons = reasons
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through the real exporter; count the spans as accepted or rejected."""
        self._reasons.messages.clear()
        try:
            result = self._inner.export(spans)
            reason = None
        except Exception as error:  # an exporter bug must not lose the count
            result = SpanExportResult.FAILURE
            reason = f"{type(error).__name__}: {error}"
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self._report.accepted += len(spans)
            else:
                self._report.rejected += len(spans)
                why = reason or self._reasons.reason() or "the exporter reported a failure"
                self._report.reasons[why] += len(spans)
        return result

    def shutdown(self) -> None:
        """Shut the real exporter down."""
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the real exporter."""
        return self._inner.force_flush(timeout_millis)


def _exporters(endpoint: str | None) -> tuple[Any, Any]:
    """OTLP span and metric exporters for `endpoint` (None: the standard variables decide)."""
    grpc = otlp_protocol("traces") == "grpc"
    if grpc:
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        if endpoint is None:
            return OTLPSpanExporter(), OTLPMetricExporter()
        insecure = endpoint.startswith("http://") or "://" not in endpoint
        return (
            OTLPSpanExporter(endpoint=endpoint, insecure=insecure),
            OTLPMetricExporter(endpoint=endpoint, insecure=insecure),
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    if endpoint is None:
        return HttpSpanExporter(), HttpMetricExporter()
    base = endpoint.rstrip("/")
    for suffix in ("/v1/traces", "/v1/metrics"):
        base = base.removesuffix(suffix)
    if "://" not in base:
        base = f"http://{base}"
    return (
        HttpSpanExporter(endpoint=f"{base}/v1/traces"),
        HttpMetricExporter(endpoint=f"{base}/v1/metrics"),
    )


def _log_exporter(endpoint: str | None) -> Any:
    """The OTLP log exporter for `endpoint` (None: the standard variables decide)."""
    if otlp_protocol("logs") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        if endpoint is None:
            return OTLPLogExporter()
        insecure = endpoint.startswith("http://") or "://" not in endpoint
        return OTLPLogExporter(endpoint=endpoint, insecure=insecure)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    if endpoint is None:
        return HttpLogExporter()
    base = endpoint.rstrip("/").removesuffix("/v1/logs")
    for suffix in ("/v1/traces", "/v1/metrics"):
        base = base.removesuffix(suffix)
    if "://" not in base:
        base = f"http://{base}"
    return HttpLogExporter(endpoint=f"{base}/v1/logs")


class OtlpExport:
    """Sends re-scored turns as carrier spans and metric points; `close` flushes everything."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        service_name: str | None = None,
        span_exporter: Any = None,
        metric_exporter: Any = None,
        log_exporter: Any = None,
        events: str | None = None,
        evaluators: Iterable[object] = (),
    ) -> None:
        if span_exporter is None or metric_exporter is None:
            default_spans, default_metrics = _exporters(endpoint or None)
            span_exporter = span_exporter or default_spans
            metric_exporter = metric_exporter or default_metrics
        name = service_name or os.environ.get("OTEL_SERVICE_NAME") or _DEFAULT_SERVICE
        resource = Resource.create({semconv.SERVICE_NAME: name})
        self.report = ExportReport(endpoint=_describe(endpoint, span_exporter))
        """What the endpoint accepted (complete after `close`)."""
        self._log = _ReasonLog()
        self._logger = logging.getLogger(_EXPORTER_LOGGER)
        self._propagate = self._logger.propagate
        self._logger.addHandler(self._log)
        self._logger.propagate = False
        counting = _CountingExporter(span_exporter, self.report, self._log)
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(counting))
        self._reader = PeriodicExportingMetricReader(metric_exporter)
        self.meter_provider = MeterProvider(
            resource=resource, metric_readers=[self._reader], views=metric_views()
        )
        self.logger_provider: LoggerProvider | None = None
        events = resolve_events(events)
        if events != semconv.EVENTS_SPAN:
            self.logger_provider = LoggerProvider(resource=resource)
            exporter = log_exporter or _log_exporter(endpoint or None)
            self.logger_provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        self.emitter = Emitter(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            logger_provider=self.logger_provider,
            events=events,
            evaluators=evaluators,
        )
        self.spans = 0
        """Carrier spans emitted."""
        self.log_records = 0
        """`gen_ai.evaluation.result` log records emitted."""

    def send(self, result: TurnResult) -> None:
        """Emit one turn's carrier span and metric points (turns without ids get metrics only)."""
        scores = list(result.scores.values())
        turn = result.turn
        if turn.trace_id and turn.span_id and scores:
            try:
                target = (turn.trace_id, turn.span_id)
                self.emitter.emit_span(target, scores, mode=semconv.EVALUATION_MODE_OFFLINE)
                self.spans += 1
                self.log_records += len(scores) if self.emitter.log_events else 0
                self.report.emitted += 1
            except ValueError as error:
                logger.warning("no evaluation span for turn %s: %s", turn.span_id, error)
        for score in scores:
            self.emitter.record(score, result.durations.get(score.name))

    def close(self) -> None:
        """Flush and shut down the providers (exports whatever is pending)."""
        try:
            self.tracer_provider.shutdown()
            if self.logger_provider is not None:
                self.logger_provider.shutdown()
        finally:
            try:
                self.meter_provider.shutdown()
            finally:
                self._logger.removeHandler(self._log)
                self._logger.propagate = self._propagate


def _describe(endpoint: str | None, exporter: Any) -> str:
    """Where spans go, for messages: the endpoint given, else the exporter's own."""
    if endpoint:
        return endpoint
    return str(getattr(exporter, "_endpoint", None) or "the OTEL_EXPORTER_OTLP_* endpoint")
