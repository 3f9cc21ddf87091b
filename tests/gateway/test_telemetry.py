"""The gateway's own providers in-process: the OTLP target taken from the forward options, the
service resources, the carrier spans' batch delay, capture into `ResultCapture` with a
persistent queue, and the Prometheus reader when asked (nothing listens at the downstream: the
exports are guarded and shut down by a short deadline)."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource

from groundwire import semconv
from groundwire.gateway import GatewayConfig, load_config
from groundwire.gateway._results import ResultCapture
from groundwire.gateway._telemetry import Providers, build_providers, forward_target

_DEAD = "http://127.0.0.1:9"
"""A downstream nobody listens on (the discard port)."""


def _config(**flags: object) -> GatewayConfig:
    return load_config(flags={"forward": _DEAD, **flags}, environ={})


@pytest.fixture
def providers() -> Iterator[Providers]:
    """Providers without Prometheus, capturing spans and logs, shut at the end."""
    made = build_providers(_config(service_name="gw-test"), prometheus=False,
                           capture=ResultCapture())  # fmt: skip
    yield made
    made.shutdown(0.5)


def test_the_target_is_the_forward_endpoint_with_its_options(tmp_path: Path) -> None:
    """Endpoint, protocol, headers, CA, compression and timeout all come from the forward
    options."""
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    config = _config(
        forward="grpc://collector:4317",
        forward_headers="x-a=1",
        forward_ca_file=str(ca),
        forward_compression="gzip",
        forward_timeout_s=3,
    )
    target = forward_target(config)
    assert target.endpoint == "grpc://collector:4317"
    assert target.protocol == "grpc"
    assert dict(target.headers) == {"x-a": "1"}
    assert target.ca_file == str(ca)
    assert target.compression == "gzip"
    assert target.timeout_s == 3.0


def test_the_providers_export_to_the_target_with_the_metric_interval(
    providers: Providers,
) -> None:
    """The providers' target is the forward target, their metric interval
    `metrics_interval_s` in milliseconds, their resource the gateway's service name."""
    config = _config(service_name="gw-test")
    assert providers.otlp.target == forward_target(config)
    assert providers.otlp.interval_millis == 15_000
    assert providers.prometheus is False
    assert providers.tracer_provider is providers.otlp.tracer_provider
    assert providers.meter_provider is providers.otlp.meter_provider
    assert providers.logger_provider is providers.otlp.logger_provider
    resource = providers.tracer_provider.resource
    assert resource.attributes[semconv.SERVICE_NAME] == "gw-test"


def test_providers_for_a_service_carry_its_name_and_are_made_once(providers: Providers) -> None:
    """`for_service` gives providers whose resource is the app's, the same ones each time."""
    made = providers.for_service("app-a")
    assert providers.for_service("app-a") is made
    assert providers.services == {"app-a": made}
    for provider in (made.tracer_provider, made.logger_provider):
        resource: Resource = provider.resource
        assert resource.attributes[semconv.SERVICE_NAME] == "app-a"
    assert made.meter_provider is not providers.meter_provider
    assert made.meter_provider in providers.otlp.meter_providers
    other = providers.for_service("app-b")
    assert other.tracer_provider is not made.tracer_provider
    assert set(providers.services) == {"app-a", "app-b"}


def test_with_a_capture_spans_and_logs_go_to_it_within_the_batch_delay() -> None:
    """A carrier span and a result log record reach the capture, not the downstream, within
    the half-second batch delay (well before the SDK's 5 s default)."""
    capture = ResultCapture()
    made = build_providers(_config(), prometheus=False, capture=capture)
    start = time.monotonic()
    made.tracer_provider.get_tracer("t").start_span("evaluation").end()
    assert made.logger_provider is not None
    made.logger_provider.get_logger("t").emit(body="result")
    while capture.held < 2 and time.monotonic() - start < 10:
        time.sleep(0.05)
    assert capture.held == 2
    assert time.monotonic() - start < 4.0
    made.shutdown(0.5)


def test_the_batch_delay_variable_wins_over_the_gateway_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`OTEL_BSP_SCHEDULE_DELAY` set: carrier spans wait that long for a batch (here 20 s: none
    arrives within a second, a flush sends it)."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "20000")
    capture = ResultCapture()
    made = build_providers(_config(), prometheus=False, capture=capture)
    made.tracer_provider.get_tracer("t").start_span("evaluation").end()
    time.sleep(1.0)
    assert capture.held == 0
    assert made.tracer_provider.force_flush(5000)
    assert capture.held == 1
    made.shutdown(0.5)


def test_prometheus_feeds_the_default_registry_when_asked() -> None:
    """`prometheus=True` with the extra installed: a reader on the meter provider serves what it
    records through prometheus-client's default registry."""
    prometheus_client = pytest.importorskip("prometheus_client")
    made = build_providers(_config(), prometheus=True)
    try:
        assert made.prometheus is True
        counter = made.meter_provider.get_meter("t").create_counter("mutgw_probe_count")
        counter.add(3)
        text = prometheus_client.generate_latest(prometheus_client.REGISTRY).decode()
        assert re.search(r"^mutgw_probe_count_total\{[^}]*\} 3\.0$", text, re.M)
    finally:
        made.shutdown(0.5)


def test_without_the_prometheus_extra_metrics_still_flow_by_otlp(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The Prometheus exporter not importable: no reader, one info line saying /metrics is
    off."""
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)
    caplog.set_level("INFO", logger="groundwire.gateway")
    made = build_providers(_config(), prometheus=True)
    made.shutdown(0.5)
    assert made.prometheus is False
    assert [r.getMessage() for r in caplog.records if r.name == "groundwire.gateway"] == [
        "prometheus extra not installed: /metrics is off (OTLP metrics still flow)"
    ]


def test_prometheus_is_asked_for_by_default() -> None:
    """Without saying, the providers include the Prometheus reader (when installed)."""
    pytest.importorskip("opentelemetry.exporter.prometheus")
    made = build_providers(_config())
    try:
        assert made.prometheus is True
    finally:
        made.shutdown(0.5)
