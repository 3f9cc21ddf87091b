"""Evaluation results as log-based `gen_ai.evaluation.result` events, checked on the wire.

Each wire test runs a small app in a fresh process (configure() builds providers a process may
build only once) that exports to a real OTLP receiver on loopback, then compares every log record
with the span it evaluated: event name, trace and span ids, severity, the whole attribute set and
the body, for each value of the `events` switch, with inline and background evaluators.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

import groundwire
from groundwire import RagTurn, Score, get_evaluator, semconv
from groundwire.emit import Emitter, content_capture_enabled, evaluator_version, resolve_events
from groundwire.exporters._logs import log_exporter
from groundwire.exporters._providers import choose_exporter
from groundwire.testing import (
    OtlpGrpcReceiver,
    OtlpHttpReceiver,
    ReceivedLogRecord,
    ReceivedSpan,
)

from .conftest import AnswerLength, HasContext, Telemetry, hex_ids, record_turn

ROOT = Path(__file__).resolve().parents[2]
TURNS = 2
VERSION = "2.1.0"
BODY = {"quotes": ({"quote": "the cat sat on the mat", "found": True, "ratio": 1.0},)}
"""The Quotes evaluator's details as the receiver decodes them (OTLP arrays become tuples)."""

APP = """
import json, sys
from opentelemetry import trace
import groundwire
from groundwire import Score
from tests.online.conftest import AnswerLength, Raises, record_turn

class Quotes:
    name = "quotes"
    version = "2.1.0"

    def evaluate(self, turn):
        return Score(
            name=self.name, value=1.0, label="verified", explanation="every quote found",
            details={"quotes": [{"quote": "the cat sat on the mat", "found": True, "ratio": 1.0}]},
        )

online = groundwire.configure(
    service_name="log-app",
    evaluators=[AnswerLength(), Quotes(), Raises()],
    inline=["answer_length"],
    instrument=False,
)
tracer = trace.get_tracer("app")
for _ in range(int(sys.argv[1])):
    record_turn(tracer)
print(json.dumps({"drained": groundwire.shutdown(10.0), "adds_up": online.stats().adds_up()}))
"""


def _run_app(env: dict[str, str], cwd: Path = ROOT) -> dict[str, Any]:
    """Run APP in a fresh process with only `env` among the OTEL_/GROUNDWIRE_ variables."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    clean.update(env)
    clean["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    clean.setdefault("OTEL_BSP_SCHEDULE_DELAY", "100")
    clean.setdefault("OTEL_BLRP_SCHEDULE_DELAY", "100")
    done = subprocess.run(
        [sys.executable, "-c", APP, str(TURNS)],
        env=clean,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"drained": True, "adds_up": True}
    return result


def _expected_attributes(name: str) -> dict[str, Any]:
    """The whole attribute set each evaluator's result record must carry."""
    mode = semconv.GROUNDWIRE_EVALUATION_MODE
    return {
        "answer_length": {
            semconv.GEN_AI_EVALUATION_NAME: "answer_length",
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: pytest.approx(0.47),
            semconv.GEN_AI_EVALUATION_SCORE_LABEL: "measured",
            mode: semconv.EVALUATION_MODE_INLINE,
        },
        "quotes": {
            semconv.GEN_AI_EVALUATION_NAME: "quotes",
            semconv.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
            semconv.GEN_AI_EVALUATION_SCORE_LABEL: "verified",
            semconv.GEN_AI_EVALUATION_EXPLANATION: "every quote found",
            semconv.GROUNDWIRE_EVALUATOR_VERSION: VERSION,
            mode: semconv.EVALUATION_MODE_BACKGROUND,
        },
        "raises": {
            semconv.GEN_AI_EVALUATION_NAME: "raises",
            semconv.GEN_AI_EVALUATION_SCORE_LABEL: "error",
            semconv.ERROR_TYPE: "RuntimeError",
            mode: semconv.EVALUATION_MODE_BACKGROUND,
        },
    }[name]


def _by_name(records: list[ReceivedLogRecord]) -> dict[str, list[ReceivedLogRecord]]:
    """Records grouped by evaluator name."""
    grouped: dict[str, list[ReceivedLogRecord]] = {}
    for record in records:
        grouped.setdefault(str(record.attributes[semconv.GEN_AI_EVALUATION_NAME]), []).append(
            record
        )
    return grouped


def _check_log_records(
    records: list[ReceivedLogRecord], spans: list[ReceivedSpan], *, body: bool
) -> None:
    """One record per (turn, evaluator), on the turn's root span, each compared whole."""
    roots = {(s.trace_id, s.span_id) for s in spans if s.name == "rag"}
    carriers = {s.span_id for s in spans if s.name == semconv.EVALUATION_SPAN_NAME}
    assert len(roots) == TURNS
    grouped = _by_name(records)
    assert sorted(grouped) == ["answer_length", "quotes", "raises"]
    for name, found in grouped.items():
        assert {(r.trace_id, r.span_id) for r in found} == roots, name
        assert not {r.span_id for r in found} & carriers
        for record in found:
            assert record.event_name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
            assert dict(record.attributes) == _expected_attributes(name)
            failed = name == "raises"
            assert (record.severity_number, record.severity_text) == (
                (13, "WARN") if failed else (9, "INFO")
            )
            assert record.scope == semconv.INSTRUMENTATION_SCOPE
            assert record.resource[semconv.SERVICE_NAME] == "log-app"
            assert record.time_unix_nano > 0
            if name == "quotes" and body:
                assert record.body == BODY
            else:
                assert record.body is None


def _check_span_events(spans: list[ReceivedSpan], *, events: bool) -> None:
    """The carrier span is there in every mode; result span events only when asked for."""
    roots = [s for s in spans if s.name == "rag"]
    carriers = [s for s in spans if s.name == semconv.EVALUATION_SPAN_NAME]
    assert len(carriers) == len(roots) == TURNS
    for carrier in carriers:
        assert carrier.attributes[semconv.OPENINFERENCE_SPAN_KIND] == "EVALUATOR"
        assert carrier.attributes["evaluations.0.evaluation.name"] == "quotes"
        names = [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in carrier.events]
        assert names == (["quotes", "raises"] if events else [])
    for root in roots:
        assert root.attributes["evaluations.0.evaluation.score"] == pytest.approx(0.47)
        assert [e.name for e in root.events] == (
            [semconv.GEN_AI_EVALUATION_RESULT_EVENT] if events else []
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "logs", "span_events"),
    [("logs", True, False), ("span", False, True), ("both", True, True)],
)
def test_each_mode_of_the_switch_over_otlp_http(mode: str, logs: bool, span_events: bool) -> None:
    """GROUNDWIRE_EVENTS=logs|span|both: log records on the evaluated span and/or span events."""
    with OtlpHttpReceiver() as receiver:
        _run_app({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, semconv.ENV_EVENTS: mode})
        assert receiver.wait_for(lambda r: len(r.spans()) >= 3 * TURNS, 5)
        if logs:
            assert receiver.wait_for(lambda r: len(r.log_records()) >= 3 * TURNS, 5)
            assert len(receiver.log_records()) == 3 * TURNS
            _check_log_records(receiver.log_records(), receiver.spans(), body=True)
        else:
            assert receiver.log_records() == [] and receiver.log_requests == 0
        _check_span_events(receiver.spans(), events=span_events)


@pytest.mark.slow
def test_log_records_over_grpc_without_content() -> None:
    """gRPC, GROUNDWIRE_HIDE_OUTPUTS=true: the same records arrive, none with a body."""
    with OtlpGrpcReceiver() as receiver:
        _run_app(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
                semconv.ENV_EVENTS: "logs",
                semconv.ENV_HIDE_OUTPUTS: "true",
            }
        )
        assert receiver.wait_for(lambda r: len(r.log_records()) >= 3 * TURNS, 5)
        assert receiver.wait_for(lambda r: len(r.spans()) >= 3 * TURNS, 5)
        _check_log_records(receiver.log_records(), receiver.spans(), body=False)


@pytest.mark.slow
def test_without_an_endpoint_results_are_resource_logs_lines(tmp_path: Path) -> None:
    """No endpoint: `resourceLogs` lines beside the spans and metrics in the OTLP/JSON file."""
    _run_app({}, cwd=tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "groundwire-telemetry.jsonl").open()]
    assert {"resourceSpans", "resourceMetrics", "resourceLogs"} <= {k for d in lines for k in d}
    records = [
        record
        for doc in lines
        for resource in doc.get("resourceLogs", ())
        for scope in resource["scopeLogs"]
        for record in scope["logRecords"]
    ]
    assert len(records) == 3 * TURNS
    assert {r["eventName"] for r in records} == {semconv.GEN_AI_EVALUATION_RESULT_EVENT}
    assert all(len(r["traceId"]) == 32 and len(r["spanId"]) == 16 for r in records)
    assert all(isinstance(r["severityNumber"], int) for r in records)


# --- in one process: the Emitter and configure() with an app's own logger provider ---------------


@pytest.fixture
def logs() -> Iterator[tuple[LoggerProvider, InMemoryLogRecordExporter]]:
    """The app's own SDK logger provider, read back in memory."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def test_configure_reuses_the_apps_logger_provider(
    telemetry: Telemetry,
    logs: tuple[LoggerProvider, InMemoryLogRecordExporter],
    online_cleanup: None,
) -> None:
    """logger_provider=: configure() emits through it, and shutdown flushes but keeps it open."""
    provider, exporter = logs
    online = groundwire.configure(
        evaluators=[HasContext()],
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        logger_provider=provider,
        instrument=False,
        events="logs",
    )
    assert online.logger_provider is provider and not online.owns_logger_provider
    root = record_turn(telemetry.tracer)
    assert groundwire.shutdown(5.0)
    (record,) = exporter.get_finished_logs()
    assert record.log_record.event_name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
    trace_id, span_id = hex_ids(root)  # type: ignore[arg-type]
    assert format(record.log_record.trace_id, "032x") == trace_id
    assert format(record.log_record.span_id, "016x") == span_id
    assert record.instrumentation_scope is not None
    assert record.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE
    carrier = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    assert len(carrier) == 1 and not carrier[0].events


class _ThreadNames(LogRecordProcessor):
    """Notes the thread each record is emitted on."""

    def __init__(self) -> None:
        self.names: list[tuple[str, str]] = []

    def on_emit(self, log_record: Any) -> None:
        """Record (evaluator, thread name)."""
        attributes = log_record.log_record.attributes or {}
        name = str(attributes.get(semconv.GEN_AI_EVALUATION_NAME))
        self.names.append((name, threading.current_thread().name))

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing buffered."""
        return True


def test_inline_log_records_are_emitted_off_the_apps_thread(
    telemetry: Telemetry, online_cleanup: None
) -> None:
    """Inline scores land on the root span on the app's thread; their log records are emitted
    later by groundwire's feeder thread, so the app's request pays nothing for them."""
    threads = _ThreadNames()
    provider = LoggerProvider()
    provider.add_log_record_processor(threads)
    groundwire.configure(
        evaluators=[AnswerLength(), HasContext()],
        inline=["answer_length"],
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        logger_provider=provider,
        instrument=False,
        events="logs",
    )
    record_turn(telemetry.tracer)
    deadline = time.monotonic() + 5
    while len(threads.names) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # the feeder picks the turn up; shutdown would drain on this thread
    assert groundwire.shutdown(5.0)
    app = threading.current_thread().name
    assert sorted(name for name, _ in threads.names) == ["answer_length", "has_context"]
    assert all(thread != app for _, thread in threads.names), threads.names
    (root,) = telemetry.finished("rag")
    assert root.attributes is not None
    assert root.attributes["evaluations.0.evaluation.name"] == "answer_length"
    assert not root.events


def test_span_mode_builds_no_logger_provider(telemetry: Telemetry, online_cleanup: None) -> None:
    """events="span" with no app logger provider: none is built, no logs file is written."""
    online = groundwire.configure(
        evaluators=[HasContext()],
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        instrument=False,
        events="span",
    )
    assert online.logger_provider is None and online.output_path is None


def test_a_bad_switch_value_names_the_argument_or_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, online_cleanup: None
) -> None:
    """events= and GROUNDWIRE_EVENTS accept logs, span, both; anything else fails clearly."""
    with pytest.raises(ValueError, match=r"events must be one of \['logs', 'span', 'both'\]"):
        groundwire.configure(evaluators=[HasContext()], events="spans", instrument=False)
    monkeypatch.setenv(semconv.ENV_EVENTS, "log")
    with pytest.raises(ValueError, match="GROUNDWIRE_EVENTS must be one of"):
        resolve_events()
    monkeypatch.setenv(semconv.ENV_EVENTS, " LOGS ")
    assert resolve_events() == "logs"
    monkeypatch.delenv(semconv.ENV_EVENTS)
    assert resolve_events() == semconv.EVENTS_BOTH
    assert groundwire._configure.get_online() is None


def test_emitter_body_truncation_and_version(
    logs: tuple[LoggerProvider, InMemoryLogRecordExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Body strings obey GROUNDWIRE_MAX_VALUE_LENGTH; NaN and odd values become AnyValues; an
    evaluator of unknown origin gets no version, a built-in one groundwire's."""
    monkeypatch.setenv(semconv.ENV_MAX_VALUE_LENGTH, "5")
    provider, exporter = logs
    emitter = Emitter(logger_provider=provider, events="logs", evaluators=[AnswerLength()])
    details = {"text": "0123456789", "nan": float("nan"), "pair": (1, "ab"), "obj": Path("x")}
    score = Score(name="answer_length", value=0.5, details=details)
    turn = RagTurn(query="q", answer="a", trace_id="1" * 32, span_id="2" * 16)
    assert emitter.emit_logs((turn.trace_id or "", turn.span_id or ""), [score], mode="x") == 1
    (record,) = exporter.get_finished_logs()
    assert record.log_record.body == {"text": "01234…", "nan": None, "pair": [1, "ab"], "obj": "x"}
    assert semconv.GROUNDWIRE_EVALUATOR_VERSION not in (record.log_record.attributes or {})
    assert evaluator_version(get_evaluator("quoted_spans")) == groundwire.__version__
    shipped = type("Shipped", (), {"__module__": "rapidfuzz.evaluators", "name": "shipped"})
    assert evaluator_version(shipped()) == importlib.metadata.version("rapidfuzz")
    declared = type("Declared", (), {"version": " 1.2 ", "name": "declared"})
    assert evaluator_version(declared()) == "1.2"


def test_otel_logs_exporter_none_exports_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard OTEL_LOGS_EXPORTER=none: groundwire's provider gets no log exporter."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    choice = choose_exporter("otlp", None)
    assert log_exporter(choice) is not None
    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    assert log_exporter(choice) is None


def test_a_logs_endpoint_alone_means_otlp_and_its_protocol_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OTEL_EXPORTER_OTLP_LOGS_ENDPOINT counts as an endpoint; ..._LOGS_PROTOCOL picks gRPC."""
    for name in list(os.environ):
        if name.startswith("OTEL_EXPORTER_OTLP_"):
            monkeypatch.delenv(name)
    assert choose_exporter("auto", None).kind == "file"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:4318/v1/logs")
    choice = choose_exporter("auto", None)
    assert choice.kind == "otlp"
    http = log_exporter(choice)
    assert type(http).__module__.startswith("opentelemetry.exporter.otlp.proto.http")
    http.shutdown()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "grpc")
    grpc = log_exporter(choice)
    assert type(grpc).__module__.startswith("opentelemetry.exporter.otlp.proto.grpc")
    grpc.shutdown()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, True),
        ({semconv.ENV_HIDE_DOCUMENT_TEXT: "true"}, False),
        ({semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT: "SPAN_ONLY"}, False),
        ({semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT: "no_content"}, False),
        ({semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT: "false"}, False),
        ({semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT: "EVENT_ONLY"}, True),
        ({semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT: "span_and_event"}, True),
    ],
)
def test_the_content_switches_gate_the_body(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: bool
) -> None:
    """groundwire's hide switches and the GenAI content switch decide whether details travel."""
    for name in (semconv.ENV_HIDE_DOCUMENT_TEXT, semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert content_capture_enabled() is expected
    score = Score(name="s", value=1.0, details={"quote": "text"})
    assert (Emitter(events="logs").results.body(score) is not None) is expected
