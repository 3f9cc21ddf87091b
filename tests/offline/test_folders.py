"""Folder inputs, whole traces across files in any order, and incomplete traces (local engine)."""

from __future__ import annotations

import gzip
import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from typer.testing import CliRunner

from groundwire.assembly import SpanRecord
from groundwire.cli import app
from groundwire.offline import StopFlag, rescore
from groundwire.offline._grouping import ROOT_MISSING, SPANS_MISSING, order_key, trace_gap
from groundwire.offline._inputs import expand_inputs
from tests.offline._traces import KIND, record_turns, write_groundwire_jsonl

SPEC = {"quoted_spans": {}, "quote_verification": {"embedder": None}}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten turns as OTLP/JSON lines, two spans a line, so most traces straddle two lines."""
    folder = tmp_path_factory.mktemp("recorded")
    return write_groundwire_jsonl(record_turns(10), folder / "all.jsonl", batch=2)


@pytest.fixture(scope="module")
def unsplit_rows(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The rows of the whole file scored in one piece, sorted."""
    out = tmp_path_factory.mktemp("unsplit") / "out.jsonl"
    summary = rescore(recorded, SPEC, out)
    assert summary.turns_scored == 10 and not summary.counts.incomplete
    return sorted(out.read_text().splitlines())


def _cut(path: Path, cuts: list[int], folder: Path) -> list[Path]:
    """`path` cut at the given line numbers into parts named part-0.jsonl, part-1.jsonl, ..."""
    lines = path.read_text().splitlines(keepends=True)
    bounds = [0, *cuts, len(lines)]
    parts = []
    for index, (start, end) in enumerate(itertools.pairwise(bounds)):
        part = folder / f"part-{index}.jsonl"
        part.write_text("".join(lines[start:end]))
        parts.append(part)
    return parts


def _trace_ids(rows: list[str]) -> list[str]:
    """The trace id of each output row, in order."""
    return [json.loads(row)["trace_id"] for row in rows]


def test_traces_cut_across_files_in_any_order_give_the_unsplit_rows(
    recorded: Path, unsplit_rows: list[str], tmp_path: Path
) -> None:
    """Parts read in reverse order (roots before their children): every trace whole, rows equal."""
    parts = _cut(recorded, [3, 4, 9, 11], tmp_path)
    out = tmp_path / "reversed.jsonl"
    summary = rescore(list(reversed(parts)), SPEC, out)
    rows = out.read_text().splitlines()
    assert sorted(rows) == unsplit_rows
    assert summary.counts.traces == 10 and not summary.counts.incomplete
    ids = _trace_ids(rows)
    assert ids == sorted(ids, key=order_key), "several files: rows in order_key order"
    forward = tmp_path / "forward.jsonl"
    rescore(parts, SPEC, forward, workers=2)
    assert forward.read_text().splitlines() == rows, "same rows, same order, any file order"


def test_a_folder_reads_nested_plain_and_compressed_files_and_skips_non_trace_files(
    recorded: Path, unsplit_rows: list[str], tmp_path: Path
) -> None:
    """Nested folders, .gz beside plain, a README and a hidden file: all traces, one notice."""
    root = tmp_path / "otel-traces"
    (root / "2026" / "11").mkdir(parents=True)
    (root / ".cache").mkdir()
    parts = _cut(recorded, [5, 10], tmp_path)
    (root / "traces-a.jsonl").write_bytes(parts[0].read_bytes())
    (root / "2026" / "11" / "traces-b.json.gz").write_bytes(gzip.compress(parts[1].read_bytes()))
    (root / "2026" / "traces-c.jsonl").write_bytes(parts[2].read_bytes())
    (root / "README.md").write_text("not traces")
    (root / ".cache" / "x.jsonl").write_text("{}\n")
    notices: list[str] = []
    files = expand_inputs([root], on_problem=notices.append)
    assert [f.relative_to(root).as_posix() for f in files] == [
        "2026/11/traces-b.json.gz",
        "2026/traces-c.jsonl",
        "traces-a.jsonl",
    ]
    assert len(notices) == 1 and "README.md" in notices[0] and "skipped 1 file" in notices[0]
    out = tmp_path / "out.jsonl"
    summary = rescore(root, SPEC, out, on_problem=notices.append)
    assert sorted(out.read_text().splitlines()) == unsplit_rows
    assert summary.read.files == 3 and summary.total_bytes == sum(f.stat().st_size for f in files)


def test_glob_narrows_a_folder(recorded: Path, tmp_path: Path) -> None:
    """--glob keeps only the files whose path under the folder matches, at any depth."""
    root = tmp_path / "in"
    (root / "old").mkdir(parents=True)
    parts = _cut(recorded, [10], tmp_path)
    (root / "keep.jsonl").write_bytes(parts[0].read_bytes())
    (root / "old" / "keep-too.jsonl").write_bytes(parts[1].read_bytes())
    (root / "drop.json").write_bytes(parts[1].read_bytes())
    files = expand_inputs([root], glob="keep*.jsonl")
    assert [f.name for f in files] == ["keep.jsonl", "keep-too.jsonl"], "sorted by relative path"
    assert [f.name for f in expand_inputs([root], glob="old/*.jsonl")] == ["keep-too.jsonl"]
    with pytest.raises(FileNotFoundError, match=r"no trace files matching '\*\.pb'"):
        expand_inputs([root], glob="*.pb")


def test_cli_reads_a_folder_with_glob_and_reports_a_non_trace_file(
    recorded: Path, unsplit_rows: list[str], tmp_path: Path
) -> None:
    """`groundwire rescore DIR --glob` scores every trace; a .json that is no trace is reported."""
    root = tmp_path / "in"
    root.mkdir()
    for part in _cut(recorded, [2, 7], tmp_path):
        (root / part.name).write_bytes(part.read_bytes())
    (root / "settings.json").write_text('{"service": "rag", "debug": true}\n')
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app, ["rescore", str(root), "--glob", "*.json*", "-e", "quoted_spans", "-o", str(out)]
    )
    # The stray file is reported and skipped like a bad record: partial input, exit 3.
    assert result.exit_code == 3, result.output
    assert "settings.json" in result.stderr and "skipped" in result.stderr
    assert "read 3 file(s): 15 records (1 bad" in result.stderr and "10 turns" in result.stderr
    assert len(out.read_text().splitlines()) == len(unsplit_rows)


def test_missing_path_and_empty_folder_are_clear_errors(tmp_path: Path) -> None:
    """A missing path and a folder without trace files fail up front, naming them."""
    with pytest.raises(FileNotFoundError, match=r"no such trace file or folder: .*nope"):
        rescore(tmp_path / "nope", ["quoted_spans"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("x")
    with pytest.raises(FileNotFoundError, match=r"no trace files named .* in .*empty"):
        rescore(tmp_path / "empty", ["quoted_spans"], on_problem=lambda _: None)


def test_a_window_cut_mid_trace_is_reported_incomplete_not_scored(tmp_path: Path) -> None:
    """Only the first part of a cut trace (a retriever, no model call, no root): counted
    incomplete, never scored."""
    spans = record_turns(3)
    cut = write_groundwire_jsonl(spans[:7], tmp_path / "first.jsonl", batch=2)  # 2 whole + 1
    assert spans[6].name == "retrieve"
    out = tmp_path / "out.jsonl"
    summary = rescore(cut, SPEC, out)
    assert summary.turns_scored == 2
    assert summary.counts.incomplete == {ROOT_MISSING: 1}
    assert "1 traces incomplete, not scored (1 root span missing)" in "\n".join(summary.lines())
    two = rescore([cut, cut], SPEC, tmp_path / "twice.jsonl")
    assert (two.turns_scored, two.counts.incomplete) == (2, {ROOT_MISSING: 1})


def test_children_of_a_root_that_never_arrived_make_their_turn(
    recorded: Path, tmp_path: Path
) -> None:
    """A cut that keeps a turn's retriever and model call but not its root (an instrumentor
    that never ended the root span looks the same): the children make the turn under a
    stand-in for the root, and the summary says so."""
    lines = recorded.read_text().splitlines(keepends=True)
    first = tmp_path / "first.jsonl"
    first.write_text("".join(lines[:4]))  # turns 0-1 whole, turn 2's retriever and model call
    summary = rescore(first, SPEC, tmp_path / "out.jsonl")
    assert summary.turns_scored == 3
    assert (summary.counts.incomplete, summary.counts.parent_missing) == ({}, 1)
    assert "1 traces scored without a parent span that never arrived" in "\n".join(summary.lines())


def _spans(provider_spans: Sequence[ReadableSpan]) -> list[SpanRecord]:
    """SDK spans as SpanRecords."""
    return [SpanRecord.from_readable(span) for span in provider_spans]


def test_trace_gap_names_what_is_missing() -> None:
    """Whole: None; children without their root: root missing; a hole under the root: spans."""
    spans = _spans(record_turns(1))
    by_name = {span.name: span for span in spans}
    assert trace_gap(spans) is None
    assert trace_gap([by_name["retrieve"], by_name["llm"]]) == ROOT_MISSING
    assert trace_gap([by_name["retrieve"]]) == ROOT_MISSING
    hole = [by_name["rag"], _child_of(by_name["llm"], "0000000000000bad")]
    assert trace_gap(hole) == SPANS_MISSING
    assert trace_gap([by_name["retrieve"]], absent={by_name["rag"].span_id}) is None


def _child_of(span: SpanRecord, parent: str) -> SpanRecord:
    """`span` re-parented under a span id that is not in the trace."""
    return SpanRecord(
        span.trace_id,
        span.span_id,
        parent,
        span.name,
        span.start_time_ns,
        span.end_time_ns,
        dict(span.attributes),
    )


def test_a_turn_under_an_unrecorded_upstream_parent_is_still_scored(tmp_path: Path) -> None:
    """A chain whose parent is another service's span (not flagged remote) is a whole trace."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    upstream = NonRecordingSpan(
        SpanContext(0x5B8EFFF798038103D269B633813FC60C, 0xEEE19B7EC3C1B173, False, TraceFlags(1))
    )
    with tracer.start_as_current_span(
        "rag",
        context=trace.set_span_in_context(upstream),
        attributes={KIND: "CHAIN", "input.value": "q?", "output.value": 'It says "Paris".'},
    ):
        with tracer.start_as_current_span(
            "retrieve",
            attributes={KIND: "RETRIEVER", "retrieval.documents.0.document.content": "Paris."},
        ):
            pass
        with tracer.start_as_current_span("llm", attributes={KIND: "LLM", "output.value": "x"}):
            pass
    provider.shutdown()
    path = write_groundwire_jsonl(exporter.get_finished_spans(), tmp_path / "t.jsonl", batch=3)
    summary = rescore(path, ["quoted_spans"])
    assert (summary.turns_scored, summary.counts.incomplete) == (1, {})


def test_a_stop_while_grouping_reads_ends_the_run_as_interrupted(
    recorded: Path, tmp_path: Path
) -> None:
    """Ctrl-C (the stop flag) during the read phase of grouping: no turn, interrupted, OUT valid."""
    parts = _cut(recorded, [6], tmp_path)
    stop = StopFlag()
    out = tmp_path / "out.jsonl"
    summary = rescore(parts, SPEC, out, stop=stop, progress=lambda _: stop.set())
    assert summary.interrupted and summary.turns_scored == 0
    assert out.read_text() == ""


def test_notices_go_to_stderr_by_default(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without `on_problem`, a file passed over in a folder is one `groundwire: ...` line on
    stderr, nothing on stdout."""
    root = tmp_path / "traces"
    root.mkdir()
    (root / "traces.jsonl").write_bytes(recorded.read_bytes())
    (root / "README.md").write_text("not traces")
    rescore(root, SPEC, tmp_path / "out.jsonl")
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("groundwire: ") and "README.md" in line and "skipped 1 file" in line
    assert captured.out == ""
