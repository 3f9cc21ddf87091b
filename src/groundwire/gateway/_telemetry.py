"""The gateway's own providers: evaluation results and its metrics, to the forward downstream.

The tracer provider carries the evaluation carrier spans; the logger provider the log-based
`gen_ai.evaluation.result` events (OTEP 4430); the meter provider carries the evaluation metrics
and the gateway's own, pushed by OTLP every `metrics_interval_s` and, with `prometheus-client`
installed, also served on `/metrics`. All export with the OTel SDK's OTLP exporters to the same
endpoint, headers, compression and CA as the forwarded telemetry.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from groundwire import semconv
from groundwire.emit import metric_views
from groundwire.gateway._config import GatewayConfig

__all__ = ["Providers", "ServiceProviders", "build_providers", "grpc_target"]

logger = logging.getLogger("groundwire.gateway")

_SPAN_BATCH_DELAY_MS = 500
"""Carrier spans wait at most this long for a batch (the SDK's 5 s default would add lag);
`OTEL_BSP_SCHEDULE_DELAY` overrides it."""


def grpc_target(forward: str) -> tuple[str, bool]:
    """`host:port` and whether TLS is used, from a `grpc://` or `grpcs://` endpoint."""
    parts = urlsplit(forward)
    host = parts.hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port or 4317}", parts.scheme == "grpcs"


@dataclass(frozen=True)
class ServiceProviders:
    """One app's providers (its `service.name` as the resource)."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider


@dataclass
class Providers:
    """What `build_providers` made; `shutdown` flushes and closes them all.

    `for_service` gives providers whose resource is an app's (`service.name`), so the results
    of that app's turns show under the app: they share the span and log record processors (one
    export queue each) and have a metric reader of their own (a meter provider has one resource).
    """

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    prometheus: bool
    """True when a Prometheus reader feeds `/metrics`."""
    config: GatewayConfig | None = None
    span_processor: BatchSpanProcessor | None = None
    logger_provider: LoggerProvider | None = None
    log_processor: BatchLogRecordProcessor | None = None
    services: dict[str, ServiceProviders] = field(default_factory=dict)
    """Providers made by `for_service`, by service name."""

    def for_service(self, service: str) -> ServiceProviders:
        """Tracer, meter and logger providers with `service.name=service`, exporting like ours."""
        made = self.services.get(service)
        if made is not None:
            return made
        if self.config is None or self.span_processor is None or self.log_processor is None:
            raise ValueError("these providers were built without per-service support")
        resource = Resource.create({semconv.SERVICE_NAME: service})
        # Not shut down on their own (that would close the shared processors): ours close them.
        tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        tracer_provider.add_span_processor(self.span_processor)
        logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        logger_provider.add_log_record_processor(self.log_processor)
        reader = PeriodicExportingMetricReader(
            _exporters(self.config, spans=False)[1],
            export_interval_millis=self.config.metrics_interval_s * 1000,
        )
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[reader], views=metric_views(), shutdown_on_exit=False
        )
        made = ServiceProviders(tracer_provider, meter_provider, logger_provider)
        self.services[service] = made
        return made

    def shutdown(self, timeout_s: float) -> None:
        """Flush the last spans, log records and metric points downstream, then close."""
        deadline = time.monotonic() + timeout_s
        self.tracer_provider.force_flush(int(timeout_s * 1000))
        self.tracer_provider.shutdown()
        if self.logger_provider is not None:
            remaining = max(0.001, deadline - time.monotonic())
            self.logger_provider.force_flush(int(remaining * 1000))
            self.logger_provider.shutdown()
        meters = [self.meter_provider, *(made.meter_provider for made in self.services.values())]
        for index, meter_provider in enumerate(meters):
            share = max(0.0, deadline - time.monotonic()) / (len(meters) - index)
            meter_provider.shutdown(timeout_millis=max(1.0, share * 1000))


def _grpc_options(config: GatewayConfig) -> dict[str, Any]:
    """Keyword arguments of the SDK's OTLP/gRPC exporters for the forward endpoint."""
    import grpc  # type: ignore[import-untyped]

    target, secure = grpc_target(config.forward)
    credentials = None
    if secure:
        root = None
        if config.forward_ca_file:
            with open(config.forward_ca_file, "rb") as file:
                root = file.read()
        credentials = grpc.ssl_channel_credentials(root_certificates=root)
    gzip = config.forward_compression == "gzip"
    return {
        "endpoint": target,
        "insecure": not secure,
        "credentials": credentials,
        "headers": dict(config.forward_headers),
        "timeout": config.forward_timeout_s,
        "compression": grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression,
    }


def _http_options(config: GatewayConfig) -> dict[str, Any]:
    """Keyword arguments of the SDK's OTLP/HTTP exporters (all but the endpoint)."""
    from opentelemetry.exporter.otlp.proto.http import Compression

    gzip = config.forward_compression == "gzip"
    return {
        "headers": dict(config.forward_headers),
        "timeout": config.forward_timeout_s,
        "compression": Compression.Gzip if gzip else Compression.NoCompression,
        "certificate_file": config.forward_ca_file,
    }


def _exporters(config: GatewayConfig, *, spans: bool = True) -> tuple[Any, Any]:
    """The OTLP span (unless not `spans`: None) and metric exporters for the forward endpoint."""
    if config.forward_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcSpanExporter,
        )

        common = _grpc_options(config)
        return GrpcSpanExporter(**common) if spans else None, GrpcMetricExporter(**common)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = config.forward.rstrip("/")
    http_common = _http_options(config)
    return (
        OTLPSpanExporter(endpoint=base + "/v1/traces", **http_common) if spans else None,
        OTLPMetricExporter(endpoint=base + "/v1/metrics", **http_common),
    )


def _log_exporter(config: GatewayConfig) -> Any:
    """The OTLP log record exporter for the forward endpoint (the result events)."""
    if config.forward_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )

        return GrpcLogExporter(**_grpc_options(config))
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

    endpoint = config.forward.rstrip("/") + "/v1/logs"
    return OTLPLogExporter(endpoint=endpoint, **_http_options(config))


def _prometheus_reader() -> MetricReader | None:
    """A Prometheus reader (registered with prometheus-client's default registry), if installed."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
    except ImportError:
        logger.info("prometheus extra not installed: /metrics is off (OTLP metrics still flow)")
        return None
    return PrometheusMetricReader()


def build_providers(config: GatewayConfig, *, prometheus: bool = True) -> Providers:
    """Tracer and meter providers exporting to the forward endpoint (+ Prometheus if asked and
    installed)."""
    resource = Resource.create({semconv.SERVICE_NAME: config.service_name})
    span_exporter, metric_exporter = _exporters(config)
    tracer_provider = TracerProvider(resource=resource)
    delay = int(os.environ.get("OTEL_BSP_SCHEDULE_DELAY", "") or _SPAN_BATCH_DELAY_MS)
    span_processor = BatchSpanProcessor(span_exporter, schedule_delay_millis=delay)
    tracer_provider.add_span_processor(span_processor)
    readers: list[MetricReader] = [
        PeriodicExportingMetricReader(
            metric_exporter, export_interval_millis=config.metrics_interval_s * 1000
        )
    ]
    pull = _prometheus_reader() if prometheus else None
    if pull is not None:
        readers.append(pull)
    meter_provider = MeterProvider(resource=resource, metric_readers=readers, views=metric_views())
    logger_provider = LoggerProvider(resource=resource)
    log_processor = BatchLogRecordProcessor(_log_exporter(config), schedule_delay_millis=delay)
    logger_provider.add_log_record_processor(log_processor)
    return Providers(
        tracer_provider,
        meter_provider,
        pull is not None,
        config,
        span_processor,
        logger_provider,
        log_processor,
    )
