"""A logger provider for apps that have none, so evaluation results can travel as log records.

Same choice as for traces and metrics (`groundwire.exporters._providers`): OTLP when an
`OTEL_EXPORTER_OTLP_*ENDPOINT` is set, over http/protobuf unless
`OTEL_EXPORTER_OTLP_[LOGS_]PROTOCOL` says `grpc` (the exporter reads the endpoint, headers, timeout
and compression variables itself); else `resourceLogs` lines in the OTLP/JSON-lines file beside
the spans and metrics. The standard `OTEL_LOGS_EXPORTER=none` builds a provider that exports
nothing. An app's own logger provider (global, or passed in) is always used instead.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry._logs import LoggerProvider as ApiLoggerProvider
from opentelemetry._logs import NoOpLoggerProvider, get_logger_provider
from opentelemetry._logs._internal import ProxyLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource

from groundwire.exporters._jsonl import JsonLinesFile, JsonLinesLogExporter
from groundwire.exporters._providers import ExporterChoice, otlp_protocol

__all__ = ["app_logger_provider", "build_logger_provider", "log_exporter"]

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


def _logs_disabled() -> bool:
    """True when the standard `OTEL_LOGS_EXPORTER` says `none`."""
    return os.environ.get(_LOGS_EXPORTER_VAR, "").strip().lower() == "none"


def log_exporter(choice: ExporterChoice, file: JsonLinesFile | None = None) -> Any:
    """The log record exporter for the choice (None for `none` or `OTEL_LOGS_EXPORTER=none`)."""
    if _logs_disabled():
        return None
    if choice.kind == "file":
        if file is None:
            raise ValueError("a file exporter choice needs the shared JsonLinesFile")
        return JsonLinesLogExporter(file)
    if choice.kind == "otlp":
        if otlp_protocol("logs") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                OTLPLogExporter as GrpcLogExporter,
            )

            return GrpcLogExporter()
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

        return OTLPLogExporter()
    return None


def build_logger_provider(
    resource: Resource, choice: ExporterChoice, file: JsonLinesFile | None = None
) -> LoggerProvider:
    """An SDK logger provider batching records to the chosen exporter."""
    provider = LoggerProvider(resource=resource)
    exporter = log_exporter(choice, file)
    if exporter is not None:
        provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    return provider
