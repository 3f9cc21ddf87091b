"""A logger provider for apps that have none, so evaluation results can travel as log records.

Same choice as for traces and metrics (`groundwire.exporters._providers`): OTLP to the choice's
target (`groundwire.exporters._target` resolves it, `OTEL_EXPORTER_OTLP_[LOGS_]PROTOCOL` picking
`grpc` or http/protobuf), behind an `ExportGuard` like the other signals; else `resourceLogs`
lines in the OTLP/JSON-lines file beside the spans and metrics. The standard
`OTEL_LOGS_EXPORTER=none` builds a provider that exports nothing. An app's own logger provider
(global, or passed in) is always used instead.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry._logs import LoggerProvider as ApiLoggerProvider
from opentelemetry._logs import NoOpLoggerProvider, get_logger_provider
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider

from groundwire.exporters._counting import CountingBatchLogRecordProcessor
from groundwire.exporters._jsonl import JsonLinesFile, JsonLinesLogExporter
from groundwire.exporters._providers import BatchedProvider, ExporterChoice
from groundwire.exporters._target import otlp_exporter

__all__ = [
    "app_logger_provider",
    "build_logger_provider",
    "log_exporter",
    "logs_disabled",
]

_LOGS_EXPORTER_VAR = "OTEL_LOGS_EXPORTER"


def app_logger_provider(given: Any = None) -> ApiLoggerProvider | None:
    """The app's logger provider (`given`, else the global one), or None when it has none."""
    provider = given if given is not None else get_logger_provider()
    if isinstance(provider, ProxyLoggerProvider | NoOpLoggerProvider):
        return None
    if not isinstance(provider, ApiLoggerProvider):
        raise TypeError(
            "logger_provider must be an OpenTelemetry LoggerProvider, got "
            f"{type(provider).__name__}"
        )
    return provider


def logs_disabled() -> bool:
    """True when the standard `OTEL_LOGS_EXPORTER` says `none`."""
    return os.environ.get(_LOGS_EXPORTER_VAR, "").strip().lower() == "none"


def log_exporter(choice: ExporterChoice, file: JsonLinesFile | None = None) -> Any:
    """The log record exporter for the choice (None for `none` or `OTEL_LOGS_EXPORTER=none`)."""
    if logs_disabled():
        return None
    if choice.kind == "file":
        if file is None:
            raise ValueError("a file exporter choice needs the shared JsonLinesFile")
        return JsonLinesLogExporter(file)
    if choice.kind == "otlp":
        return otlp_exporter("logs", choice.target)
    return None


build_logger_provider = BatchedProvider(
    "logs",
    LoggerProvider,
    LoggerProvider.add_log_record_processor,
    CountingBatchLogRecordProcessor,
    skip=logs_disabled,
)
"""An SDK logger provider batching records to the chosen exporter (`BatchedProvider`); with
`OTEL_LOGS_EXPORTER=none` it has no processor."""
