"""configure(phoenix_annotations=...) warns, in one line, when the spans do not go to that
Phoenix: an annotation attaches only to a span Phoenix has stored (issue 32)."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

import groundwire
from groundwire.exporters import (
    ExporterChoice,
    JsonLinesFile,
    OtlpTarget,
    build_tracer_provider,
    same_server,
    span_destinations,
)
from tests.online.conftest import HasContext, Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


def _phoenix_url() -> str:
    """The base URL of a loopback port nobody listens on (no span is ever sent in these tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _warnings(telemetry: Telemetry, url: str, caplog: pytest.LogCaptureFixture) -> list[str]:
    """configure() with annotations to `url` on the app's providers, then the warnings about it."""
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        groundwire.configure(
            evaluators=[HasContext()],
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            instrument=False,
            events="span",
            phoenix_annotations=url,
        )
    assert groundwire.shutdown(5.0)
    return [r.getMessage() for r in caplog.records if "phoenix_annotations=" in r.getMessage()]


def test_spans_kept_in_memory_get_one_warning_naming_the_phoenix(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """The app's provider exports nowhere groundwire can see: one line says so and what to do."""
    url = _phoenix_url()
    (line,) = _warnings(telemetry, url, caplog)
    assert "\n" not in line
    assert f"phoenix_annotations={url}, but the spans do not go to that Phoenix" in line
    assert "no exporter groundwire can see" in line and f"{url}/v1/traces" in line


def test_spans_exported_to_that_phoenix_get_no_warning(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An OTLP/HTTP exporter to the same Phoenix (localhost for 127.0.0.1): no warning."""
    url = _phoenix_url()
    port = url.rsplit(":", 1)[1]
    exporter = OTLPSpanExporter(f"http://localhost:{port}/v1/traces")
    telemetry.tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    assert _warnings(telemetry, url, caplog) == []


def test_spans_exported_elsewhere_are_named_in_the_warning(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An exporter to another server: the warning names where the spans go instead."""
    exporter = OTLPSpanExporter("http://127.0.0.1:1/v1/traces")
    telemetry.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    (line,) = _warnings(telemetry, _phoenix_url(), caplog)
    assert "(they go to: http://127.0.0.1:1/v1/traces)" in line


def test_destinations_of_groundwires_own_providers(tmp_path: Path) -> None:
    """groundwire's file and guarded OTLP exporters are read through their wrappers; a gRPC
    endpoint on 4317 of the same host counts as that Phoenix."""
    path = tmp_path / "t.jsonl"
    file = build_tracer_provider(
        Resource.create(), ExporterChoice("file", path), JsonLinesFile(path)
    )
    assert span_destinations(file) == [f"file {path}"]
    target = OtlpTarget(endpoint="http://127.0.0.1:6006")
    otlp = build_tracer_provider(Resource.create(), ExporterChoice("otlp", target=target))
    (endpoint,) = span_destinations(otlp)
    assert same_server(endpoint, "http://localhost:6006")
    assert not same_server(endpoint, "http://127.0.0.1:6007")
    assert not same_server(endpoint, "http://phoenix.example:6006")
    assert not same_server(f"file {path}", "http://127.0.0.1:6006")
    grpc = GrpcSpanExporter("127.0.0.1:4317", insecure=True)
    otlp.add_span_processor(BatchSpanProcessor(grpc))
    assert span_destinations(otlp)[1:] == ["127.0.0.1:4317"]
    assert same_server("127.0.0.1:4317", "http://127.0.0.1:6006")
    for provider in (file, otlp):
        provider.shutdown()
