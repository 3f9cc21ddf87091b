"""Tracer and meter providers for apps that have none: OTLP when configured, else a local file.

The choice follows the standard variables: an `OTEL_EXPORTER_OTLP_*ENDPOINT` means OTLP, over
http/protobuf unless `OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]PROTOCOL` says `grpc`; the exporters
themselves read the endpoint, headers, timeout and compression variables. With no endpoint the
telemetry goes to an OTLP/JSON-lines file, the OpenTelemetry Collector's file-exporter layout.

OTLP exporters are wrapped in an `ExportGuard` (`groundwire.exporters._guard`): a circuit
breaker for an unreachable endpoint, the shutdown deadline, and counts of what was not
exported. The providers are built with `shutdown_on_exit=False`: `groundwire.configure()`
shuts them down itself, at exit too, within its own deadline (the SDK's hook has none).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from groundwire.emit import metric_views
from groundwire.exporters._guard import (
    ExportGuard,
    GuardedMetricExporter,
    GuardedSpanExporter,
    probe_address,
)
from groundwire.exporters._jsonl import (
    JsonLinesFile,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)

__all__ = [
    "DEFAULT_OUTPUT_PATH",
    "EXPORTER_CHOICES",
    "CountingBatchSpanProcessor",
    "ExporterChoice",
    "build_meter_provider",
    "build_tracer_provider",
    "choose_exporter",
    "otlp_endpoint_configured",
    "otlp_protocol",
]

EXPORTER_CHOICES = ("auto", "otlp", "file", "none")
"""Values of `configure(exporter=...)` / `GROUNDWIRE_EXPORTER`."""
DEFAULT_OUTPUT_PATH = Path("groundwire-telemetry.jsonl")
"""Where telemetry goes when no OTLP endpoint is configured (relative to the working directory)."""

_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)
_PROTOCOLS = ("http/protobuf", "grpc")


def otlp_endpoint_configured() -> bool:
    """True when any standard OTLP endpoint variable is set."""
    return any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARS)


def otlp_protocol(signal: str) -> str:
    """`http/protobuf` or `grpc` for `traces`, `metrics` or `logs`, from the standard variables."""
    specific = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "").strip()
    protocol = specific or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
    protocol = protocol or "http/protobuf"
    if protocol not in _PROTOCOLS:
        raise ValueError(
            f"OTLP protocol {protocol!r} (OTEL_EXPORTER_OTLP_[{signal.upper()}_]PROTOCOL) is not "
            f"supported; use one of {list(_PROTOCOLS)}"
        )
    return protocol


@dataclass(frozen=True, slots=True)
class ExporterChoice:
    """Where groundwire's own providers send telemetry."""

    kind: str
    """`otlp`, `file` or `none`."""
    path: Path | None = None
    """The file, for `file`."""


def choose_exporter(exporter: str, output_path: str | os.PathLike[str] | None) -> ExporterChoice:
    """Resolve `auto` against the environment; errors name the bad value."""
    if exporter not in EXPORTER_CHOICES:
        raise ValueError(f"exporter must be one of {list(EXPORTER_CHOICES)}, got {exporter!r}")
    if exporter == "auto":
        exporter = "otlp" if otlp_endpoint_configured() else "file"
    if exporter == "file":
        return ExporterChoice("file", Path(output_path) if output_path else DEFAULT_OUTPUT_PATH)
    return ExporterChoice(exporter)


_GRPC_PORT = 4317
_HTTP_PORT = 4318


def _guard(signal: str, exporter: object, grpc: bool) -> ExportGuard:
    """The guard of one OTLP exporter, probing the endpoint it sends to."""
    endpoint = str(getattr(exporter, "_endpoint", "") or "")
    address = probe_address(endpoint, default_port=_GRPC_PORT if grpc else _HTTP_PORT)
    shown = endpoint if "://" in endpoint else f"{endpoint} (gRPC)"
    return ExportGuard(f"OTLP {signal} endpoint {shown}", address)


class CountingBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's BatchSpanProcessor, counting the sampled spans it was given, so that shutdown
    can say how many never reached the endpoint (given minus exported)."""

    def __init__(self, exporter: SpanExporter, **options: object) -> None:
        super().__init__(exporter, **options)  # type: ignore[arg-type]
        self.ended = 0

    def on_end(self, span: ReadableSpan) -> None:
        """Count the span (when it will be exported), then queue it as the SDK does."""
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self.ended += 1
        super().on_end(span)


def _span_exporter(choice: ExporterChoice, file: JsonLinesFile | None) -> SpanExporter | None:
    """The span exporter for the choice (None for `none`)."""
    if choice.kind == "file":
        assert file is not None
        return JsonLinesSpanExporter(file)
    if choice.kind == "otlp":
        if otlp_protocol("traces") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )

            return GrpcSpanExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    return None


def _metric_exporter(choice: ExporterChoice, file: JsonLinesFile | None) -> MetricExporter | None:
    """The metric exporter for the choice (None for `none`)."""
    if choice.kind == "file":
        assert file is not None
        return JsonLinesMetricExporter(file)
    if choice.kind == "otlp":
        if otlp_protocol("metrics") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcMetricExporter,
            )

            return GrpcMetricExporter()
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    return None


def build_tracer_provider(
    resource: Resource,
    choice: ExporterChoice,
    file: JsonLinesFile | None = None,
    *,
    guards: list[ExportGuard] | None = None,
) -> TracerProvider:
    """An SDK tracer provider batching spans to the chosen exporter; the OTLP exporter's guard
    is appended to `guards`."""
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    exporter = _span_exporter(choice, file)
    if exporter is None:
        return provider
    guard = None
    if choice.kind == "otlp":
        guard = _guard("traces", exporter, otlp_protocol("traces") == "grpc")
        exporter = GuardedSpanExporter(exporter, guard)
    batch = CountingBatchSpanProcessor(exporter)
    provider.add_span_processor(batch)
    if guard is not None:
        guard.given = lambda: batch.ended
        if guards is not None:
            guards.append(guard)
    return provider


def build_meter_provider(
    resource: Resource,
    choice: ExporterChoice,
    file: JsonLinesFile | None = None,
    extra_readers: tuple[MetricReader, ...] = (),
    *,
    guards: list[ExportGuard] | None = None,
) -> tuple[MeterProvider, MetricReader | None]:
    """An SDK meter provider with explicit-bucket views, exporting periodically (and any extras).

    Returns the provider and its push reader (None for `none`): flush that one, not the provider,
    since flushing a pull reader such as Prometheus' queues a stale copy for the next scrape.
    The export interval is the standard `OTEL_METRIC_EXPORT_INTERVAL` (milliseconds, default 60 s).
    """
    readers: list[MetricReader] = list(extra_readers)
    exporter = _metric_exporter(choice, file)
    if exporter is not None and choice.kind == "otlp":
        guard = _guard("metrics", exporter, otlp_protocol("metrics") == "grpc")
        exporter = GuardedMetricExporter(exporter, guard)
        if guards is not None:
            guards.append(guard)
    push = PeriodicExportingMetricReader(exporter) if exporter is not None else None
    if push is not None:
        readers.append(push)
    provider = MeterProvider(
        resource=resource, metric_readers=readers, views=metric_views(), shutdown_on_exit=False
    )
    return provider, push
