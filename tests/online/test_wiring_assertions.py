"""What `groundwire._wiring.wire` puts together when the app brings its own SDK providers: the
handle's fields, the emitter and processor it built, the two configure log lines (every signal's
route, the evaluators, the integrations), the file warning, the Phoenix annotation handle and the
warning when spans will not reach that Phoenix, and the Prometheus endpoint (`_prometheus`,
scraped over real HTTP on loopback).

In process, real SDK providers, real integrations; each test takes well under a second.
"""

from __future__ import annotations

import logging
import re
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import NoOpTracerProvider

import groundwire
from groundwire._wiring import _file, _prometheus
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.exporters import ExporterChoice

from .conftest import AnswerLength, HasContext, Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


def _configure(telemetry: Telemetry, **options: Any) -> Any:
    """configure() on the test's tracer and meter providers, without tuning."""
    return telemetry.configure(gc_freeze=False, switch_interval_s=0, **options)


def _messages(caplog: pytest.LogCaptureFixture, level: int, start: str) -> list[str]:
    """The groundwire log messages at `level` that start with `start`."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "groundwire" and r.levelno == level and r.getMessage().startswith(start)
    ]


def _free_url() -> str:
    """The base URL of a loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


class _Versioned:
    """An evaluator that declares its version (which the result events carry)."""

    name = "versioned"
    version = "9.9.1"

    def evaluate(self, turn: Any) -> Any:
        """Score like AnswerLength."""
        return AnswerLength().evaluate(turn)


def test_the_handle_holds_the_apps_providers_and_what_wire_built(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """The app's providers are the handle's, none of them ours; the emitter sends results as
    asked (events, evaluator versions); the processor has the shutdown deadline; the routes,
    evaluators, integrations and exit deadline are logged in one INFO line, the warm-up in a
    DEBUG line; live content capture is switched on."""
    logs = LoggerProvider()
    LIVE_CONTENT.enabled = False
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        online = _configure(
            telemetry,
            evaluators=[HasContext(), _Versioned()],
            instrument=True,
            events="span",
            logger_provider=logs,
            shutdown_timeout_s=7.5,
            exit_timeout_s=2.5,
        )
    assert LIVE_CONTENT.enabled is True
    assert online.tracer_provider is telemetry.tracer_provider
    assert online.meter_provider is telemetry.meter_provider
    assert online.logger_provider is logs
    assert online.owns_tracer_provider is False
    assert online.owns_meter_provider is False
    assert online.owns_logger_provider is False
    assert online.output_path is None
    assert online.guards == []
    assert online.prometheus_url is None
    assert isinstance(online.emitter, Emitter)
    assert online.emitter.events == "span"
    assert online.emitter.results.versions == {"versioned": "9.9.1"}
    assert online.processor.shutdown_timeout_s == 7.5
    assert online.stats().exporter == "the app's providers"
    assert [h.name for h in online.providers] == [
        "the app's tracer provider",
        "the app's meter provider",
        "the app's logger provider",
    ]
    assert _messages(caplog, logging.INFO, "groundwire: scoring") == [
        "groundwire: scoring has_context, versioned; "
        "instrumented: groundwire_langchain, groundwire_llamaindex; "
        "telemetry: traces -> the app's tracer provider; metrics -> the app's meter provider; "
        "logs -> none (results are span events: events='span'); exit deadline 2.5 s"
    ]
    (warmed,) = _messages(caplog, logging.DEBUG, "groundwire: evaluators warmed up")
    assert re.fullmatch(r"groundwire: evaluators warmed up in \d+\.\d\d s", warmed)


def test_results_as_logs_without_an_app_logger_provider_go_to_the_file_and_say_so(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """No app logger provider and no OTLP endpoint: groundwire's own logger provider writes the
    result events to the JSON-lines file; one WARNING names the signal and the absolute file,
    the handle its path, and the INFO line says no integration was instrumented."""
    path = tmp_path / "out" / "telemetry.jsonl"
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = _configure(telemetry, evaluators=[HasContext()], events="logs", output_path=path)
    assert online.output_path == path
    assert online.owns_logger_provider is True
    assert online.owns_tracer_provider is False and online.owns_meter_provider is False
    assert online.stats().exporter == "the app's providers"
    assert [h.name for h in online.providers][-1] == "logger provider"
    assert _messages(caplog, logging.WARNING, "groundwire: no OTLP endpoint") == [
        "groundwire: no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT); writing "
        f"logs as OTLP/JSON lines to {path.resolve()}"
    ]
    (line,) = _messages(caplog, logging.INFO, "groundwire: scoring")
    assert line == (
        "groundwire: scoring has_context; "
        "instrumented: none (spans must come from another instrumentation); "
        "telemetry: traces -> the app's tracer provider; metrics -> the app's meter provider; "
        f"logs -> file {path.resolve()}; exit deadline 3 s"
    )


def test_results_as_span_events_write_no_file(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """events='span' with the app's tracer and meter providers: nothing goes to a file, so
    there is no file warning and no output path."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = _configure(
            telemetry, evaluators=[HasContext()], events="span", output_path=tmp_path / "t"
        )
    assert online.output_path is None
    assert online.logger_provider is None and online.owns_logger_provider is False
    assert _messages(caplog, logging.WARNING, "groundwire: no OTLP endpoint") == []


def test_a_tracer_provider_that_is_not_the_sdks_is_refused_by_name(telemetry: Telemetry) -> None:
    """groundwire watches spans through an SDK provider: another kind is a TypeError that names
    the kind and what to pass instead."""
    with pytest.raises(TypeError) as raised:
        groundwire.configure(
            evaluators=[HasContext()],
            tracer_provider=NoOpTracerProvider(),
            meter_provider=telemetry.meter_provider,
            instrument=False,
        )
    assert str(raised.value) == (
        "groundwire needs an OpenTelemetry SDK TracerProvider to watch spans; the app's is a "
        "NoOpTracerProvider. Pass tracer_provider= an SDK provider."
    )


def test_prometheus_port_beside_the_apps_meter_provider_is_ignored_with_a_warning(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """The app's meter provider was built already: no endpoint is started, and a WARNING says
    what to do instead."""
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        online = _configure(telemetry, evaluators=[HasContext()], prometheus_port=0)
    assert online.prometheus_url is None
    assert "Prometheus endpoint" not in [h.name for h in online.providers]
    assert _messages(caplog, logging.WARNING, "prometheus_port") == [
        "prometheus_port ignored: the app's meter provider was built before "
        "groundwire.configure(); add a PrometheusMetricReader to it instead"
    ]


def test_phoenix_annotations_get_a_handle_and_a_warning_naming_every_destination(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """The annotation processor's handle comes last and flushes and closes with the seconds
    left; the one WARNING lists where the spans go instead and the Phoenix's traces URL (the
    URL's trailing slash dropped)."""
    for port in (1, 2):
        exporter = OTLPSpanExporter(f"http://127.0.0.1:{port}/v1/traces")
        telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    url = _free_url()
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        online = _configure(
            telemetry, evaluators=[HasContext()], events="span", phoenix_annotations=f"{url}/"
        )
    assert _messages(caplog, logging.WARNING, "groundwire: phoenix_annotations") == [
        f"groundwire: phoenix_annotations={url}/, but the spans do not go to that Phoenix (they "
        "go to: http://127.0.0.1:1/v1/traces, http://127.0.0.1:2/v1/traces), so its annotations "
        f"have no span to attach to; export the spans to {url}/v1/traces too, or through a "
        "Collector that forwards them (docs/phoenix.md)"
    ]
    handle = online.providers[-1]
    assert handle.name == "Phoenix annotations"
    assert handle.flush is not None and handle.close is not None
    assert handle.flush(0.5) is True
    handle.close(0.5)


def test_phoenix_annotations_without_any_span_exporter_say_so(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Spans kept in memory only: the warning says groundwire sees no exporter."""
    url = _free_url()
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        _configure(telemetry, evaluators=[HasContext()], events="span", phoenix_annotations=url)
    (line,) = _messages(caplog, logging.WARNING, "groundwire: phoenix_annotations")
    assert "(they go to: no exporter groundwire can see)" in line


def test_a_phoenix_under_a_path_prefix_keeps_the_prefix_in_the_traces_url(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """Phoenix behind a proxy path: only the trailing slash goes, the prefix stays whole."""
    url = f"{_free_url()}/PHOENIX"
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        _configure(
            telemetry, evaluators=[HasContext()], events="span", phoenix_annotations=f"{url}/"
        )
    (line,) = _messages(caplog, logging.WARNING, "groundwire: phoenix_annotations")
    assert f"export the spans to {url}/v1/traces too" in line


def test_a_file_route_names_the_absolute_file_or_nothing(tmp_path: Path) -> None:
    """`file <absolute path>`, or "" for a choice without a file."""
    relative = Path("t.jsonl")
    assert _file(ExporterChoice("file", relative)) == f"file {relative.resolve()}"
    assert _file(ExporterChoice("file")) == ""


def test_the_prometheus_endpoint_serves_the_readers_metrics_on_the_asked_host(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`_prometheus` starts a scrape endpoint on the asked loopback host and a free port, logs
    its URL, and serves what a meter provider with its reader records."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        (reader,), server = _prometheus(0, "127.0.0.1")
    provider = MeterProvider(metric_readers=[reader])
    try:
        host, port = server.server_address[:2]
        assert (host, port) == ("127.0.0.1", server.server_port) and port > 0
        assert _messages(caplog, logging.INFO, "groundwire: Prometheus") == [
            f"groundwire: Prometheus metrics on http://127.0.0.1:{port}/metrics"
        ]
        provider.get_meter("t").create_counter("wiring_probe").add(3)
        url = f"http://127.0.0.1:{port}/metrics"
        page = urllib.request.urlopen(url, timeout=5).read().decode()
        (sample,) = [line for line in page.splitlines() if line.startswith("wiring_probe_total{")]
        assert sample.endswith(" 3.0")
    finally:
        provider.shutdown()
        server.shutdown()
        server.server_close()


def test_prometheus_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without prometheus_client the ImportError says which extra to install."""
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ImportError) as raised:
        _prometheus(0, "127.0.0.1")
    assert str(raised.value) == (
        "prometheus_port needs the Prometheus extra: pip install 'groundwire[prometheus]'"
    )
