"""The parts of `groundwire._wiring` that turn providers into handles and words: what shutdown
and force_flush call on each provider (ours shut, the app's only flushed, with whole
milliseconds), where each signal goes, and how the exporter is described. Real SDK providers,
in process; each test takes milliseconds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from groundwire import semconv
from groundwire._wiring import (
    Providers,
    _and,
    _describe_exporter,
    _handles,
    _millis,
    signal_routes,
)
from groundwire.exporters import ExporterChoice, ExportGuard


class _Recorded:
    """An SDK-shaped provider that records the calls shutdown and force_flush make on it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Record the flush and its milliseconds."""
        self.calls.append(("force_flush", timeout_millis))
        return True

    def shutdown(self, timeout_millis: int | None = None) -> None:
        """Record the shutdown (and its milliseconds, when given)."""
        self.calls.append(("shutdown", timeout_millis))


class _Reader(InMemoryMetricReader):
    """A metric reader that records the milliseconds its flush was given."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[float] = []

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Record, then flush."""
        self.flushed.append(timeout_millis)
        return super().force_flush(timeout_millis)


class _Server:
    """Stands for the Prometheus HTTP server: records that it was stopped and closed."""

    server_port = 9464

    def __init__(self) -> None:
        self.calls: list[str] = []

    def shutdown(self) -> None:
        """Stop serving."""
        self.calls.append("shutdown")

    def server_close(self) -> None:
        """Close the socket."""
        self.calls.append("server_close")


def _providers(**fields: Any) -> Providers:
    """Providers that are the app's unless a test says otherwise."""
    base: dict[str, Any] = {
        "tracer_provider": _Recorded(),
        "owns_tracer": False,
        "meter_provider": _Recorded(),
        "owns_meter": False,
        "logger_provider": None,
        "owns_logger": False,
    }
    return Providers(**{**base, **fields})


@pytest.mark.parametrize(
    ("seconds", "millis"), [(0.0, 1), (0.0004, 1), (0.0025, 2), (1.5, 1500), (30.0, 30_000)]
)
def test_millis_are_whole_and_at_least_one(seconds: float, millis: int) -> None:
    """Seconds become whole milliseconds, never 0 (which some SDK calls read as no time)."""
    assert _millis(seconds) == millis


@pytest.mark.parametrize(
    ("names", "text"), [(["a"], "a"), (["a", "b"], "a and b"), (["a", "b", "c"], "a, b and c")]
)
def test_names_are_joined_with_and(names: list[str], text: str) -> None:
    """`a`, `a and b`, `a, b and c`."""
    assert _and(names) == text


def test_the_exporter_is_described_by_who_owns_it_and_where_it_sends(tmp_path: Path) -> None:
    """The app's providers, the file, the OTLP guards' names (or just OTLP), or none."""
    path = tmp_path / "t.jsonl"
    guards = [ExportGuard("OTLP traces http://a", None), ExportGuard("OTLP metrics http://a", None)]
    assert _describe_exporter(ExporterChoice("file", path), False, guards) == "the app's providers"
    assert _describe_exporter(ExporterChoice("file", path), True, []) == f"file {path}"
    assert _describe_exporter(ExporterChoice("otlp"), True, guards) == (
        "OTLP traces http://a; OTLP metrics http://a"
    )
    assert _describe_exporter(ExporterChoice("otlp"), True, []) == "OTLP"
    assert _describe_exporter(ExporterChoice("none"), True, guards) == "none"


def test_the_apps_providers_are_only_flushed_with_whole_milliseconds() -> None:
    """The app's tracer, meter and logger providers get a flush for both flush and shutdown
    (never a shutdown: they are the app's), each with the seconds left in milliseconds."""
    tracer, meter, logs = _Recorded(), _Recorded(), _Recorded()
    handles = _handles(
        _providers(tracer_provider=tracer, meter_provider=meter, logger_provider=logs)
    )
    assert [h.name for h in handles] == [
        "the app's tracer provider",
        "the app's meter provider",
        "the app's logger provider",
    ]
    for handle in handles:
        assert handle.flush is not None and handle.close is not None
        handle.flush(1.25)
        handle.close(0.5)
    for provider in (tracer, meter, logs):
        assert provider.calls == [("force_flush", 1250), ("force_flush", 500)]


def test_a_provider_without_force_flush_gets_no_handle() -> None:
    """An app's provider that cannot flush (the API's no-op ones) is left alone."""
    handles = _handles(_providers(tracer_provider=object(), meter_provider=object()))
    assert handles == []


def test_our_providers_are_flushed_and_shut_and_the_prometheus_endpoint_closed() -> None:
    """Ours: the tracer provider is flushed and shut; the meter provider's flush is its push
    reader's (none without one) and its shutdown gets the milliseconds; the logger provider
    comes last; the Prometheus endpoint is stopped and closed."""
    tracer, meter, logs, server = _Recorded(), _Recorded(), _Recorded(), _Server()
    reader = _Reader()
    MeterProvider(metric_readers=[reader])  # the reader needs a provider to flush through
    p = _providers(
        tracer_provider=tracer,
        owns_tracer=True,
        meter_provider=meter,
        owns_meter=True,
        logger_provider=logs,
        owns_logger=True,
        push_reader=reader,
        prometheus_server=server,
    )
    handles = _handles(p)
    assert [h.name for h in handles] == [
        "tracer provider",
        "meter provider",
        "Prometheus endpoint",
        "logger provider",
    ]
    by_name = {h.name: h for h in handles}
    for name in ("tracer provider", "logger provider"):
        handle = by_name[name]
        assert handle.flush is not None and handle.close is not None
        handle.flush(2.0)
        handle.close(0.1)
    assert tracer.calls == logs.calls == [("force_flush", 2000), ("shutdown", None)]
    meter_handle = by_name["meter provider"]
    assert meter_handle.flush is not None and meter_handle.close is not None
    meter_handle.flush(0.75)
    meter_handle.close(0.3)
    assert reader.flushed == [750]
    assert meter.calls == [("shutdown", 300)]
    prometheus = by_name["Prometheus endpoint"]
    assert prometheus.flush is None and prometheus.close is not None
    prometheus.close(1.0)
    assert server.calls == ["shutdown", "server_close"]
    no_reader = _handles(_providers(owns_meter=True, meter_provider=_Recorded()))
    assert [(h.name, h.flush) for h in no_reader][1] == ("meter provider", None)


def test_signal_routes_name_the_apps_providers_or_ours(tmp_path: Path) -> None:
    """Each signal goes to the app's provider, to groundwire's file or OTLP endpoint (the
    guard's name), or nowhere; Prometheus is added to the metrics route."""
    path = tmp_path / "t.jsonl"
    file = ExporterChoice("file", path)
    apps = _providers(logger_provider=_Recorded())
    assert signal_routes(apps, file, semconv.EVENTS_LOGS) == {
        "traces": "the app's tracer provider",
        "metrics": "the app's meter provider",
        "logs": "the app's logger provider",
    }
    ours = _providers(
        owns_tracer=True,
        owns_meter=True,
        logger_provider=_Recorded(),
        owns_logger=True,
        prometheus_server=_Server(),
    )
    where = f"file {path.resolve()}"
    assert signal_routes(ours, file, semconv.EVENTS_LOGS) == {
        "traces": where,
        "metrics": f"{where} and Prometheus port 9464",
        "logs": where,
    }
    ours.guards = [
        ExportGuard("OTLP traces http://a/v1/traces", None),
        ExportGuard("OTLP metrics http://a/v1/metrics", None),
        ExportGuard("OTLP logs http://a/v1/logs", None),
    ]
    otlp = ExporterChoice("otlp")
    assert signal_routes(ours, otlp, semconv.EVENTS_LOGS) == {
        "traces": "OTLP traces http://a/v1/traces",
        "metrics": "OTLP metrics http://a/v1/metrics and Prometheus port 9464",
        "logs": "OTLP logs http://a/v1/logs",
    }
    ours.guards = []
    assert signal_routes(ours, otlp, semconv.EVENTS_LOGS)["traces"] == "none"
    assert signal_routes(ours, file, semconv.EVENTS_SPAN)["logs"] == (
        "none (results are span events: events='span')"
    )
    assert signal_routes(_providers(), file, semconv.EVENTS_LOGS)["logs"] == (
        "none (results are span events: events='span')"
    )


def test_our_logs_route_says_when_the_logs_exporter_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With OTEL_LOGS_EXPORTER=none groundwire's own logger provider sends nowhere, and the
    route says why."""
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    ours = _providers(logger_provider=LoggerProvider(), owns_logger=True)
    routes = signal_routes(ours, ExporterChoice("file", tmp_path / "t"), semconv.EVENTS_LOGS)
    assert routes["logs"] == "none (OTEL_LOGS_EXPORTER=none)"


def test_sdk_providers_get_their_handles_too() -> None:
    """Real SDK providers of the app flush through their own force_flush (True)."""
    tracer = TracerProvider()
    handles = _handles(_providers(tracer_provider=tracer, meter_provider=object()))
    assert [h.name for h in handles] == ["the app's tracer provider"]
    assert handles[0].flush is not None and handles[0].flush(1.0) is True
    tracer.shutdown()
