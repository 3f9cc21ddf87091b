"""One OTLP target, resolved one way: an endpoint means the same place for every signal and every
caller, arguments win over the standard variables, and the providers built on it count what they
did not export and shut down by their deadline against a dead or a hung endpoint."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.resources import Resource

from groundwire.exporters import OtlpTarget, build_otlp_providers, grpc_target, otlp_exporter
from groundwire.testing import OtlpHttpReceiver


@pytest.fixture(autouse=True)
def _no_otlp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an environment without OTLP variables."""
    import os

    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP_"):
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    "given",
    [
        "http://collector:4318",
        "http://collector:4318/",
        "collector:4318",
        "http://collector:4318/v1/traces",
        "http://collector:4318/v1/metrics/",
    ],
)
def test_an_http_endpoint_is_a_base_that_each_signal_appends_its_path_to(given: str) -> None:
    """A base, a bare host:port or a signal's URL all mean the same base: each signal's exporter
    posts to base + /v1/<signal>."""
    target = OtlpTarget(endpoint=given)
    for signal in ("traces", "metrics", "logs"):
        expected = f"http://collector:4318/v1/{signal}"
        assert target.endpoint_for(signal) == expected
        exporter = otlp_exporter(signal, target)
        try:
            assert exporter._endpoint == expected
        finally:
            exporter.shutdown()


@pytest.mark.parametrize(
    ("given", "address", "tls"),
    [
        ("grpc://collector:4317", "collector:4317", False),
        ("grpcs://collector", "collector:4317", True),
        ("https://collector:443", "collector:443", True),
        ("http://collector:5000", "collector:5000", False),
        ("collector:4317", "collector:4317", False),
        ("grpc://[::1]:4317", "[::1]:4317", False),
    ],
)
def test_a_grpc_endpoint_is_host_and_port_with_tls_from_its_scheme(
    given: str, address: str, tls: bool
) -> None:
    """Over gRPC the exporter gets host:port, plain unless the scheme is https or grpcs."""
    assert grpc_target(given) == (address, tls)
    options = OtlpTarget(endpoint=given, protocol="grpc").exporter_options("traces")
    assert (options["endpoint"], options["insecure"]) == (address, not tls)


def test_arguments_win_over_the_standard_variables_and_the_variables_fill_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A protocol given wins over OTEL_EXPORTER_OTLP_PROTOCOL; without an endpoint the SDK's
    exporter resolves OTEL_EXPORTER_OTLP_ENDPOINT as a base (the same rule as an argument)."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert OtlpTarget().protocol_for("metrics") == "grpc"
    assert OtlpTarget(protocol="http/protobuf").protocol_for("metrics") == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env-collector:4318")
    from_env = otlp_exporter("logs", OtlpTarget())
    given = otlp_exporter("logs", OtlpTarget(endpoint="http://env-collector:4318"))
    try:
        assert from_env._endpoint == given._endpoint == "http://env-collector:4318/v1/logs"
    finally:
        from_env.shutdown()
        given.shutdown()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"protocol": "http/json"}, "protocol"),
        ({"compression": "br"}, "compression"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_bad_target_values_are_refused_with_a_message_naming_them(
    fields: dict[str, object], named: str
) -> None:
    """A bad protocol, compression or timeout fails at once, naming the field."""
    with pytest.raises(ValueError, match=named):
        OtlpTarget(**fields)  # type: ignore[arg-type]


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound but not listening: connections are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield int(sock.getsockname()[1])
    sock.close()


@pytest.fixture
def hung_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers (a hung Collector)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(2)
    for sock in held:
        sock.close()
    server.close()


def _emit(providers: object, spans: int, records: int) -> None:
    """End `spans` spans and emit `records` log records through the providers."""
    from opentelemetry._logs import LogRecord

    tracer = providers.tracer_provider.get_tracer("t")  # type: ignore[attr-defined]
    for index in range(spans):
        with tracer.start_as_current_span(f"s{index}"):
            pass
    logs = providers.logger_provider.get_logger("t")  # type: ignore[attr-defined]
    for index in range(records):
        logs.emit(LogRecord(body=f"r{index}"))
    meter = providers.meter_provider.get_meter("t")  # type: ignore[attr-defined]
    meter.create_counter("c").add(1)


@pytest.mark.parametrize("endpoint_kind", ["refusing", "hung"])
def test_shutdown_keeps_its_deadline_and_counts_what_a_dead_or_hung_endpoint_missed(
    endpoint_kind: str,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Against a port that refuses connections or one that never answers, shutdown returns by
    its deadline with False, never raises, and counts every span and log record as not
    exported, in one warning without a traceback."""
    port = request.getfixturevalue(f"{endpoint_kind}_port")
    target = OtlpTarget(endpoint=f"http://127.0.0.1:{port}", timeout_s=10)
    providers = build_otlp_providers(target, Resource.create({}), batch_delay_millis=5_000)
    _emit(providers, spans=4, records=3)
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    assert providers.shutdown(1.0) is False
    elapsed = time.monotonic() - started
    assert elapsed < 1.5, elapsed
    missing = providers.not_exported()
    assert (missing["spans"], missing["log records"]) == (4, 3)
    (line,) = [r for r in caplog.records if "not exported at shutdown" in r.getMessage()]
    assert "4 spans, 3 log records" in line.getMessage() and line.exc_info is None
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.WARNING]


def test_providers_export_everything_to_a_live_endpoint_and_say_so() -> None:
    """A real receiver: every span, log record and metric arrives, shutdown returns True and
    nothing counts as not exported."""
    with OtlpHttpReceiver() as receiver:
        providers = build_otlp_providers(
            OtlpTarget(endpoint=receiver.endpoint), Resource.create({}), batch_delay_millis=50
        )
        _emit(providers, spans=4, records=3)
        assert providers.shutdown(10.0) is True
        assert providers.not_exported() == {}
        assert len(receiver.spans()) == 4 and len(receiver.log_records()) == 3
