"""Reports say what happened: --export-otlp counts what the endpoint accepted; every summary
line's numbers are the run's counters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire import semconv
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import rescore
from groundwire.testing import OtlpHttpReceiver
from tests.offline._cli_files import write_turns

QUERIES = [f"question {i}" for i in range(5)]


def test_export_to_a_closed_port_reports_nothing_exported(tmp_path: Path) -> None:
    """Nothing listening: "exported 0 of 5", why, and exit 1, not "exported 5 ..." and exit 0."""
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    endpoint = "http://127.0.0.1:1"
    result = CliRunner(env={"OTEL_EXPORTER_OTLP_TIMEOUT": "1"}).invoke(
        app,
        ["rescore", str(traces), "-e", "quoted_spans", "-o", str(out), "--export-otlp", endpoint],
    )
    assert result.exit_code == ExitCode.EXPORT_FAILED, result.output
    assert f"exported 0 of 5 evaluation spans to {endpoint}" in result.stderr
    assert "not exported: 5 evaluation spans: " in result.stderr
    assert "--export-otlp delivered nothing" in result.stderr
    assert "Traceback" not in result.output
    assert len(out.read_text().splitlines()) == 5  # the results file is written all the same


def test_export_counts_what_the_receiver_accepted(tmp_path: Path) -> None:
    """A real receiver: the report's accepted count is what arrived there."""
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    with OtlpHttpReceiver() as receiver:
        summary = rescore(
            traces, ["quoted_spans"], tmp_path / "o.jsonl", export_otlp=receiver.endpoint
        )
        assert receiver.wait_for(lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= 5)
        arrived = len(receiver.spans(semconv.EVALUATION_SPAN_NAME))
        endpoint = receiver.endpoint
    assert summary.export is not None
    assert (summary.export.emitted, summary.export.accepted, summary.export.rejected) == (5, 5, 0)
    assert arrived == summary.export.accepted
    lines = summary.lines()
    assert f"exported 5 of 5 evaluation spans to {endpoint}" in lines
    assert lines[-1] == "5 evaluation result log records handed to the OTLP log exporter"
    assert summary.exported_log_records == 5


def test_every_summary_line_is_a_counter(tmp_path: Path) -> None:
    """Each number in the summary lines is the matching counter of the run."""
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    with traces.open("a") as file:
        file.write("not json\n")
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query": "question 4", "expected": ["x"]}) + "\n")
    out = tmp_path / "o.jsonl"
    rescore(traces, ["quoted_spans"], out)
    out.write_text("".join(out.read_text().splitlines(keepends=True)[:2]))
    summary = rescore(traces, ["quoted_spans"], out, resume=True, expected=gold)
    read, counts = summary.read, summary.counts
    assert (read.files, read.records, read.bad_records, read.spans) == (1, 6, 1, 15)
    assert (counts.traces, counts.turns, counts.resumed, summary.turns_scored) == (5, 5, 2, 3)
    lines = summary.lines()
    assert (
        lines[0] == "read 1 file(s): 6 records (1 bad, 0 metrics/logs), 15 spans, 5 traces, 5 turns"
    )
    assert lines[1].startswith("scored 3 turns in ") and lines[1].endswith(
        "skipped 2 (2 already in the output)"
    )
    assert "gold answers attached to 1 turns" in lines
    tally = summary.tallies["quoted_spans"]
    assert (tally.scored, tally.not_applicable, tally.failed, tally.skipped) == (3, 0, 0, 0)
    assert summary.evaluations == 3 and summary.evaluations_failed == 0
    assert summary.damaged_inputs == 1


def test_damage_and_duplicates_have_their_summary_lines(tmp_path: Path) -> None:
    """A cut gzip and a file given twice: the summary's damage and duplicate lines are counters."""
    import gzip

    traces = write_turns([f"q{i}" for i in range(40)], tmp_path / "t.jsonl")
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(traces.read_bytes())
    packed = gzip.compress(traces.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    summary = rescore([traces, copy, cut], ["quoted_spans"], tmp_path / "o.jsonl")
    read, counts = summary.read, summary.counts
    assert read.damaged_files == 1 and summary.damaged_inputs == 1 + read.bad_records
    assert counts.turns == summary.turns_scored == 40
    lines = summary.lines()
    assert "1 file(s) damaged or cut short: every record before the damage was read" in lines[2]
    assert (
        f"left out {counts.duplicate_spans} duplicate spans and {counts.duplicate_turns} "
        "duplicate turns (the same spans exported twice)"
    ) in lines
    assert counts.duplicate_spans + 3 * counts.duplicate_turns >= 120


def test_reassembly_evaluation_spans_and_interruption_lines(tmp_path: Path) -> None:
    """The reassembly, earlier-evaluation and interruption lines carry the run's counters."""
    from groundwire.offline._pipeline import WindowOptions
    from groundwire.offline.rescore import StopFlag
    from tests.offline._cli_files import _provider, turns_with_queries
    from tests.offline._traces import KIND, write_groundwire_jsonl

    spans = turns_with_queries([f"q{i}" for i in range(12)])
    provider, exporter = _provider()
    with provider.get_tracer("tests").start_as_current_span(
        "evaluation", attributes={KIND: semconv.SPAN_KIND_EVALUATOR}
    ):
        pass
    children = [span for span in spans if span.parent is not None]
    roots = [span for span in spans if span.parent is None]  # every root after every child
    ordered = [*children, *roots, *exporter.get_finished_spans()]
    traces = write_groundwire_jsonl(ordered, tmp_path / "t.jsonl", batch=2)
    window = WindowOptions(grace=0, max_traces=2)
    summary = rescore(traces, ["quoted_spans"], tmp_path / "o.jsonl", window=window)
    c = summary.counts
    assert c.forced_traces > 0 and c.evaluation_spans == 1
    lines = summary.lines()
    assert (
        f"reassembly: {c.forced_traces} traces released early to bound memory, "
        f"{c.late_spans} late spans ignored"
    ) in lines
    assert (
        "left out 1 evaluation spans and 0 evaluation result log records of earlier scoring"
        in lines
    )

    stop = StopFlag()
    plain = write_groundwire_jsonl(spans, tmp_path / "plain.jsonl", batch=3)
    summary = rescore(
        plain,
        ["quoted_spans"],
        tmp_path / "i.jsonl",
        chunk_size=2,
        progress=lambda _: stop.set(),
        stop=stop,
    )
    assert summary.interrupted
    assert summary.lines()[-1] == "interrupted: the output holds every turn scored before the stop"
    assert len((tmp_path / "i.jsonl").read_text().splitlines()) == summary.turns_scored == 2


def test_a_run_whose_every_evaluation_was_skipped_says_nothing_was_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No judge configured: the turns were read, not "scored", and the summary says why."""
    for name in ("GROUNDWIRE_JUDGE_MODEL", "OPENAI_MODEL", "GROUNDWIRE_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    summary = rescore(traces, ["groundedness"], tmp_path / "o.jsonl")
    lines = summary.lines()
    assert summary.tallies["groundedness"].skipped == 5
    assert lines[1].startswith("read 5 turns in "), lines
    assert "every evaluation skipped (5): nothing was scored" in lines
