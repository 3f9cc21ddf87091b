"""`rescore`: output schema, every format read back, resume, workers, gold answers, OTLP export."""

from __future__ import annotations

import asyncio
import csv
import json
import math
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire.evaluators import ERAG, FunctionGenerator
from groundwire.offline import WindowOptions, rescore
from groundwire.testing import OtlpGrpcReceiver, OtlpHttpReceiver
from tests.offline._traces import record_turns, write_groundwire_jsonl

TURNS = 12
FAST = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
"""The deterministic evaluators, without the (slow) sentence embedder."""


class Broken:
    """An evaluator that always raises, to pin how failures are written."""

    name = "broken"

    def evaluate(self, turn: RagTurn) -> Score:
        """Fail."""
        raise RuntimeError("boom")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve recorded turns as OTLP/JSON lines, traces split across lines."""
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    return write_groundwire_jsonl(record_turns(TURNS), path, batch=2)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_jsonl_records_have_exactly_the_documented_fields(traces: Path, tmp_path: Path) -> None:
    """Each line: trace_id, span_id (hex), query, scores (null when n/a or failed), details."""
    out = tmp_path / "out.jsonl"
    summary = rescore(traces, ["quoted_spans", Broken()], out)
    records = _jsonl(out)
    assert len(records) == TURNS == summary.turns_scored
    for record in records:
        assert list(record) == ["trace_id", "span_id", "query", "scores", "details"]
        assert len(record["trace_id"]) == 32 and len(record["span_id"]) == 16
        int(record["trace_id"], 16), int(record["span_id"], 16)
        assert record["scores"]["broken"] is None
        assert record["details"]["broken"]["error"] == "RuntimeError: boom"
        assert record["details"]["quoted_spans"]["details"]["total"] == 1
    by_query = {r["query"]: r["scores"]["quoted_spans"] for r in records}
    assert by_query["How tall is the Eiffel Tower? (0)"] == 1.0
    assert by_query["How tall is the Eiffel Tower? (1)"] == 0.0
    assert summary.read.spans == 3 * TURNS and summary.counts.traces == TURNS
    assert summary.tallies["broken"].failed == TURNS
    assert summary.means()["quoted_spans"] == pytest.approx(0.5)


def test_csv_xlsx_and_parquet_read_back(traces: Path, tmp_path: Path) -> None:
    """The tabular formats hold one row per turn with the same values as the .jsonl."""
    rescore(traces, FAST, tmp_path / "out.jsonl")
    want = {(r["trace_id"], r["span_id"]): r["scores"] for r in _jsonl(tmp_path / "out.jsonl")}

    rescore(traces, FAST, tmp_path / "out.csv")
    with (tmp_path / "out.csv").open(newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert {(r["trace_id"], r["span_id"]): float(r["quote_verification"]) for r in rows} == {
        key: scores["quote_verification"] for key, scores in want.items()
    }
    assert {r["quoted_spans.label"] for r in rows} == {"all_matched", "none_matched"}

    import openpyxl

    rescore(traces, FAST, tmp_path / "out.xlsx")
    book = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)
    sheet = list(book["turns"].iter_rows(values_only=True))
    header = list(sheet[0])
    assert header[:3] == ["trace_id", "span_id", "query"] and header[-1] == "details"
    column = header.index("quoted_spans")
    assert {(r[0], r[1]): r[column] for r in sheet[1:]} == {
        key: scores["quoted_spans"] for key, scores in want.items()
    }
    quotes = list(book["quotes"].iter_rows(values_only=True))
    assert len(quotes) == 1 + TURNS and quotes[0][3] == "quote"
    book.close()

    import pyarrow.parquet as pq

    rescore(traces, FAST, tmp_path / "out.parquet")
    table = pq.read_table(tmp_path / "out.parquet").to_pylist()
    assert {(r["trace_id"], r["span_id"]): r["quote_verification"] for r in table} == {
        key: scores["quote_verification"] for key, scores in want.items()
    }
    assert json.loads(table[0]["details"])["quote_verification"]["label"]


class _Structure(HTMLParser):
    """Collects the tags, classes and external references of an HTML document."""

    def __init__(self) -> None:
        super().__init__()
        self.sections = 0
        self.svgs = 0
        self.marks: list[tuple[str, str]] = []
        self.external: list[str] = []
        self._mark: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        for key in ("src", "href"):
            if found.get(key):
                self.external.append(str(found[key]))
        if tag == "script":
            self.external.append("script")
        self.sections += tag == "section"
        self.svgs += tag == "svg"
        if tag == "mark":
            self._mark = str(found.get("class"))

    def handle_data(self, data: str) -> None:
        if self._mark is not None:
            self.marks.append((self._mark, data))
            self._mark = None


def test_html_report_is_self_contained_with_plots_worst_first_and_highlights(
    traces: Path, tmp_path: Path
) -> None:
    """The report has one SVG plot per evaluator, worst turns first, quotes marked in context."""
    out = tmp_path / "report.html"
    rescore(traces, FAST, out)
    text = out.read_text(encoding="utf-8")
    parser = _Structure()
    parser.feed(text)
    assert parser.external == []
    assert parser.svgs == 2
    assert parser.sections == TURNS
    first = text.index('id="turn-1"')
    assert "500 metres wide" in text[first : text.index('id="turn-2"')]
    assert ("ok", "The Eiffel Tower is 330 metres tall") in parser.marks
    # 330 -> 500 is a changed number: its own state since issue 30 (was "bad", not verified)
    assert ("changed", "the Eiffel Tower is 500 metres wide") in parser.marks


def test_resume_skips_turns_already_written_and_repairs_a_cut_line(
    traces: Path, tmp_path: Path
) -> None:
    """After a run cut short (partial last line), resume appends only the missing turns."""
    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    full = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(full[:5]) + full[5][:20], encoding="utf-8")
    summary = rescore(traces, ["quoted_spans"], out, resume=True)
    assert summary.counts.resumed == 5
    assert summary.turns_scored == TURNS - 5
    records = _jsonl(out)
    assert sorted(json.dumps(r, sort_keys=True) for r in records) == sorted(
        json.dumps(json.loads(line), sort_keys=True) for line in full
    )


def test_resume_refuses_formats_that_cannot_append(traces: Path, tmp_path: Path) -> None:
    """--resume into .html is an error naming the formats that work."""
    with pytest.raises(ValueError, match=r"\.jsonl, \.csv"):
        rescore(traces, ["quoted_spans"], tmp_path / "r.html", resume=True)


def test_two_workers_give_the_same_results_as_one(traces: Path, tmp_path: Path) -> None:
    """workers=2 writes byte-identical output to workers=1 (same order, same values)."""
    rescore(traces, FAST, tmp_path / "one.jsonl", workers=1)
    rescore(traces, FAST, tmp_path / "two.jsonl", workers=2, chunk_size=3)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


def test_unpicklable_evaluators_with_workers_are_refused(traces: Path, tmp_path: Path) -> None:
    """workers > 1 with an evaluator that cannot be sent to a process fails up front, clearly."""

    class Local:
        name = "local"

        def evaluate(self, turn: RagTurn) -> Score:
            return Score(name="local", value=1.0)

    with pytest.raises(ValueError, match="by name"):
        rescore(traces, [Local()], tmp_path / "o.jsonl", workers=2)


def test_expected_answers_join_by_trace_id_or_query_for_erag(traces: Path, tmp_path: Path) -> None:
    """Gold answers joined by trace id or by query let eRAG score; other turns are n/a."""
    first = rescore(traces, ["quoted_spans"], None).results
    assert first is not None
    gold = tmp_path / "gold.jsonl"
    by_trace = {"trace_id": first[0].turn.trace_id, "expected": ["330 metres"]}
    by_query = {"query": "  how tall is the EIFFEL tower? (3) ", "answers": "river Seine"}
    gold.write_text(json.dumps(by_trace) + "\n" + json.dumps(by_query) + "\n")
    erag = ERAG(FunctionGenerator(lambda query, documents: documents[0]), metric="contains")
    summary = rescore(traces, [erag], None, expected=gold)
    assert summary.expected_matched == 2
    assert summary.results is not None
    values = {r.turn.query: r.scores["erag"].value for r in summary.results}
    assert values["How tall is the Eiffel Tower? (0)"] is not None
    assert values["How tall is the Eiffel Tower? (3)"] is not None
    assert values["How tall is the Eiffel Tower? (1)"] is None
    assert summary.tallies["erag"].scored == 2


def test_export_otlp_sends_evaluation_spans_under_the_original_turns(
    traces: Path, tmp_path: Path
) -> None:
    """Over real OTLP/HTTP: a carrier span per turn, child of and linked to its root; metrics."""
    with OtlpHttpReceiver() as receiver:
        summary = rescore(
            traces, ["quoted_spans"], tmp_path / "o.jsonl", export_otlp=receiver.endpoint
        )
        assert receiver.wait_for(
            lambda r: (
                len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= TURNS
                and bool(r.metric_points(semconv.METRIC_EVALUATION_SCORE))
            )
        )
        spans = receiver.spans(semconv.EVALUATION_SPAN_NAME)
        points = receiver.metric_points(semconv.METRIC_EVALUATION_SCORE)
    assert summary.exported_spans == TURNS
    turns = {(r["trace_id"], r["span_id"]) for r in _jsonl(tmp_path / "o.jsonl")}
    assert {(s.trace_id, s.parent_span_id) for s in spans} == turns
    for span in spans:
        assert [(link.trace_id, link.span_id) for link in span.links] == [
            (span.trace_id, span.parent_span_id)
        ]
        assert span.attributes[semconv.GROUNDWIRE_EVALUATION_MODE] == "offline"
        (event,) = span.events
        assert event.name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
        assert event.attributes[semconv.GEN_AI_EVALUATION_NAME] == "quoted_spans"
        assert not math.isnan(event.attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE])
    assert sum(point.count or 0 for point in points) == TURNS


class LoopBound:
    """An async evaluator holding an asyncio.Lock, which binds to the loop that first uses it."""

    name = "loop_bound"

    def __init__(self) -> None:
        self.lock = asyncio.Lock()

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Score 1.0 while holding the lock."""
        async with self.lock:
            await asyncio.sleep(0)
        return Score(name=self.name, value=1.0)


def test_async_evaluators_keep_one_loop_across_chunks_even_inside_a_running_loop(
    traces: Path,
) -> None:
    """Loop-bound async state works across chunks, and rescore runs from async code."""

    async def main() -> Any:
        return rescore(traces, [LoopBound(), "quoted_spans"], None, chunk_size=2)

    summary = asyncio.run(main())
    assert summary.tallies["loop_bound"].scored == TURNS
    assert summary.tallies["loop_bound"].failed == 0


def test_export_otlp_over_grpc_when_the_protocol_says_so(
    traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With OTEL_EXPORTER_OTLP_PROTOCOL=grpc the endpoint is a gRPC host:port."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with OtlpGrpcReceiver() as receiver:
        rescore(traces, ["quoted_spans"], tmp_path / "o.jsonl", export_otlp=receiver.endpoint)
        assert receiver.wait_for(
            lambda r: (
                len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= TURNS
                and bool(r.metric_points(semconv.METRIC_EVALUATIONS))
            )
        )


class NanDetails:
    """An evaluator whose details hold NaN and a tuple, which strict JSON cannot carry as is."""

    name = "nan_details"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score 0.5 with awkward details."""
        return Score(name=self.name, value=0.5, details={"x": math.nan, "t": (1, 2)})


def test_output_json_is_strict_when_details_hold_nan(traces: Path, tmp_path: Path) -> None:
    """NaN in details is written as null (strict JSON), tuples as lists, in .jsonl and .csv."""
    rescore(traces, [NanDetails()], tmp_path / "o.jsonl")
    line = (tmp_path / "o.jsonl").read_text(encoding="utf-8").splitlines()[0]
    assert "NaN" not in line
    record = json.loads(line)
    assert record["details"]["nan_details"]["details"] == {"x": None, "t": [1, 2]}
    rescore(traces, [NanDetails()], tmp_path / "o.csv")
    with (tmp_path / "o.csv").open(newline="", encoding="utf-8") as file:
        row = next(csv.DictReader(file))
    assert json.loads(row["details"])["nan_details"]["details"]["x"] is None


def test_earlier_evaluation_spans_in_the_file_are_left_out(tmp_path: Path) -> None:
    """Carrier spans from an earlier scoring (same file, arriving late) are neither turns nor
    counted as late spans."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from groundwire.emit import Emitter

    spans = record_turns(3)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    emitter = Emitter(tracer_provider=provider)
    roots = [s for s in spans if s.name == "rag"]
    for root in roots:
        target = (format(root.context.trace_id, "032x"), format(root.context.span_id, "016x"))  # type: ignore[union-attr]
        emitter.emit_span(target, [Score(name="quoted_spans", value=1.0)])
    path = write_groundwire_jsonl([*spans, *exporter.get_finished_spans()], tmp_path / "t.jsonl")
    summary = rescore(path, ["quoted_spans"], None, window=WindowOptions(grace=0))
    assert summary.turns_scored == 3
    assert summary.counts.evaluation_spans == 3
    assert summary.counts.late_spans == 0
