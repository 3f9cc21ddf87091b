"""What `groundwire._wiring` builds when the app has no SDK providers: groundwire's own tracer,
meter and logger providers (`build_providers`), made global (the logger provider never), with
the resource, the exporters the choice asks for (OTLP/HTTP, OTLP gRPC, the JSON-lines file, or
a Prometheus reader on the asked host), their guards and handles, and telemetry that really
arrives: at a real OTLP receiver on loopback, in the file, or in a scrape over HTTP.

A process may set the global providers once, so each test starts from the OpenTelemetry API's
unset globals and puts the earlier ones back afterwards (`own_globals`); in process, each test
takes about a second.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import _logs, metrics, trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util._once import Once

import groundwire
from groundwire import semconv
from groundwire.testing import OtlpGrpcReceiver, OtlpHttpReceiver

from .conftest import AnswerLength, Telemetry, record_turn


@pytest.fixture
def own_globals(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No global tracer or meter provider set yet and no OTEL_* variable; afterwards the test's
    configuration is shut down and the earlier globals come back (monkeypatch undoes both)."""
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(metrics_internal, "_METER_PROVIDER", None)
    yield
    groundwire.shutdown(5.0)


pytestmark = pytest.mark.usefixtures("own_globals")


def _configure(**options: Any) -> Any:
    """configure() with one cheap evaluator, no integrations and no tuning."""
    return groundwire.configure(
        evaluators=[AnswerLength()],
        instrument=False,
        gc_freeze=False,
        switch_interval_s=0,
        **options,
    )


def _turn_flushed(online: Any) -> None:
    """One turn on the global tracer provider, scored and flushed."""
    record_turn(trace.get_tracer("app"))
    assert online.force_flush(5.0)


def test_our_providers_over_otlp_http_are_global_guarded_and_deliver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OTLP/HTTP: our tracer and meter providers become the global ones (the logger provider
    does not), each signal has its guard, every handle flushes and shuts ours, and a turn's
    spans, score metrics and result events reach the receiver with the service name."""
    with OtlpHttpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        online = _configure(service_name="owned-app", exporter="otlp")
        assert online.owns_tracer_provider is True
        assert online.owns_meter_provider is True
        assert online.owns_logger_provider is True
        assert isinstance(online.tracer_provider, TracerProvider)
        assert trace.get_tracer_provider() is online.tracer_provider
        assert isinstance(online.meter_provider, MeterProvider)
        assert metrics.get_meter_provider() is online.meter_provider
        assert online.logger_provider is not None
        assert _logs.get_logger_provider() is not online.logger_provider
        assert online.tracer_provider.resource.attributes[semconv.SERVICE_NAME] == "owned-app"
        names = [
            f"OTLP {signal} endpoint {receiver.endpoint}/v1/{signal}"
            for signal in ("traces", "metrics", "logs")
        ]
        assert [guard.name for guard in online.guards] == names
        assert online.stats().exporter == "; ".join(names)
        assert online.output_path is None
        handles = {h.name: h for h in online.providers}
        assert list(handles) == ["tracer provider", "meter provider", "logger provider"]
        assert all(h.flush is not None and h.close is not None for h in handles.values())
        _turn_flushed(online)
        assert receiver.wait_for(lambda r: bool(r.spans("rag")), 5)
        assert receiver.wait_for(lambda r: bool(r.metric_points(semconv.METRIC_EVALUATIONS)), 5)
        assert receiver.wait_for(lambda r: bool(r.log_records()), 5)
        assert groundwire.shutdown(5.0)
        (root,) = receiver.spans("rag")
        assert root.resource[semconv.SERVICE_NAME] == "owned-app"
        points = receiver.metric_points(semconv.METRIC_EVALUATIONS)
        assert {p.resource[semconv.SERVICE_NAME] for p in points} == {"owned-app"}
        assert {p.attributes[semconv.GEN_AI_EVALUATION_NAME] for p in points} == {"answer_length"}
        assert receiver.log_records()[0].resource[semconv.SERVICE_NAME] == "owned-app"


def test_our_providers_over_otlp_grpc_name_grpc_guards_and_deliver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OTLP gRPC: the guards say gRPC, and the turn's spans and metrics reach a gRPC server."""
    with OtlpGrpcReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
        online = _configure(exporter="otlp")
        assert [guard.name for guard in online.guards] == [
            f"OTLP {signal} endpoint 127.0.0.1:{receiver.port} (gRPC)"
            for signal in ("traces", "metrics", "logs")
        ]
        _turn_flushed(online)
        assert receiver.wait_for(lambda r: bool(r.spans("rag")), 5)
        assert receiver.wait_for(lambda r: bool(r.metric_points(semconv.METRIC_EVALUATIONS)), 5)
        assert groundwire.shutdown(5.0)


def test_our_providers_write_every_signal_to_the_file_and_say_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The file choice: one WARNING names the three signals and the absolute file, which then
    holds spans, metrics and result events; without service_name the resource keeps the one
    OTEL_SERVICE_NAME gives."""
    monkeypatch.setenv("OTEL_SERVICE_NAME", "named-by-env")
    path = tmp_path / "t.jsonl"
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = _configure(exporter="file", output_path=path)
    assert online.tracer_provider.resource.attributes[semconv.SERVICE_NAME] == "named-by-env"
    assert online.output_path == path
    assert online.guards == []
    assert online.stats().exporter == f"file {path}"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "groundwire: no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT); writing "
        f"traces, metrics and logs as OTLP/JSON lines to {path.resolve()}"
    ]
    _turn_flushed(online)
    keys = {key for line in path.read_text().splitlines() for key in json.loads(line)}
    assert keys == {"resourceSpans", "resourceMetrics", "resourceLogs"}


def test_our_meter_provider_serves_prometheus_on_the_asked_host_until_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """prometheus_port with our meter provider: its reader serves the scores on the asked
    loopback host; the route names the port; shutdown closes the endpoint."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = _configure(
            service_name="prom-owned",
            exporter="none",
            prometheus_port=0,
            prometheus_host="127.0.0.1",
        )
    url = online.prometheus_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert "Prometheus endpoint" in [h.name for h in online.providers]
    (line,) = [r.getMessage() for r in caplog.records if "telemetry:" in r.getMessage()]
    assert f"metrics -> none and Prometheus port {port};" in line
    _turn_flushed(online)
    page = urllib.request.urlopen(url, timeout=5).read().decode()
    (sample,) = [
        line
        for line in page.splitlines()
        if line.startswith("groundwire_evaluations_total{") and "answer_length" in line
    ]
    assert sample.endswith(" 1.0")
    assert 'service_name="prom-owned"' in page
    assert groundwire.shutdown(5.0)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=2)


def test_only_the_meter_provider_is_ours_beside_the_apps_tracer_provider(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's tracer provider stays the app's (not made global), while the meter provider
    is ours: the exporter is described by our guards, not as the app's providers."""
    with OtlpHttpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        online = _configure(tracer_provider=telemetry.tracer_provider, exporter="otlp")
        assert online.owns_tracer_provider is False and online.owns_meter_provider is True
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        assert metrics.get_meter_provider() is online.meter_provider
        assert online.stats().exporter == (
            f"OTLP metrics endpoint {receiver.endpoint}/v1/metrics; "
            f"OTLP logs endpoint {receiver.endpoint}/v1/logs"
        )
        assert [h.name for h in online.providers] == [
            "the app's tracer provider",
            "meter provider",
            "logger provider",
        ]
        assert groundwire.shutdown(5.0)
