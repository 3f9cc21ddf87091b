"""`build_otlp_providers` and `OtlpProviders`, rule by rule: given exporters replace the OTLP ones
(guarded, counted, never probed), providers for another resource share the queues and the metric
breaker, and shutdown closes everything once, by its deadline, saying what was not exported.

Real SDK providers over in-memory exporters and groundwire's JSON-lines metric exporter; no
network.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire._breaker import OPEN
from groundwire.exporters import (
    JsonLinesMetricExporter,
    OtlpProviders,
    OtlpTarget,
    build_otlp_providers,
)
from groundwire.exporters._guard import GuardedMetricExporter
from groundwire.exporters._otlp import _closing, _meter_closing, _millis

_TARGET = OtlpTarget(endpoint="http://127.0.0.1:9")
"""Never reached: every test gives its own exporters or shuts before an export."""


class FailingSpans(InMemorySpanExporter):
    """Spans that never reach the endpoint (a FAILURE answer)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Refuse the batch."""
        return SpanExportResult.FAILURE


class BrokenMeters(MeterProvider):
    """A meter provider whose shutdown raises, as the SDK's does when a reader missed the
    deadline."""

    def __init__(self, message: str) -> None:
        super().__init__(shutdown_on_exit=False)
        self.message = message

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        """Raise the message."""
        super().shutdown(timeout_millis=timeout_millis)
        raise RuntimeError(self.message)


def _providers(
    tmp_path: Path, *, spans: Any = None, logs: bool = True, **options: Any
) -> tuple[OtlpProviders, InMemorySpanExporter, InMemoryLogRecordExporter]:
    """Providers over in-memory span and log exporters and a metrics file."""
    span_exporter = spans if spans is not None else InMemorySpanExporter()
    log_exporter = InMemoryLogRecordExporter()
    given = {
        "traces": span_exporter,
        "logs": log_exporter,
        "metrics": JsonLinesMetricExporter(tmp_path / "metrics.jsonl"),
    }
    providers = build_otlp_providers(
        _TARGET, Resource.create({"service.name": "svc"}), logs=logs, exporters=given, **options
    )
    return providers, span_exporter, log_exporter


def _emit(providers: Any, spans: int, records: int) -> None:
    """End `spans` spans and emit `records` log records through the providers."""
    tracer = providers.tracer_provider.get_tracer("t")
    for index in range(spans):
        tracer.start_span(f"s{index}").end()
    if records:
        logger = providers.logger_provider.get_logger("t")
        for index in range(records):
            logger.emit(body=f"r{index}")


def test_given_exporters_are_guarded_counted_and_never_probed(tmp_path: Path) -> None:
    """Each given exporter sits behind a guard named for it, with no address to probe; the
    providers carry the target, the resource and no exit hook; the interval is kept."""
    providers, spans, logs = _providers(tmp_path, interval_millis=60_000)
    names = [guard.name for guard in providers.guards]
    assert names == [
        "traces exporter InMemorySpanExporter",
        "logs exporter InMemoryLogRecordExporter",
        "metrics exporter JsonLinesMetricExporter",
    ]
    assert [guard.address for guard in providers.guards] == [None, None, None]
    assert [guard.kind for guard in providers.guards] == ["spans", "log records", "metric exports"]
    assert providers.target is _TARGET and providers.interval_millis == 60_000
    assert providers.tracer_provider.resource.attributes["service.name"] == "svc"
    assert providers.tracer_provider._atexit_handler is None
    assert providers.logger_provider is not None
    assert providers.logger_provider._at_exit_handler is None
    assert providers.meter_provider._atexit_handler is None
    assert providers.meter_provider._sdk_config.views
    (push,) = providers.meter_provider._metric_readers
    assert push._export_interval_millis == 60_000
    assert isinstance(push._exporter, GuardedMetricExporter)
    _emit(providers, spans=3, records=2)
    assert providers.not_exported() == {"spans": 3, "log records": 2}
    assert providers.shutdown(5.0) is True
    assert len(spans.get_finished_spans()) == 3 and len(logs.get_finished_logs()) == 2
    assert providers.not_exported() == {}
    assert providers.guards[0].exported == 3 and providers.guards[1].exported == 2


def test_without_logs_there_is_no_logger_provider(tmp_path: Path) -> None:
    """`logs=False`: no logger provider or processor, and no log guard."""
    providers, _, _ = _providers(tmp_path, logs=False)
    assert providers.logger_provider is None and providers.log_processor is None
    assert [guard.kind for guard in providers.guards] == ["spans", "metric exports"]
    *_, logger_provider = providers.for_resource(Resource.create({}))
    assert logger_provider is None
    assert providers.shutdown(5.0) is True


def test_the_batch_delay_reaches_both_processors(tmp_path: Path) -> None:
    """`batch_delay_millis` is how long spans and log records wait for a batch."""
    providers, _, _ = _providers(tmp_path, batch_delay_millis=1234)
    span_batch = providers.span_processor._batch_processor
    assert span_batch._schedule_delay_millis == 1234
    assert providers.log_processor is not None
    assert providers.log_processor._batch_processor._schedule_delay_millis == 1234
    providers.shutdown(5.0)
    default, _, _ = _providers(tmp_path)
    assert default.span_processor._batch_processor._schedule_delay_millis == 5000
    default.shutdown(5.0)


def test_extra_readers_join_the_meter_provider(tmp_path: Path) -> None:
    """An extra reader (Prometheus in `serve`) reads the same meter provider."""
    extra = InMemoryMetricReader()
    providers = build_otlp_providers(
        _TARGET,
        Resource.create({}),
        extra_readers=(extra,),
        exporters={
            "traces": InMemorySpanExporter(),
            "logs": InMemoryLogRecordExporter(),
            "metrics": JsonLinesMetricExporter(tmp_path / "m.jsonl"),
        },
    )
    readers = providers.meter_provider._metric_readers
    assert len(readers) == 2 and readers[1] is extra
    providers.meter_provider.get_meter("t").create_counter("c").add(1)
    assert extra.get_metrics_data() is not None
    assert providers.shutdown(5.0) is True


def test_for_resource_shares_the_queues_and_the_metric_breaker(tmp_path: Path) -> None:
    """Providers for another resource: spans and records through the same processors; a new
    guarded metric exporter whose breaker is the metric guard's; listed for shutdown."""
    providers, spans, logs = _providers(tmp_path, interval_millis=30_000)
    resource = Resource.create({"service.name": "other"})
    tracer_provider, meter_provider, logger_provider = providers.for_resource(resource)
    assert tracer_provider.resource is resource and tracer_provider._atexit_handler is None
    assert tracer_provider._active_span_processor._span_processors == (providers.span_processor,)
    assert logger_provider is not None and logger_provider.resource is resource
    assert logger_provider._at_exit_handler is None
    processors = logger_provider._multi_log_record_processor._log_record_processors
    assert processors == (providers.log_processor,)
    metric_guard = providers.guards[2]
    added = providers.guards[-1]
    assert len(providers.guards) == 4 and added.breaker is metric_guard.breaker
    assert added.name.startswith("OTLP metrics endpoint http://127.0.0.1:9")
    assert providers.meter_providers == [meter_provider]
    assert meter_provider._sdk_config.resource is resource
    (push,) = meter_provider._metric_readers
    assert push._export_interval_millis == 30_000
    tracer_provider.get_tracer("t").start_span("other").end()
    logger_provider.get_logger("t").emit(body="other")
    added.deadline = 0.0  # the OTLP endpoint is never reached: nothing is sent
    providers.shutdown(2.0)
    assert [s.resource.attributes["service.name"] for s in spans.get_finished_spans()] == ["other"]
    assert len(logs.get_finished_logs()) == 1


def test_for_resource_without_a_metric_guard_gets_its_own_breaker(tmp_path: Path) -> None:
    """With no metric guard to share, the new metric exporter has a breaker of its own."""
    providers, _, _ = _providers(tmp_path)
    del providers.guards[2]
    providers.for_resource(Resource.create({}))
    assert providers.guards[-1].breaker is not providers.guards[0].breaker
    providers.guards[-1].deadline = 0.0
    providers.shutdown(2.0)


def test_not_exported_adds_up_by_kind_and_leaves_out_what_is_complete(tmp_path: Path) -> None:
    """Counts of guards of one kind add up; kinds with nothing missing are left out."""
    providers, _, _ = _providers(tmp_path)
    providers.guards[0].given = None
    providers.guards[0].settle(False, 2)
    providers.guards[1].given = None
    providers.guards[1].settle(False, 3)
    extra = providers.guards[0].__class__("traces again", None)
    extra.settle(False, 4)
    providers.guards.append(extra)
    assert providers.not_exported() == {"spans": 6, "log records": 3}
    providers.guards.clear()
    assert providers.not_exported() == {}
    providers.shutdown(2.0)


def test_shutdown_is_once_and_says_what_was_not_exported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Spans the exporter refused: shutdown returns False and one warning names the count, the
    deadline and the exporter (a failure with no address to probe opens its breaker); a second
    shutdown does nothing and returns True."""
    providers, _, _ = _providers(tmp_path, spans=FailingSpans())
    _emit(providers, spans=2, records=0)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert providers.shutdown(3.0) is False
    (line,) = [r.getMessage() for r in caplog.records if "not exported" in r.getMessage()]
    assert line == (
        "telemetry not exported at shutdown (deadline 3.0 s): 2 spans"
        "; unreachable: traces exporter FailingSpans"
    )
    caplog.clear()
    assert providers.shutdown(3.0) is True
    assert caplog.records == []


def test_shutdown_names_the_unreachable_endpoints(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Every guard whose breaker is open is named in the warning, once, sorted."""
    providers, _, _ = _providers(tmp_path, spans=FailingSpans())
    _emit(providers, spans=1, records=0)
    providers.guards[1].breaker.failure("down")
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert providers.shutdown(2.0) is False
    (line,) = [r.getMessage() for r in caplog.records if "not exported" in r.getMessage()]
    assert line.endswith(
        "; unreachable: logs exporter InMemoryLogRecordExporter, traces exporter FailingSpans"
    )
    assert providers.guards[0].breaker.state == OPEN


def test_a_meter_provider_that_fails_to_close_is_one_line_and_false(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A meter provider raising at shutdown: one warning with the first line of the error,
    shutdown returns False, nothing is raised."""
    providers, _, _ = _providers(tmp_path)
    providers.meter_providers.append(BrokenMeters("missed the deadline\nmore detail"))
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert providers.shutdown(2.0) is False
    lines = [r.getMessage() for r in caplog.records]
    assert "closing a meter provider: missed the deadline" in lines
    assert not [line for line in lines if "more detail" in line]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info]


def test_meter_closing_names_an_error_without_a_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An error with no message is named by its type; a good close is True."""
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        assert _meter_closing(BrokenMeters(""), time.monotonic() + 1)() is False
    assert "closing a meter provider: RuntimeError" in caplog.text
    assert "closing a meter provider failed" in caplog.text
    fine = MeterProvider(shutdown_on_exit=False)
    assert _meter_closing(fine, time.monotonic() + 1)() is True


def test_closing_flushes_with_what_is_left_then_closes(caplog: pytest.LogCaptureFixture) -> None:
    """The flush gets the milliseconds left; a flush answering False is False, any other
    answer True; an error is a warning naming it, and False."""
    calls: list[object] = []

    def flush(millis: int) -> object:
        calls.append(millis)
        return None

    assert _closing(flush, lambda: calls.append("closed"), time.monotonic() + 2.0)() is True
    assert 1_000 < int(str(calls[0])) <= 2_000 and calls[1] == "closed"
    assert _closing(lambda _m: False, lambda: None, time.monotonic() + 1)() is False
    assert _closing(lambda _m: True, lambda: None, time.monotonic() + 1)() is True

    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        assert _closing(lambda _m: True, broken, time.monotonic() + 1)() is False
    assert "closing a telemetry provider failed: OSError: disk full" in caplog.text
    assert "closing a telemetry provider failed\n" in caplog.text + "\n"


def test_millis_is_what_is_left_and_at_least_one() -> None:
    """Whole milliseconds before the deadline; a passed deadline still gives 1."""
    assert 2_900 <= _millis(time.monotonic() + 3.0) <= 3_000
    assert _millis(time.monotonic() - 5.0) == 1
    assert _millis(time.monotonic() + 0.0015) == 1


def test_defaults_give_logs_and_every_provider_the_resource(tmp_path: Path) -> None:
    """Without `logs=`, a logger provider is built; every provider carries the resource; an
    interval given reaches the metric reader."""
    resource = Resource.create({"service.name": "svc"})
    providers = build_otlp_providers(
        _TARGET,
        resource,
        interval_millis=12_345,
        exporters={
            "traces": InMemorySpanExporter(),
            "logs": InMemoryLogRecordExporter(),
            "metrics": JsonLinesMetricExporter(tmp_path / "m.jsonl"),
        },
    )
    assert providers.logger_provider is not None
    assert providers.logger_provider.resource.attributes["service.name"] == "svc"
    assert providers.meter_provider._sdk_config.resource.attributes["service.name"] == "svc"
    (push,) = providers.meter_provider._metric_readers
    assert push._export_interval_millis == 12_345
    assert providers.shutdown(5.0) is True


class HangingSpans(InMemorySpanExporter):
    """An exporter whose export blocks until it is shut down (a Collector that never answers)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.shut = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Block until released or shut."""
        self.release.wait(10)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Release the export in progress."""
        self.shut.set()
        self.release.set()


class HangingMetrics(MetricExporter):
    """A metric exporter whose export blocks until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Block until released."""
        self.release.wait(10)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Nothing buffered."""
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Wait for the export in progress, as an exporter stuck in a call does."""
        self.release.wait(10)


def test_shutdown_abandons_what_hangs_and_says_which(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An export that never returns: shutdown returns by its deadline with False, stops the
    hanging exporters, and one warning names the counts and the calls abandoned."""
    spans = HangingSpans()
    logs = HangingSpans()
    providers = build_otlp_providers(
        _TARGET,
        Resource.create({}),
        batch_delay_millis=10,
        exporters={
            "traces": spans,
            "logs": logs,
            "metrics": JsonLinesMetricExporter(tmp_path / "m.jsonl"),
        },
    )
    providers.tracer_provider.get_tracer("t").start_span("s").end()
    providers.logger_provider.get_logger("t").emit(body="r")  # type: ignore[union-attr]
    time.sleep(0.2)  # both exports are now waiting
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        started = time.monotonic()
        assert providers.shutdown(0.5) is False
        assert time.monotonic() - started < 2.0
    assert spans.shut.is_set() and logs.shut.is_set()
    (line,) = [r.getMessage() for r in caplog.records if "not exported" in r.getMessage()]
    assert line == (
        "telemetry not exported at shutdown (deadline 0.5 s): 1 spans, 1 log records"
        "; still running, abandoned: shut tracer provider, shut logger provider"
    )


def test_shutdown_with_only_a_hanging_meter_says_nothing_missing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only a metric export hangs: nothing counted missing, the meter close is abandoned."""
    metrics = HangingMetrics()
    providers = build_otlp_providers(
        _TARGET,
        Resource.create({}),
        exporters={
            "traces": InMemorySpanExporter(),
            "logs": InMemoryLogRecordExporter(),
            "metrics": metrics,
        },
    )
    providers.meter_provider.get_meter("t").create_counter("c").add(1)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert providers.shutdown(0.5) is False
    metrics.release.set()
    (line,) = [r.getMessage() for r in caplog.records if "not exported" in r.getMessage()]
    assert line == (
        "telemetry not exported at shutdown (deadline 0.5 s): nothing"
        "; still running, abandoned: shut meter provider 0"
    )


def test_a_zero_deadline_leaves_no_time_to_export(tmp_path: Path) -> None:
    """shutdown(0) (or less) has no time: queued spans are not exported, the answer is False."""
    providers, spans, _ = _providers(tmp_path, batch_delay_millis=60_000)
    _emit(providers, spans=2, records=0)
    assert providers.shutdown(0.0) is False
    assert spans.get_finished_spans() == ()


def test_closing_lines_are_exact_with_the_traceback_in_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A provider that fails to close: one warning in these words, the traceback at debug."""

    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        _closing(lambda _m: True, broken, time.monotonic() + 1)()
        _meter_closing(BrokenMeters("late"), time.monotonic() + 1)()
    messages = {r.getMessage(): r for r in caplog.records}
    assert "closing a telemetry provider failed: OSError: disk full" in messages
    closing = messages["closing a telemetry provider failed"].exc_info
    assert isinstance(closing, tuple) and closing[0] is OSError
    meter = messages["closing a meter provider failed"].exc_info
    assert isinstance(meter, tuple) and meter[0] is RuntimeError
