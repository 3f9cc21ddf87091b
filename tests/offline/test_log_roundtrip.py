"""Results emitted as log records, written to a file, read back offline: the same results.

The file is what groundwire writes without an OTLP endpoint: the app's spans, then the scores as
evaluation carrier spans and `gen_ai.evaluation.result` log records (`resourceLogs` lines), all
through groundwire's real OTLP/JSON-lines exporters on real SDK providers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire.exporters import (
    JsonLinesFile,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)
from groundwire.offline import (
    OtlpExport,
    RecordedResult,
    RescoreSummary,
    read_recorded_results,
    rescore,
)
from groundwire.offline._results import TurnResult
from groundwire.testing import OtlpGrpcReceiver, OtlpHttpReceiver

from ._traces import record_turns, write_groundwire_jsonl

TURNS = 4


class Verdict:
    """A deterministic evaluator with an explanation and details (the log record's body)."""

    name = "verdict"
    version = "3.0"

    def evaluate(self, turn: RagTurn) -> Score:
        """Pass turns whose answer quotes 330 metres; details name the quote."""
        good = "330 metres" in turn.answer
        return Score(
            name=self.name,
            value=1.0 if good else 0.0,
            label="pass" if good else "fail",
            explanation="quotes the height" if good else "misquotes the height",
            details={"quote": turn.answer.split('"')[1], "rows": [1, 2.5, True]},
        )


class Broken:
    """An evaluator that always fails (WARN records with `error.type`)."""

    name = "broken"

    def evaluate(self, turn: RagTurn) -> Score:
        """Fail."""
        raise KeyError("no such field")


def _evaluators() -> list[object]:
    """One built-in evaluator, one with details, one that fails."""
    return ["quoted_spans", Verdict(), Broken()]


def _scored(path: Path) -> RescoreSummary:
    """Re-score the file in memory."""
    return rescore([path], _evaluators(), on_problem=lambda _message: None)


def _emit_as_logs(results: list[TurnResult], path: Path) -> OtlpExport:
    """Send the results the way `--export-otlp` does, into the file, log records only."""
    shared = JsonLinesFile(path)
    export = OtlpExport(
        service_name="roundtrip",
        span_exporter=JsonLinesSpanExporter(shared),
        metric_exporter=JsonLinesMetricExporter(shared),
        log_exporter=JsonLinesLogExporter(shared),
        events="logs",
        evaluators=[Verdict()],
    )
    for result in results:
        export.send(result)
    export.close()
    return export


def _same(recorded: Score, emitted: Score) -> None:
    """A score read back equals the one emitted (a failure keeps its error type)."""
    assert (recorded.name, recorded.label, recorded.explanation, recorded.details) == (
        emitted.name,
        emitted.label,
        emitted.explanation,
        emitted.details,
    )
    if emitted.ok:
        assert recorded.value == emitted.value and recorded.error is None
    else:
        assert recorded.value is not None and math.isnan(recorded.value)
        assert recorded.error == (emitted.error or "").split(":", 1)[0]


@pytest.fixture
def recorded_file(tmp_path: Path) -> tuple[Path, RescoreSummary, OtlpExport]:
    """A trace file holding the turns and, appended, their scores as log records."""
    path = write_groundwire_jsonl(record_turns(TURNS), tmp_path / "telemetry.jsonl")
    first = _scored(path)
    assert first.results is not None and len(first.results) == TURNS
    export = _emit_as_logs(first.results, path)
    return path, first, export


def test_results_read_back_from_log_records_equal_those_emitted(
    recorded_file: tuple[Path, RescoreSummary, OtlpExport],
) -> None:
    """Every (turn, evaluator) comes back once, from its log record, on the turn's root span."""
    path, first, export = recorded_file
    assert first.results is not None
    assert (export.spans, export.log_records) == (TURNS, 3 * TURNS)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum("resourceLogs" in line for line in lines) >= 1
    found = read_recorded_results([path])
    assert len(found) == 3 * TURNS
    assert {r.source for r in found} == {"log"}
    by_key: dict[tuple[str, str, str], RecordedResult] = {
        (r.trace_id, r.span_id, r.score.name): r for r in found
    }
    for result in first.results:
        trace_id, span_id = result.key
        for name, emitted in result.scores.items():
            recorded = by_key[(trace_id, span_id, name)]
            _same(recorded.score, emitted)
            assert recorded.mode == semconv.EVALUATION_MODE_OFFLINE
            assert recorded.evaluator_version == ("3.0" if name == "verdict" else None)


def test_rescoring_a_file_with_log_results_leaves_them_out_and_scores_the_same(
    recorded_file: tuple[Path, RescoreSummary, OtlpExport], tmp_path: Path
) -> None:
    """Log records are no bad lines and no turns; --expected still joins; the scores repeat."""
    path, first, _ = recorded_file
    gold = tmp_path / "gold.jsonl"
    assert first.results is not None
    gold.write_text(
        "\n".join(
            json.dumps({"trace_id": r.turn.trace_id, "expected": "330 metres"})
            for r in first.results
        )
    )
    problems: list[str] = []
    again = rescore([path], _evaluators(), expected=gold, on_problem=problems.append)
    assert problems == [] and again.read.bad_records == 0
    assert again.counts.turns == TURNS
    assert (again.counts.evaluation_spans, again.counts.evaluation_logs) == (TURNS, 3 * TURNS)
    assert again.expected_matched == TURNS
    assert f"left out {TURNS} evaluation spans and {3 * TURNS} evaluation result log records" in (
        "\n".join(again.lines())
    )
    assert again.results is not None
    before = {r.key: r.scores for r in first.results}
    for result in again.results:
        assert result.turn.expected == ("330 metres",)
        for name, score in result.scores.items():
            earlier = before[result.key][name]
            assert score.model_dump(exclude={"value"}) == earlier.model_dump(exclude={"value"})
            assert score.value == earlier.value or (score.error and earlier.error)


def test_both_modes_in_one_file_are_read_once(tmp_path: Path) -> None:
    """events=both writes each score twice (span attributes and a log record): read once, from
    the log record; a span-only file is read from the carrier spans' attributes."""
    for events, source in (("both", "log"), ("span", "span")):
        path = write_groundwire_jsonl(record_turns(2), tmp_path / f"{events}.jsonl")
        first = _scored(path)
        assert first.results is not None
        shared = JsonLinesFile(path)
        export = OtlpExport(
            span_exporter=JsonLinesSpanExporter(shared),
            metric_exporter=JsonLinesMetricExporter(shared),
            log_exporter=JsonLinesLogExporter(shared),
            events=events,
        )
        for result in first.results:
            export.send(result)
        export.close()
        found = read_recorded_results([path])
        assert len(found) == 2 * 3, events
        assert {r.source for r in found} == {source}
        names = {(r.score.name, r.score.label) for r in found}
        assert ("broken", "error") in names


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_export_otlp_sends_log_records_on_the_turns_root_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    """--export-otlp over real OTLP/HTTP and gRPC: one result record per (turn, evaluator), with
    the turn's root span ids, mode `offline`, the Verdict evaluator's version and details."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    monkeypatch.setenv(semconv.ENV_EVENTS, "logs")
    path = write_groundwire_jsonl(record_turns(TURNS), tmp_path / "traces.jsonl")
    receiver_type = OtlpGrpcReceiver if protocol == "grpc" else OtlpHttpReceiver
    with receiver_type() as receiver:
        summary = rescore(
            [path], _evaluators(), export_otlp=receiver.endpoint, on_problem=lambda _m: None
        )
        assert receiver.wait_for(lambda r: len(r.log_records()) >= 3 * TURNS)
        assert receiver.wait_for(lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= TURNS)
        records = receiver.log_records(semconv.GEN_AI_EVALUATION_RESULT_EVENT)
        carriers = receiver.spans(semconv.EVALUATION_SPAN_NAME)
    assert (summary.exported_spans, summary.exported_log_records) == (TURNS, 3 * TURNS)
    assert summary.results is not None
    roots = {r.key for r in summary.results}
    assert {(r.trace_id, r.span_id) for r in records} == roots
    assert all(not c.events for c in carriers)  # events="logs": no span events
    verdicts = [r for r in records if r.attributes[semconv.GEN_AI_EVALUATION_NAME] == "verdict"]
    assert len(verdicts) == TURNS
    for record in verdicts:
        assert record.attributes[semconv.GROUNDWIRE_EVALUATION_MODE] == "offline"
        assert record.attributes[semconv.GROUNDWIRE_EVALUATOR_VERSION] == "3.0"
        assert set(record.body) == {"quote", "rows"}
    broken = [r for r in records if r.attributes[semconv.GEN_AI_EVALUATION_NAME] == "broken"]
    assert {(r.severity_text, r.attributes[semconv.ERROR_TYPE]) for r in broken} == {
        ("WARN", "KeyError")
    }


def test_a_protobuf_file_round_trips_too(tmp_path: Path) -> None:
    """The Collector's protobuf file layout (length-prefixed TracesData and LogsData frames):
    results read back from its log records equal those emitted; rescoring leaves them out."""
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from groundwire.emit import Emitter

    app_spans = record_turns(2)
    turns_path = write_groundwire_jsonl(app_spans, tmp_path / "turns.jsonl")
    first = _scored(turns_path)
    assert first.results is not None
    spans_out, logs_out = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_out))
    emitter = Emitter(
        tracer_provider=tracer_provider, logger_provider=logger_provider, events="logs"
    )
    for result in first.results:
        emitter.emit_span(result.key, list(result.scores.values()), mode="offline")
    tracer_provider.shutdown()
    logger_provider.shutdown()
    frames = [
        encode_spans(app_spans).SerializeToString(),
        encode_spans(spans_out.get_finished_spans()).SerializeToString(),
        encode_logs(logs_out.get_finished_logs()).SerializeToString(),
    ]
    path = tmp_path / "telemetry.pb"
    path.write_bytes(b"".join(len(frame).to_bytes(4, "big") + frame for frame in frames))
    found = {(r.trace_id, r.span_id, r.score.name): r for r in read_recorded_results([path])}
    assert len(found) == 2 * 3 and {r.source for r in found.values()} == {"log"}
    for result in first.results:
        for name, emitted in result.scores.items():
            _same(found[(*result.key, name)].score, emitted)
    again = rescore([path], ["quoted_spans"], on_problem=lambda _m: None)
    assert (again.counts.evaluation_spans, again.counts.evaluation_logs) == (2, 2 * 3)
    assert again.counts.turns == 2
    assert again.read.bad_records == 0
