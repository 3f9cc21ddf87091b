"""Every way groundwire's own telemetry leaves the process: OTLP and OTLP/JSON-lines files.

- `OtlpTarget`: an OTLP destination (endpoint, protocol, headers, TLS CA, compression,
  timeout), from arguments or the standard `OTEL_EXPORTER_OTLP_*` variables, resolved one way
  for every signal; `otlp_exporter` makes the OTel SDK's exporter for one signal from it.
- `build_otlp_providers`: tracer, meter and logger providers to one target, each exporter behind
  an `ExportGuard` (breaker, counts) and shut down by a deadline (`OtlpProviders.shutdown`);
  what `groundwire serve` and `rescore --export-otlp` use.
- `choose_exporter`, `build_tracer_provider`, `build_meter_provider`, `build_logger_provider`:
  what `groundwire.configure()` uses (OTLP, a file, or nothing), with the same guarded exporters.
- `JsonLinesSpanExporter`, `JsonLinesMetricExporter` and `JsonLinesLogExporter` write the
  OpenTelemetry Collector's file layout when no OTLP endpoint is configured; `to_otlp_json` /
  `from_otlp_json` convert single requests.
- `span_destinations` / `same_server`: where a tracer provider's spans go, and whether that is a
  given server (the check behind `configure(phoenix_annotations=...)`).
"""

from __future__ import annotations

from groundwire.exporters._counting import CountingBatchSpanProcessor
from groundwire.exporters._endpoints import same_server, span_destinations
from groundwire.exporters._guard import ExportGuard
from groundwire.exporters._jsonl import (
    JsonLinesFile,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)
from groundwire.exporters._logs import (
    app_logger_provider,
    build_logger_provider,
    log_exporter,
    logs_disabled,
)
from groundwire.exporters._otlp import OtlpProviders, build_otlp_providers
from groundwire.exporters._otlp_json import from_otlp_json, to_otlp_json
from groundwire.exporters._providers import (
    ExporterChoice,
    build_meter_provider,
    build_tracer_provider,
    choose_exporter,
    otlp_endpoint_configured,
)
from groundwire.exporters._target import OtlpTarget, grpc_target, otlp_exporter, otlp_protocol

__all__ = [
    "CountingBatchSpanProcessor",
    "ExportGuard",
    "ExporterChoice",
    "JsonLinesFile",
    "JsonLinesLogExporter",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
    "OtlpProviders",
    "OtlpTarget",
    "app_logger_provider",
    "build_logger_provider",
    "build_meter_provider",
    "build_otlp_providers",
    "build_tracer_provider",
    "choose_exporter",
    "from_otlp_json",
    "grpc_target",
    "log_exporter",
    "logs_disabled",
    "otlp_endpoint_configured",
    "otlp_exporter",
    "otlp_protocol",
    "same_server",
    "span_destinations",
    "to_otlp_json",
]
