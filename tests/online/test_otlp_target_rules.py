"""OTLP target resolution rule by rule, with the exact messages (exporters/_target.py), and where
a tracer provider's spans go (exporters/_endpoints.py): what `configure(phoenix_annotations=...)`
compares with Phoenix's URL. No network: only exporters' settings are read."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import grpc  # type: ignore[import-untyped]
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.exporters import (
    ExporterChoice,
    JsonLinesFile,
    OtlpTarget,
    build_tracer_provider,
    grpc_target,
    otlp_exporter,
    otlp_protocol,
    same_server,
    span_destinations,
)
from groundwire.exporters._target import http_endpoint


@pytest.fixture(autouse=True)
def _no_otlp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an environment without OTLP variables."""
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP_"):
            monkeypatch.delenv(name)


# --- protocol ---------------------------------------------------------------------------------


def test_the_protocol_given_wins_then_the_signals_variable_then_the_general_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given (stripped) > OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL > OTEL_EXPORTER_OTLP_PROTOCOL >
    http/protobuf."""
    assert otlp_protocol("traces") == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", " grpc ")
    assert otlp_protocol("logs") == "grpc"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", " http/protobuf ")
    assert otlp_protocol("logs") == "http/protobuf"
    assert otlp_protocol("metrics") == "grpc"
    assert otlp_protocol("logs", " grpc ") == "grpc"
    assert otlp_protocol("metrics", "  ") == "grpc"  # blank: not given


def test_an_unsupported_protocol_names_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given: the field; from the environment: the signal's variables."""
    with pytest.raises(ValueError, match=r"is not supported") as raised:
        otlp_protocol("traces", "http/json")
    assert str(raised.value) == (
        "OTLP protocol 'http/json' (protocol) is not supported; "
        "use one of ['http/protobuf', 'grpc']"
    )
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "thrift")
    with pytest.raises(ValueError, match=r"is not supported") as raised:
        otlp_protocol("metrics")
    assert str(raised.value) == (
        "OTLP protocol 'thrift' (OTEL_EXPORTER_OTLP_[METRICS_]PROTOCOL) is not supported; "
        "use one of ['http/protobuf', 'grpc']"
    )


@pytest.mark.parametrize("call", [otlp_protocol, lambda s: http_endpoint("h:1", s)])
def test_an_unknown_signal_is_refused_by_name(call: object) -> None:
    """Only traces, metrics and logs."""
    with pytest.raises(ValueError, match=r"signal must be") as raised:
        call("spans")  # type: ignore[operator]
    assert str(raised.value) == "signal must be one of ['traces', 'metrics', 'logs'], got 'spans'"


# --- endpoints --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "signal", "url"),
    [
        (" https://c.example:443/otlp/ ", "traces", "https://c.example:443/otlp/v1/traces"),
        ("http://c:4318/v1/logs", "metrics", "http://c:4318/v1/metrics"),
        ("c:4318/v1/traces/", "logs", "http://c:4318/v1/logs"),
        ("http://c:4318/BOX//", "traces", "http://c:4318/BOX/v1/traces"),
    ],
)
def test_http_endpoints_keep_the_base_path_and_scheme(base: str, signal: str, url: str) -> None:
    """A base path stays; only a trailing signal path is replaced; no scheme means http."""
    assert http_endpoint(base, signal) == url


@pytest.mark.parametrize(
    ("given", "address"),
    [
        ("collector", "collector:4317"),
        ("", "127.0.0.1:4317"),
        ("grpcs://[fe80::1]", "[fe80::1]:4317"),
    ],
)
def test_grpc_defaults_are_the_loopback_host_and_port_4317(given: str, address: str) -> None:
    """A missing host is 127.0.0.1, a missing port 4317, an IPv6 host bracketed."""
    assert grpc_target(given)[0] == address


def test_without_an_endpoint_the_variables_decide() -> None:
    """No endpoint (or a blank one): the exporter is given none and reads the variables."""
    assert OtlpTarget().endpoint_for("traces") is None
    assert OtlpTarget(endpoint="").endpoint_for("logs") is None
    assert OtlpTarget().exporter_options("traces") == {}
    assert OtlpTarget(protocol="grpc").exporter_options("metrics") == {}


# --- the target's fields ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"compression": "br"}, "compression must be one of ['none', 'gzip'], got 'br'"),
        ({"timeout_s": 0}, "timeout_s must be a positive number, got 0"),
        ({"timeout_s": -2.5}, "timeout_s must be a positive number, got -2.5"),
        ({"protocol": "json"}, "OTLP protocol 'json' (protocol) is not supported"),
    ],
)
def test_bad_fields_fail_at_once_with_the_whole_message(
    fields: dict[str, object], message: str
) -> None:
    """Checked when the target is made, before any exporter exists."""
    with pytest.raises(ValueError, match=r"must be|is not supported") as raised:
        OtlpTarget(**fields)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message)


def test_good_fields_are_taken() -> None:
    """Both compressions, both protocols and any positive timeout are accepted."""
    for compression in ("none", "gzip"):
        assert OtlpTarget(compression=compression, timeout_s=0.001).compression == compression
    assert OtlpTarget(protocol="grpc").protocol == "grpc"


def test_http_options_carry_exactly_what_was_given(tmp_path: Path) -> None:
    """Endpoint, a copy of the headers, timeout, compression and the CA file, by the SDK's
    keyword names."""
    headers = {"authorization": "Bearer x"}
    target = OtlpTarget(
        endpoint="https://c:4318",
        headers=headers,
        ca_file=str(tmp_path / "ca.pem"),
        compression="gzip",
        timeout_s=2.5,
    )
    options = target.exporter_options("logs")
    assert options == {
        "endpoint": "https://c:4318/v1/logs",
        "headers": headers,
        "timeout": 2.5,
        "compression": Compression.Gzip,
        "certificate_file": str(tmp_path / "ca.pem"),
    }
    assert options["headers"] is not headers
    plain = OtlpTarget(compression="none").exporter_options("traces")
    assert plain == {"compression": Compression.NoCompression}


def test_grpc_options_plain_or_tls_with_the_ca_file(tmp_path: Path) -> None:
    """gRPC: no CA-file option of HTTP; `insecure` from the scheme; TLS with a CA file gets
    channel credentials from it; compression as grpc's own values."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(b"not checked until a connection is made")
    secure = OtlpTarget(
        endpoint="grpcs://c", protocol="grpc", ca_file=str(ca), compression="gzip", timeout_s=3
    ).exporter_options("traces")
    assert set(secure) == {"endpoint", "timeout", "compression", "insecure", "credentials"}
    assert (secure["endpoint"], secure["insecure"]) == ("c:4317", False)
    assert secure["compression"] == grpc.Compression.Gzip
    assert isinstance(secure["credentials"], grpc.ChannelCredentials)
    plain = OtlpTarget(
        endpoint="grpc://c:9", protocol="grpc", ca_file=str(ca), compression="none"
    ).exporter_options("metrics")
    assert plain == {
        "endpoint": "c:9",
        "compression": grpc.Compression.NoCompression,
        "insecure": True,
    }
    only_compression = OtlpTarget(protocol="grpc", compression="gzip").exporter_options("logs")
    assert only_compression == {"compression": grpc.Compression.Gzip}
    no_ca = OtlpTarget(endpoint="https://c", protocol="grpc").exporter_options("logs")
    assert no_ca == {"endpoint": "c:4317", "insecure": False}


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
@pytest.mark.parametrize("signal", ["traces", "metrics", "logs"])
def test_each_signal_and_protocol_gets_the_sdks_exporter(signal: str, protocol: str) -> None:
    """The OTLP exporter of that signal, from the package of that protocol."""
    exporter = otlp_exporter(signal, OtlpTarget(endpoint="127.0.0.1:9", protocol=protocol))
    try:
        module = type(exporter).__module__
        assert module.startswith(f"opentelemetry.exporter.otlp.proto.{protocol.split('/')[0]}.")
        kind = {"traces": "Span", "metrics": "Metric", "logs": "Log"}[signal]
        assert type(exporter).__name__ == f"OTLP{kind}Exporter"
    finally:
        exporter.shutdown()


# --- where spans go -------------------------------------------------------------------------------


def test_destinations_read_through_the_sdks_processors() -> None:
    """Simple and batch processors' OTLP exporters are named; in-memory ones are not; something
    that is no SDK provider has none."""
    provider = TracerProvider()
    assert span_destinations(provider) == []
    assert span_destinations(object()) == []
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter("http://a:1/v1/traces")))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter("http://b:2/v1/traces")))
    try:
        assert span_destinations(provider) == ["http://a:1/v1/traces", "http://b:2/v1/traces"]
    finally:
        provider.shutdown()


def test_destinations_of_guarded_and_file_exporters(tmp_path: Path) -> None:
    """groundwire's guarded OTLP exporter is read through its wrapper; a file by its path."""
    path = tmp_path / "t.jsonl"
    provider = build_tracer_provider(
        Resource.create(), ExporterChoice("file", path), JsonLinesFile(path)
    )
    otlp = build_tracer_provider(
        Resource.create(), ExporterChoice("otlp", target=OtlpTarget(endpoint="c:4318"))
    )
    try:
        assert span_destinations(provider) == [f"file {path}"]
        assert span_destinations(otlp) == ["http://c:4318/v1/traces"]
    finally:
        provider.shutdown()
        otlp.shutdown()


@pytest.mark.parametrize(
    ("destination", "url", "same"),
    [
        ("http://localhost:6006/v1/traces", "http://[::1]:6006", True),
        ("http://127.0.0.1:6006/v1/traces", "localhost:6006", True),
        ("phoenix.example:4317", "https://phoenix.example:6006", True),
        ("http://phoenix.example/v1/traces", "http://phoenix.example:6006", True),
        ("http://phoenix.example:6006/v1/traces", "http://phoenix.example", True),
        ("http://phoenix.example:6006/v1/traces", "http://phoenix.example:6007", False),
        ("http://a.example:6006/v1/traces", "http://b.example:6006", False),
        ("http://localhost:6006/v1/traces", "http://phoenix.example:6006", False),
        ("http://h:99999/v1/traces", "http://h:6006", False),
        ("http://h:6006/v1/traces", "http://h:port", False),
        ("file /tmp/h:6006", "http://h:6006", False),
        ("file out@localhost", "http://localhost:6006", False),
    ],
)
def test_same_server_compares_host_and_port(destination: str, url: str, same: bool) -> None:
    """Loopback names are one host; the OTLP/gRPC port 4317 and a missing port match any port;
    a port that is no number, or a file (even one named like user@host), is never the server."""
    assert same_server(destination, url) is same


def _provider(*processors: object) -> SimpleNamespace:
    """Something shaped like an SDK tracer provider with these span processors."""
    return SimpleNamespace(_active_span_processor=SimpleNamespace(_span_processors=processors))


def test_a_batch_processor_that_keeps_its_exporter_inside_is_read_too() -> None:
    """A batch processor without `span_exporter` (its exporter only in `_batch_processor`, as
    some SDK releases keep it) still names its exporter's endpoint."""
    exporter = SimpleNamespace(_endpoint="http://c:4318/v1/traces")
    inner = SimpleNamespace(_batch_processor=SimpleNamespace(_exporter=exporter))
    assert span_destinations(_provider(inner)) == ["http://c:4318/v1/traces"]


def test_exporters_naming_no_endpoint_or_file_are_left_out() -> None:
    """An empty or non-text endpoint, or a file object without a path, names nothing."""
    odd = [
        SimpleNamespace(_endpoint=""),
        SimpleNamespace(_endpoint=("c", 4317)),
        SimpleNamespace(_file=object()),
        SimpleNamespace(_file=SimpleNamespace(path="/tmp/t.jsonl")),
    ]
    processors = [SimpleNamespace(span_exporter=exporter) for exporter in odd]
    assert span_destinations(_provider(*processors)) == ["file /tmp/t.jsonl"]
