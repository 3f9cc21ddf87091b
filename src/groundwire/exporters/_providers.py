"""Tracer and meter providers for groundwire's own telemetry: OTLP or a local file.

`choose_exporter` picks where telemetry goes: OTLP when a target endpoint is given or an
`OTEL_EXPORTER_OTLP_*ENDPOINT` is set, else an OTLP/JSON-lines file, the OpenTelemetry
Collector's file-exporter layout. The OTLP target (endpoint, protocol, headers, TLS, compression,
timeout) is resolved by `groundwire.exporters._target`, the one place that does.

OTLP exporters are wrapped in an `ExportGuard` (`groundwire.exporters._guard`): a circuit
breaker for an unreachable endpoint, the shutdown deadline, and counts of what was not
exported. The providers are built with `shutdown_on_exit=False`: their owner (`configure()`,
`OtlpProviders`) shuts them down itself within its own deadline (the SDK's exit hook has none).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from groundwire._breaker import CircuitBreaker
from groundwire.emit import metric_views
from groundwire.exporters._counting import Counting, CountingBatchSpanProcessor, counting_batch
from groundwire.exporters._guard import (
    ExportGuard,
    GuardedLogExporter,
    GuardedMetricExporter,
    GuardedSpanExporter,
    probe_address,
)
from groundwire.exporters._jsonl import (
    JsonLinesFile,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)
from groundwire.exporters._target import (
    GRPC_PORT,
    HTTP_PORT,
    OtlpTarget,
    otlp_exporter,
    otlp_protocol,
)

__all__ = [
    "DEFAULT_OUTPUT_PATH",
    "EXPORTER_CHOICES",
    "BatchedProvider",
    "ExporterChoice",
    "build_meter_provider",
    "build_tracer_provider",
    "choose_exporter",
    "guard_exporter",
    "guarded_exporter",
    "otlp_endpoint_configured",
    "otlp_protocol",
]

EXPORTER_CHOICES = ("auto", "otlp", "file", "none")
"""Values of `configure(exporter=...)` / `GROUNDWIRE_EXPORTER`."""
DEFAULT_OUTPUT_PATH = Path("groundwire-telemetry.jsonl")
"""Where telemetry goes when no OTLP endpoint is configured (relative to the working directory)."""

P = TypeVar("P")
"""The SDK provider a `BatchedProvider` builds."""

_ENDPOINT_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)


def otlp_endpoint_configured() -> bool:
    """True when any standard OTLP endpoint variable is set."""
    return any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARS)


@dataclass(frozen=True, slots=True)
class ExporterChoice:
    """Where groundwire's own providers send telemetry."""

    kind: str
    """`otlp`, `file` or `none`."""
    path: Path | None = None
    """The file, for `file`."""
    target: OtlpTarget = field(default_factory=OtlpTarget)
    """The OTLP destination, for `otlp` (by default the standard variables say)."""


def choose_exporter(
    exporter: str,
    output_path: str | os.PathLike[str] | None,
    target: OtlpTarget | None = None,
) -> ExporterChoice:
    """Resolve `auto` against `target` and the environment; errors name the bad value."""
    if exporter not in EXPORTER_CHOICES:
        raise ValueError(f"exporter must be one of {list(EXPORTER_CHOICES)}, got {exporter!r}")
    target = target or OtlpTarget()
    if exporter == "auto":
        exporter = "otlp" if target.endpoint or otlp_endpoint_configured() else "file"
    if exporter == "file":
        return ExporterChoice("file", Path(output_path) if output_path else DEFAULT_OUTPUT_PATH)
    return ExporterChoice(exporter, target=target)


def _shared(file: JsonLinesFile | None) -> JsonLinesFile:
    """The JSON-lines file a `file` choice writes to (its providers share it)."""
    if file is None:
        raise ValueError("a file exporter choice needs the shared JsonLinesFile")
    return file


_FILE_EXPORTERS: dict[str, Any] = {
    "traces": JsonLinesSpanExporter,
    "metrics": JsonLinesMetricExporter,
    "logs": JsonLinesLogExporter,
}


def chosen_exporter(
    signal: str, choice: ExporterChoice, file: JsonLinesFile | None = None
) -> tuple[Any, ExportGuard | None]:
    """The exporter of `signal` for the choice and its guard (OTLP only); (None, None) for
    `none`. Every builder of groundwire's own providers picks its exporter here."""
    if choice.kind == "otlp":
        return guarded_exporter(signal, choice.target)
    if choice.kind == "file":
        return _FILE_EXPORTERS[signal](_shared(file)), None
    return None, None


def guarded_exporter(
    signal: str, target: OtlpTarget, breaker: CircuitBreaker | None = None
) -> tuple[Any, ExportGuard]:
    """The SDK's OTLP exporter of `signal` for `target`, behind a guard probing its endpoint
    (with `breaker` when exporters to one endpoint share one: one warning per outage)."""
    inner = otlp_exporter(signal, target)
    grpc = target.protocol_for(signal) == "grpc"
    endpoint = str(getattr(inner, "_endpoint", "") or "")
    address = probe_address(endpoint, default_port=GRPC_PORT if grpc else HTTP_PORT)
    shown = f"{endpoint} (gRPC)" if grpc else endpoint
    guard = ExportGuard(f"OTLP {signal} endpoint {shown}", address, breaker)
    guard.endpoint = endpoint
    return guard_exporter(signal, inner, guard), guard


def guard_exporter(signal: str, inner: Any, guard: ExportGuard) -> Any:
    """`inner`, the exporter of `signal`, behind `guard`."""
    return _GUARDED[signal](inner, guard)


_GUARDED: dict[str, Any] = {
    "traces": GuardedSpanExporter,
    "metrics": GuardedMetricExporter,
    "logs": GuardedLogExporter,
}


class BatchedProvider(Generic[P, Counting]):
    """Builds groundwire's own SDK provider of one batched signal (traces or logs): a provider
    of `provider_type` with a counting batch processor (`kind`, given to it by `add`) over the
    chosen exporter of `signal`.

    One builder serves both signals, so the tracer and logger providers are made the same way
    (`shutdown_on_exit=False`, the guard's count tied to the processor); `skip` says when the
    signal is switched off (the provider is then built without a processor).
    """

    def __init__(
        self,
        signal: str,
        provider_type: Callable[..., P],
        add: Callable[[P, Counting], None],
        kind: type[Counting],
        skip: Callable[[], bool] = lambda: False,
    ) -> None:
        self.signal = signal
        self.provider_type = provider_type
        self.add: Callable[[P, Counting], None] = add
        self.kind: type[Counting] = kind
        self.skip = skip

    def __call__(
        self,
        resource: Resource,
        choice: ExporterChoice,
        file: JsonLinesFile | None = None,
        *,
        guards: list[ExportGuard] | None = None,
        **batch_options: Any,
    ) -> P:
        """The provider batching to the chosen exporter (`batch_options` go to the batch
        processor; nothing for `none`); the OTLP exporter's guard is appended to `guards`."""
        provider = self.provider_type(resource=resource, shutdown_on_exit=False)
        if self.skip():
            return provider
        exporter, guard = chosen_exporter(self.signal, choice, file)
        if exporter is not None:
            batch = counting_batch(self.kind, exporter, guard, guards, **batch_options)
            self.add(provider, batch)
        return provider


build_tracer_provider = BatchedProvider(
    "traces", TracerProvider, TracerProvider.add_span_processor, CountingBatchSpanProcessor
)
"""An SDK tracer provider batching spans to the chosen exporter (`BatchedProvider`)."""


def build_meter_provider(
    resource: Resource,
    choice: ExporterChoice,
    file: JsonLinesFile | None = None,
    extra_readers: tuple[MetricReader, ...] = (),
    *,
    guards: list[ExportGuard] | None = None,
    interval_millis: float | None = None,
) -> tuple[MeterProvider, MetricReader | None]:
    """An SDK meter provider with explicit-bucket views, exporting periodically (and any extras).

    Returns the provider and its push reader (None for `none`): flush that one, not the provider,
    since flushing a pull reader such as Prometheus' queues a stale copy for the next scrape.
    The export interval is `interval_millis`, else the standard `OTEL_METRIC_EXPORT_INTERVAL`
    (milliseconds, default 60 s).
    """
    readers: list[MetricReader] = list(extra_readers)
    exporter: MetricExporter | None
    exporter, guard = chosen_exporter("metrics", choice, file)
    if guard is not None and guards is not None:
        guards.append(guard)
    push = None
    if exporter is not None:
        push = PeriodicExportingMetricReader(exporter, export_interval_millis=interval_millis)
        readers.append(push)
    provider = MeterProvider(
        resource=resource, metric_readers=readers, views=metric_views(), shutdown_on_exit=False
    )
    return provider, push
