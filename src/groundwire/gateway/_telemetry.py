"""The gateway's own providers: evaluation results and its metrics, to the forward downstream.

The tracer provider carries the evaluation carrier spans; the logger provider the log-based
`gen_ai.evaluation.result` events (OTEP 4430); the meter provider carries the evaluation metrics
and the gateway's own, pushed by OTLP every `metrics_interval_s` and, with `prometheus-client`
installed, also served on `/metrics`. All come from `groundwire.exporters` like every provider
groundwire builds, for the same endpoint, headers, compression, CA and timeout as the forwarded
telemetry: their exports are guarded (an unreachable downstream opens a breaker instead of
holding each batch through the SDK's retries), counted, and closed by the shutdown deadline.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from groundwire import semconv
from groundwire.exporters import OtlpProviders, OtlpTarget, build_otlp_providers, grpc_target
from groundwire.gateway._config import GatewayConfig
from groundwire.gateway._results import ResultCapture

__all__ = ["Providers", "ServiceProviders", "build_providers", "forward_target", "grpc_target"]

logger = logging.getLogger("groundwire.gateway")

_SPAN_BATCH_DELAY_MS = 500
"""Carrier spans wait at most this long for a batch (the SDK's 5 s default would add lag);
`OTEL_BSP_SCHEDULE_DELAY` overrides it."""


def forward_target(config: GatewayConfig) -> OtlpTarget:
    """The OTLP target of the gateway's own telemetry: the forward endpoint and its options."""
    return OtlpTarget(
        endpoint=config.forward,
        protocol=config.forward_protocol,
        headers=dict(config.forward_headers),
        ca_file=config.forward_ca_file,
        compression=config.forward_compression,
        timeout_s=config.forward_timeout_s,
    )


@dataclass(frozen=True)
class ServiceProviders:
    """One app's providers (its `service.name` as the resource)."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    logger_provider: LoggerProvider


@dataclass
class Providers:
    """What `build_providers` made; `shutdown` flushes and closes them all by a deadline.

    `for_service` gives providers whose resource is an app's (`service.name`), so the results
    of that app's turns show under the app: they share the span and log record processors (one
    export queue each) and have a metric reader of their own (a meter provider has one resource).
    """

    otlp: OtlpProviders
    prometheus: bool
    """True when a Prometheus reader feeds `/metrics`."""
    services: dict[str, ServiceProviders] = field(default_factory=dict)
    """Providers made by `for_service`, by service name."""

    @property
    def tracer_provider(self) -> TracerProvider:
        """The gateway's tracer provider (its own resource)."""
        return self.otlp.tracer_provider

    @property
    def meter_provider(self) -> MeterProvider:
        """The gateway's meter provider (its own resource)."""
        return self.otlp.meter_provider

    @property
    def logger_provider(self) -> LoggerProvider | None:
        """The gateway's logger provider (its own resource)."""
        return self.otlp.logger_provider

    def for_service(self, service: str) -> ServiceProviders:
        """Tracer, meter and logger providers with `service.name=service`, exporting like ours."""
        made = self.services.get(service)
        if made is not None:
            return made
        resource = Resource.create({semconv.SERVICE_NAME: service})
        tracer_provider, meter_provider, logger_provider = self.otlp.for_resource(resource)
        assert logger_provider is not None  # built with logs
        made = ServiceProviders(tracer_provider, meter_provider, logger_provider)
        self.services[service] = made
        return made

    def shutdown(self, timeout_s: float) -> bool:
        """Flush the last spans, log records and metric points downstream, then close, all
        within `timeout_s` whatever the downstream does; True when everything was exported.
        What was not is counted and logged; this never raises."""
        return self.otlp.shutdown(timeout_s)


def _prometheus_reader() -> MetricReader | None:
    """A Prometheus reader (registered with prometheus-client's default registry), if installed."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
    except ImportError:
        logger.info("prometheus extra not installed: /metrics is off (OTLP metrics still flow)")
        return None
    return PrometheusMetricReader()


def build_providers(
    config: GatewayConfig, *, prometheus: bool = True, capture: ResultCapture | None = None
) -> Providers:
    """Tracer, meter and logger providers exporting to the forward endpoint (+ Prometheus if
    asked and installed). With `capture` (a persistent queue) spans and log records go to its
    exporters instead, to be committed to the queue with their traces' scored mark; metrics
    still go to the forward endpoint."""
    pull = _prometheus_reader() if prometheus else None
    exporters = None
    if capture is not None:
        exporters = {"traces": capture.span_exporter, "logs": capture.log_exporter}
    otlp = build_otlp_providers(
        forward_target(config),
        Resource.create({semconv.SERVICE_NAME: config.service_name}),
        extra_readers=(pull,) if pull is not None else (),
        interval_millis=config.metrics_interval_s * 1000,
        batch_delay_millis=int(
            os.environ.get("OTEL_BSP_SCHEDULE_DELAY", "") or _SPAN_BATCH_DELAY_MS
        ),
        exporters=exporters,
    )
    return Providers(otlp, pull is not None)
