"""groundwire's own providers, rule by rule: which exporter a choice gets (OTLP behind a guard,
the JSON-lines file, or nothing), how the guard is named and where it probes, and what the
tracer, logger and meter providers are built with.

Real SDK providers and exporters; OTLP exporters are made but never reach a network (their
endpoints are only read back).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from opentelemetry._logs import NoOpLoggerProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from groundwire._breaker import CircuitBreaker
from groundwire.exporters import (
    ExporterChoice,
    ExportGuard,
    JsonLinesFile,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
    OtlpTarget,
    app_logger_provider,
    build_logger_provider,
    build_meter_provider,
    build_tracer_provider,
    choose_exporter,
    log_exporter,
    logs_disabled,
    otlp_endpoint_configured,
)
from groundwire.exporters._guard import (
    GuardedLogExporter,
    GuardedMetricExporter,
    GuardedSpanExporter,
)
from groundwire.exporters._providers import (
    DEFAULT_OUTPUT_PATH,
    EXPORTER_CHOICES,
    chosen_exporter,
    guard_exporter,
    guarded_exporter,
)

_ENDPOINTS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OTLP or logs variable from the machine decides anything here."""
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP_") or name == "OTEL_LOGS_EXPORTER":
            monkeypatch.delenv(name)


@pytest.fixture
def shared(tmp_path: Path) -> JsonLinesFile:
    """The JSON-lines file a `file` choice writes to."""
    return JsonLinesFile(tmp_path / "telemetry.jsonl")


def _lines(path: Path) -> list[dict[str, object]]:
    """The JSON objects of a JSON-lines file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_each_endpoint_variable_alone_counts_as_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any one of the four endpoint variables counts; a blank one does not."""
    assert otlp_endpoint_configured() is False
    for name in _ENDPOINTS:
        monkeypatch.setenv(name, "   ")
        assert otlp_endpoint_configured() is False, name
        monkeypatch.setenv(name, "http://collector:4318")
        assert otlp_endpoint_configured() is True, name
        monkeypatch.delenv(name)


def test_choose_exporter_resolves_auto_and_names_a_bad_value(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`auto` is OTLP with an endpoint (given or variable), else the default file; `file`
    keeps the path given; `otlp` and `none` keep the target; a bad value is named."""
    assert EXPORTER_CHOICES == ("auto", "otlp", "file", "none")
    assert choose_exporter("auto", None) == ExporterChoice("file", DEFAULT_OUTPUT_PATH)
    assert Path("groundwire-telemetry.jsonl") == DEFAULT_OUTPUT_PATH
    assert choose_exporter("file", tmp_path / "t.jsonl").path == tmp_path / "t.jsonl"
    assert choose_exporter("file", str(tmp_path)).path == tmp_path
    assert choose_exporter("file", "").path == DEFAULT_OUTPUT_PATH
    target = OtlpTarget(endpoint="http://collector:4318")
    assert choose_exporter("auto", None, target) == ExporterChoice("otlp", target=target)
    assert choose_exporter("none", "ignored.jsonl", target) == ExporterChoice("none", None, target)
    assert choose_exporter("otlp", None) == ExporterChoice("otlp", None, OtlpTarget())
    assert choose_exporter("none", None).target == OtlpTarget()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:4318/v1/metrics")
    assert choose_exporter("auto", tmp_path / "t.jsonl") == ExporterChoice("otlp")
    with pytest.raises(ValueError, match="exporter must be one of") as error:
        choose_exporter("kafka", None)
    assert str(error.value) == (
        "exporter must be one of ['auto', 'otlp', 'file', 'none'], got 'kafka'"
    )


def test_the_chosen_exporter_of_each_signal(shared: JsonLinesFile) -> None:
    """`file` gets the JSON-lines exporter of the signal (no guard); `none` gets nothing;
    `otlp` gets the SDK exporter behind a guard; a file choice without its file is refused."""
    file = ExporterChoice("file", Path("x"))
    for signal, kind in (
        ("traces", JsonLinesSpanExporter),
        ("metrics", JsonLinesMetricExporter),
        ("logs", JsonLinesLogExporter),
    ):
        exporter, guard = chosen_exporter(signal, file, shared)
        assert type(exporter) is kind and guard is None
        assert chosen_exporter(signal, ExporterChoice("none"), shared) == (None, None)
    with pytest.raises(ValueError, match="a file exporter choice needs the shared JsonLinesFile"):
        chosen_exporter("traces", file)
    target = OtlpTarget(endpoint="http://collector:4318")
    exporter, guard = chosen_exporter("logs", ExporterChoice("otlp", target=target))
    assert isinstance(exporter, GuardedLogExporter) and isinstance(guard, ExportGuard)
    assert guard.endpoint == "http://collector:4318/v1/logs"


def test_a_guarded_http_exporter_is_named_for_its_url_and_probes_its_port() -> None:
    """Over HTTP the guard names the signal and its URL and probes the URL's host and port."""
    exporter, guard = guarded_exporter("traces", OtlpTarget(endpoint="http://collector:9999"))
    assert isinstance(exporter, GuardedSpanExporter)
    assert guard.name == "OTLP traces endpoint http://collector:9999/v1/traces"
    assert guard.endpoint == "http://collector:9999/v1/traces"
    assert guard.address == ("collector", 9999)
    assert guard.kind == "spans"
    assert exporter.guard is guard
    assert guard.breaker.name == guard.name


def test_a_guarded_grpc_exporter_says_grpc_and_probes_port_4317() -> None:
    """Over gRPC the endpoint has no scheme: the name says gRPC; no port means 4317."""
    target = OtlpTarget(endpoint="collector", protocol="grpc")
    exporter, guard = guarded_exporter("metrics", target)
    assert isinstance(exporter, GuardedMetricExporter)
    assert guard.name == "OTLP metrics endpoint collector:4317 (gRPC)"
    assert guard.address == ("collector", 4317)
    assert guard.kind == "metric exports"


def test_an_http_endpoint_from_the_variables_probes_4318_without_a_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK resolves the variable; a URL with no port is probed on the scheme's port."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "https://collector/v1/logs")
    _, guard = guarded_exporter("logs", OtlpTarget())
    assert guard.address == ("collector", 443)
    assert guard.name == "OTLP logs endpoint https://collector/v1/logs"


def test_a_scheme_less_http_endpoint_is_not_called_grpc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The name says gRPC from the protocol, not from the endpoint's look: an HTTP endpoint
    given without a scheme in the variables is named as it is, without "(gRPC)"."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector:4318/v1/traces")
    _, guard = guarded_exporter("traces", OtlpTarget(protocol="http/protobuf"))
    assert guard.name == "OTLP traces endpoint collector:4318/v1/traces"


def test_a_grpc_endpoint_with_a_scheme_is_still_called_grpc() -> None:
    """A gRPC target written as a URL is named gRPC too."""
    _, guard = guarded_exporter("traces", OtlpTarget(endpoint="http://c:4317", protocol="grpc"))
    assert guard.name.endswith(" (gRPC)")


def test_a_shared_breaker_is_used_by_the_guard() -> None:
    """Exporters to one endpoint can share one breaker (one warning per outage)."""
    breaker = CircuitBreaker("shared", threshold=1)
    _, guard = guarded_exporter("metrics", OtlpTarget(endpoint="http://c:1"), breaker)
    assert guard.breaker is breaker
    _, own = guarded_exporter("metrics", OtlpTarget(endpoint="http://c:1"))
    assert own.breaker is not breaker


def test_guard_exporter_wraps_each_signal_in_its_guarded_class() -> None:
    """traces, metrics and logs each get their own guarded exporter over the same guard."""
    guard = ExportGuard("x", None)
    spans = guard_exporter("traces", JsonLinesSpanExporter(os.devnull), guard)
    assert type(spans) is GuardedSpanExporter and spans.guard is guard
    logs = guard_exporter("logs", JsonLinesLogExporter(os.devnull), guard)
    assert type(logs) is GuardedLogExporter
    metrics = guard_exporter("metrics", JsonLinesMetricExporter(os.devnull), guard)
    assert type(metrics) is GuardedMetricExporter


def test_the_tracer_provider_writes_spans_to_the_file_choice(
    shared: JsonLinesFile, tmp_path: Path
) -> None:
    """A file choice: the provider's spans reach the shared file, with its resource, and the
    provider does not shut itself down at exit (its owner does, by a deadline)."""
    resource = Resource.create({"service.name": "svc"})
    guards: list[ExportGuard] = []
    provider = build_tracer_provider(
        resource, ExporterChoice("file", tmp_path), shared, guards=guards
    )
    assert isinstance(provider, TracerProvider)
    assert provider.resource is resource
    assert provider._atexit_handler is None
    assert guards == []
    provider.get_tracer("t").start_span("one").end()
    assert provider.force_flush(5_000)
    (line,) = _lines(tmp_path / "telemetry.jsonl")
    assert "resourceSpans" in line
    provider.shutdown()


def test_the_tracer_provider_for_otlp_lists_its_guard_and_takes_batch_options() -> None:
    """An OTLP choice: the exporter's guard goes to `guards`; batch options reach the SDK's
    processor (whose own checks apply); `none` builds a provider with no processor."""
    target = OtlpTarget(endpoint="http://127.0.0.1:9")
    guards: list[ExportGuard] = []
    provider = build_tracer_provider(
        Resource.create({}), ExporterChoice("otlp", target=target), guards=guards
    )
    (guard,) = guards
    assert guard.name == "OTLP traces endpoint http://127.0.0.1:9/v1/traces"
    assert guard.given is not None and guard.unsent() == 0
    provider.get_tracer("t").start_span("queued").end()
    assert guard.unsent() == 1
    guard.deadline = 0.0  # nothing may be sent: shut without waiting for the port
    provider.shutdown()
    with pytest.raises(ValueError, match="max_export_batch_size"):
        build_tracer_provider(
            Resource.create({}),
            ExporterChoice("otlp", target=target),
            max_queue_size=1,
            max_export_batch_size=2,
        )
    empty = build_tracer_provider(Resource.create({}), ExporterChoice("none"), guards=guards)
    assert empty._active_span_processor._span_processors == ()
    assert len(guards) == 1


def test_the_logger_provider_writes_records_unless_logs_are_off(
    monkeypatch: pytest.MonkeyPatch, shared: JsonLinesFile, tmp_path: Path
) -> None:
    """A file choice: records reach the file; with OTEL_LOGS_EXPORTER=none the provider has no
    processor and lists no guard, whatever the choice."""
    resource = Resource.create({"service.name": "svc"})
    provider = build_logger_provider(resource, ExporterChoice("file", tmp_path), shared)
    assert isinstance(provider, LoggerProvider)
    assert provider.resource is resource and provider._at_exit_handler is None
    provider.get_logger("t").emit(body="hello")
    assert provider.force_flush(5_000)
    (line,) = _lines(tmp_path / "telemetry.jsonl")
    assert "resourceLogs" in line
    provider.shutdown()
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    guards: list[ExportGuard] = []
    target = OtlpTarget(endpoint="http://127.0.0.1:9")
    off = build_logger_provider(resource, ExporterChoice("otlp", target=target), guards=guards)
    assert off._multi_log_record_processor._log_record_processors == ()
    assert off.resource is resource and off._at_exit_handler is None
    assert guards == []


def test_the_logger_provider_for_otlp_lists_its_guard_and_takes_batch_options() -> None:
    """An OTLP choice: a counting processor whose guard goes to `guards`; batch options reach
    the SDK's processor."""
    target = OtlpTarget(endpoint="http://127.0.0.1:9")
    guards: list[ExportGuard] = []
    provider = build_logger_provider(
        Resource.create({}), ExporterChoice("otlp", target=target), guards=guards
    )
    (guard,) = guards
    assert guard.kind == "log records"
    provider.get_logger("t").emit(body="queued")
    assert guard.unsent() == 1
    guard.deadline = 0.0
    provider.shutdown()
    with pytest.raises(ValueError, match="max_export_batch_size"):
        build_logger_provider(
            Resource.create({}),
            ExporterChoice("otlp", target=target),
            max_queue_size=1,
            max_export_batch_size=2,
        )


def test_the_meter_provider_pushes_to_the_choice_beside_extra_readers(
    shared: JsonLinesFile, tmp_path: Path
) -> None:
    """The push reader exports to the chosen exporter at the interval given; extra readers
    (Prometheus) join it; the views are groundwire's; no exit hook."""
    extra = InMemoryMetricReader()
    resource = Resource.create({"service.name": "svc"})
    provider, push = build_meter_provider(
        resource, ExporterChoice("file", tmp_path), shared, (extra,), interval_millis=60_000
    )
    assert isinstance(provider, MeterProvider) and isinstance(push, PeriodicExportingMetricReader)
    assert push._export_interval_millis == 60_000
    assert provider._sdk_config.resource is resource
    assert provider._atexit_handler is None
    assert provider._sdk_config.views
    assert list(provider._metric_readers) == [extra, push]
    provider.get_meter("t").create_counter("groundwire.evaluations").add(2)
    assert push.force_flush(5_000)
    assert any("resourceMetrics" in line for line in _lines(tmp_path / "telemetry.jsonl"))
    assert extra.get_metrics_data() is not None
    provider.shutdown()


def test_the_meter_provider_lists_an_otlp_guard_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An OTLP choice lists the metric guard in `guards` (when given); the interval falls back
    to OTEL_METRIC_EXPORT_INTERVAL; `none` has no push reader."""
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "45000")
    choice = ExporterChoice("otlp", target=OtlpTarget(endpoint="http://127.0.0.1:9"))
    guards: list[ExportGuard] = []
    provider, push = build_meter_provider(Resource.create({}), choice, guards=guards)
    (guard,) = guards
    assert guard.kind == "metric exports"
    assert push is not None and push._export_interval_millis == 45_000
    guard.deadline = 0.0
    provider.shutdown()
    unlisted, _ = build_meter_provider(Resource.create({}), choice)
    unlisted.shutdown()
    nothing, none = build_meter_provider(Resource.create({}), ExporterChoice("none"))
    assert none is None and list(nothing._metric_readers) == []
    nothing.shutdown()


def test_logs_disabled_reads_the_standard_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """`none` in any case and spacing switches logs off; anything else leaves them on."""
    assert logs_disabled() is False
    for value in ("none", " NONE ", "None"):
        monkeypatch.setenv("OTEL_LOGS_EXPORTER", value)
        assert logs_disabled() is True, value
    for value in ("otlp", "", "console"):
        monkeypatch.setenv("OTEL_LOGS_EXPORTER", value)
        assert logs_disabled() is False, value


def test_log_exporter_per_choice(shared: JsonLinesFile) -> None:
    """The unguarded log exporter of a choice: the file's, the SDK's OTLP one, or None; a file
    choice without its file is refused by name."""
    exporter = log_exporter(ExporterChoice("file", Path("x")), shared)
    assert type(exporter) is JsonLinesLogExporter
    with pytest.raises(ValueError, match="needs the shared") as error:
        log_exporter(ExporterChoice("file", Path("x")))
    assert str(error.value) == "a file exporter choice needs the shared JsonLinesFile"
    assert log_exporter(ExporterChoice("none"), shared) is None
    target = OtlpTarget(endpoint="http://127.0.0.1:9")
    otlp = log_exporter(ExporterChoice("otlp", target=target))
    assert otlp._endpoint == "http://127.0.0.1:9/v1/logs"
    otlp.shutdown()


def test_the_apps_logger_provider_is_used_and_a_wrong_one_is_named() -> None:
    """A given SDK provider is the app's; a no-op one (or none set) means the app has none; a
    non-provider is refused with its type named."""
    mine = LoggerProvider(shutdown_on_exit=False)
    assert app_logger_provider(mine) is mine
    assert app_logger_provider(NoOpLoggerProvider()) is None
    assert app_logger_provider() is None
    with pytest.raises(TypeError) as error:
        app_logger_provider("not a provider")
    assert str(error.value) == "logger_provider must be an OpenTelemetry LoggerProvider, got str"


def test_a_file_choice_without_its_file_is_refused_in_these_words() -> None:
    """The message says what is missing."""
    with pytest.raises(ValueError, match="needs the shared") as error:
        chosen_exporter("traces", ExporterChoice("file", Path("x")))
    assert str(error.value) == "a file exporter choice needs the shared JsonLinesFile"


def test_an_endpoint_without_a_port_is_probed_on_the_protocols_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An endpoint variable with neither scheme nor port: gRPC probes 4317, HTTP 4318."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    _, grpc = guarded_exporter("traces", OtlpTarget())
    assert grpc.address == ("collector", 4317)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "collector/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
    _, http = guarded_exporter("traces", OtlpTarget())
    assert http.address == ("collector", 4318)


def test_a_batched_provider_builds_what_it_was_configured_with(
    shared: JsonLinesFile, tmp_path: Path
) -> None:
    """A BatchedProvider made here builds its provider type with its processor kind over its
    signal's exporter; `skip` true builds one without any."""
    from groundwire.exporters._counting import CountingBatchSpanProcessor
    from groundwire.exporters._providers import BatchedProvider

    build = BatchedProvider(
        "traces", TracerProvider, TracerProvider.add_span_processor, CountingBatchSpanProcessor
    )
    provider = build(Resource.create({}), ExporterChoice("file", tmp_path), shared)
    (processor,) = provider._active_span_processor._span_processors
    assert type(processor) is CountingBatchSpanProcessor
    provider.get_tracer("t").start_span("one").end()
    assert provider.force_flush(5_000)
    assert "resourceSpans" in _lines(tmp_path / "telemetry.jsonl")[0]
    provider.shutdown()
    skipped = BatchedProvider(
        "traces",
        TracerProvider,
        TracerProvider.add_span_processor,
        CountingBatchSpanProcessor,
        skip=lambda: True,
    )
    empty = skipped(Resource.create({}), ExporterChoice("file", tmp_path), shared)
    assert empty._active_span_processor._span_processors == ()


def test_the_meter_provider_exports_at_the_interval_given(shared: JsonLinesFile) -> None:
    """An interval given is the push reader's, whatever the variable says."""
    provider, push = build_meter_provider(
        Resource.create({}), ExporterChoice("file", Path("x")), shared, interval_millis=12_345
    )
    assert push is not None and push._export_interval_millis == 12_345
    provider.shutdown()
