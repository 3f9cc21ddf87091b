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
from collections.abc import Iterable
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from groundwire import semconv
from groundwire.emit import Emitter, metric_views, resolve_events
from groundwire.exporters._providers import otlp_protocol
from groundwire.offline._results import TurnResult

__all__ = ["OtlpExport"]

logger = logging.getLogger("groundwire.offline")

_DEFAULT_SERVICE = "groundwire-rescore"


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
        self.tracer_provider = TracerProvider(resource=resource)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
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
            self.meter_provider.shutdown()
