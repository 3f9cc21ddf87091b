"""An unreachable Collector is noticed once, not paid for per batch, and export resumes by itself:
groundwire's own tracer provider exporting over real OTLP (HTTP and gRPC) to a port that refuses
connections, then to a real receiver started on that port mid-run."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from groundwire._breaker import CLOSED, OPEN
from groundwire.exporters._guard import ExportGuard
from groundwire.exporters._providers import ExporterChoice, build_tracer_provider
from groundwire.testing import OtlpGrpcReceiver, OtlpHttpReceiver


@pytest.fixture
def refusing() -> Iterator[socket.socket]:
    """A loopback socket bound but not listening: connections to its port are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _provider(
    monkeypatch: pytest.MonkeyPatch, protocol: str, port: int
) -> tuple[TracerProvider, ExportGuard]:
    """groundwire's tracer provider exporting to 127.0.0.1:`port` over `protocol`."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    path = "/v1/traces" if protocol == "http/protobuf" else ""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://127.0.0.1:{port}{path}")
    guards: list[ExportGuard] = []
    provider = build_tracer_provider(Resource.create({}), ExporterChoice("otlp"), guards=guards)
    (guard,) = guards
    guard.breaker.cooldown_s = 0.3
    return provider, guard


def _spans(provider: TracerProvider, prefix: str, count: int, pause_s: float = 0.0) -> None:
    """End `count` spans named `{prefix}-{i}`."""
    tracer = provider.get_tracer("app")
    for i in range(count):
        with tracer.start_as_current_span(f"{prefix}-{i}"):
            pass
        if pause_s:
            time.sleep(pause_s)


def _wait(predicate: object, timeout_s: float) -> bool:
    """Poll `predicate()` until true or the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_down_collector_is_noticed_once_and_export_resumes_when_it_is_back(
    monkeypatch: pytest.MonkeyPatch,
    refusing: socket.socket,
    caplog: pytest.LogCaptureFixture,
    protocol: str,
) -> None:
    """Spans ended while the port refuses are dropped (counted); one warning says so; once a
    receiver listens on that port, a probe finds it within a cool-down and the later spans
    arrive without any action; one line says so."""
    port = int(refusing.getsockname()[1])
    provider, guard = _provider(monkeypatch, protocol, port)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        started = time.monotonic()
        _spans(provider, "down", 30, pause_s=0.02)
        assert _wait(lambda: guard.breaker.state == OPEN, 6.0), guard.breaker.state
        assert _wait(lambda: guard.unsent() == 30, 5.0), guard.unsent()
        noticed_s = time.monotonic() - started
        refusing.close()
        receiver = (
            OtlpHttpReceiver(port=port) if protocol != "grpc" else OtlpGrpcReceiver(port=port)
        )
        with receiver:
            recovering = 0  # batches inside the last cool-down are dropped: wait for the probe
            while guard.breaker.state != CLOSED and recovering < 200:
                _spans(provider, f"recovering{recovering}", 1, pause_s=0.02)
                recovering += 1
            _spans(provider, "up", 20, pause_s=0.02)
            arrived = receiver.wait_for(
                lambda r: len([s for s in r.spans() if s.name.startswith("up-")]) == 20, 10.0
            )
            provider.shutdown()
        assert arrived, [s.name for s in receiver.spans()]
    assert noticed_s < 6.0
    assert guard.breaker.state == CLOSED
    assert guard.breaker.opened == 1
    assert guard.exported >= 20
    ours = [r.getMessage() for r in caplog.records if r.name == "groundwire"]
    assert len([m for m in ours if "is unreachable" in m]) == 1, ours
    assert len([m for m in ours if "reachable again" in m]) == 1, ours


def test_while_the_breaker_is_open_batches_fail_fast(
    monkeypatch: pytest.MonkeyPatch, refusing: socket.socket
) -> None:
    """With the breaker open, exporting a batch costs no network wait at all."""
    provider, guard = _provider(monkeypatch, "http/protobuf", int(refusing.getsockname()[1]))
    guard.breaker.cooldown_s = 60.0
    _spans(provider, "first", 1)
    assert _wait(lambda: guard.breaker.state == OPEN, 6.0)
    started = time.monotonic()
    _spans(provider, "later", 200)
    provider.force_flush()
    assert time.monotonic() - started < 1.0
    assert guard.unsent() == 201
    assert guard.breaker.refused >= 1
    provider.shutdown()


def test_an_answering_collector_that_rejects_a_batch_is_not_an_outage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 400 proves the endpoint is there: counted as not exported, the breaker stays closed."""
    with OtlpHttpReceiver(status=400) as receiver:
        provider, guard = _provider(monkeypatch, "http/protobuf", receiver.port)
        _spans(provider, "rejected", 3)
        provider.force_flush()
        assert guard.breaker.state == CLOSED
        assert guard.unsent() == 3
        provider.shutdown()
