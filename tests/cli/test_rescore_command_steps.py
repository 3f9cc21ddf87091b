"""`groundwire rescore`'s steps, each pinned: the checks, the progress bar, the Phoenix switch,
how failures exit, and what the report prints (in-process, real trace files and writers)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._errors import CliError
from groundwire.cli._exit import ExitCode
from groundwire.cli._phoenix import PhoenixCommand
from groundwire.cli._rescore import _check, _Display, _fail, _phoenix, _progress, _summary_table
from groundwire.cli._rescore_options import RescoreArgs
from groundwire.offline import EvaluatorTally, ReadStats, RescoreSummary
from groundwire.offline.ray_engine import RayEngineError
from groundwire.phoenix import PhoenixError
from groundwire.phoenix._client import PhoenixNotFoundError
from tests.offline._cli_files import write_spans_without_turns, write_turns

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def _args(tmp_path: Path, **changes: Any) -> RescoreArgs:
    """`RescoreArgs` as the command builds them from its defaults, with `changes`."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    given: dict[str, Any] = {field.name: None for field in dataclasses.fields(RescoreArgs)}
    given.update(
        paths=[trace], evaluators=["quoted_spans"], out=tmp_path / "o.jsonl", strict=False,
        resume=False, workers=1, engine="local", concurrency=8, grace=8, quiet=False,
        allow_empty=False, annotate_phoenix=False, phoenix_page_size=1000,
    )  # fmt: skip
    return RescoreArgs(**{**given, **changes})


def _refused(call: Any, *args: Any) -> CliError:
    """The CliError `call(*args)` raises."""
    with pytest.raises(CliError) as caught:
        call(*args)
    return caught.value


# --- the progress words and the score table -------------------------------------------------


def _summary(tallies: dict[str, EvaluatorTally], scored: int, elapsed: float) -> RescoreSummary:
    return RescoreSummary(["x"], None, turns_scored=scored, tallies=tallies, elapsed_s=elapsed)


def test_progress_says_turns_scored_and_their_rate() -> None:
    """Turns scored per second once any evaluation ran (n/a and failed count as ran)."""
    assert _progress(_summary({"a": EvaluatorTally(scored=1)}, 5, 2.0)) == "5 turns scored (2.5/s)"
    assert _progress(_summary({"a": EvaluatorTally(failed=1, skipped=3)}, 4, 0.0)) == (
        "4 turns scored (0.0/s)"
    )
    assert _progress(_summary({"a": EvaluatorTally(not_applicable=1, skipped=1)}, 1, 4.0)) == (
        "1 turns scored (0.2/s)"
    )


def test_progress_says_when_every_evaluation_was_skipped() -> None:
    """Turns read but every evaluation skipped (no judge): said instead of a rate."""
    assert _progress(_summary({"a": EvaluatorTally(skipped=3)}, 3, 1.0)) == (
        "3 turns read, every evaluation skipped"
    )
    assert _progress(_summary({"a": EvaluatorTally(skipped=3)}, 0, 1.0)) == "0 turns scored (0.0/s)"
    assert _progress(_summary({"a": EvaluatorTally()}, 2, 1.0)) == "2 turns scored (2.0/s)"


def test_the_score_table_has_a_row_per_evaluator() -> None:
    """Evaluator, scored, mean (3 places, a dash without one), n/a, failed, skipped."""
    tallies = {
        "a": EvaluatorTally(scored=2, not_applicable=1, failed=3, skipped=4, total=1.0),
        "b": EvaluatorTally(failed=1),
    }
    table = _summary_table(_summary(tallies, 2, 1.0))
    assert (table.title, table.title_justify) == ("scores", "left")
    headers = ["evaluator", "scored", "mean", "n/a", "failed", "skipped"]
    assert [column.header for column in table.columns] == headers
    assert [column.justify for column in table.columns] == ["left"] + ["right"] * 5
    cells = [list(column.cells) for column in table.columns]
    assert [list(row) for row in zip(*cells, strict=True)] == [
        ["a", "2", "0.500", "1", "3", "4"],
        ["b", "0", "–", "0", "1", "0"],
    ]


# --- the checks ------------------------------------------------------------------------------


def test_check_builds_evaluators_for_one_local_process(tmp_path: Path) -> None:
    """One local process gets built evaluators; no export unless asked."""
    plan = _check(_args(tmp_path))
    assert plan.names == ["quoted_spans"]
    assert [type(e).__name__ for e in plan.spec] == ["QuotedSpans"]
    assert plan.export is False


def test_check_passes_names_and_options_to_worker_processes(tmp_path: Path) -> None:
    """Several workers (or Ray) get names -> options, which pickle."""
    options = '{"quoted_spans": {"min_len": 2}}'
    plan = _check(_args(tmp_path, workers=2, options=options))
    assert plan.spec == {"quoted_spans": {"min_len": 2}}
    assert _check(_args(tmp_path, engine="ray")).spec == {"quoted_spans": {}}


@pytest.mark.parametrize(("given", "export"), [("env", True), ("", True), ("c:4317", "c:4317")])
def test_check_reads_the_export_target(tmp_path: Path, given: str, export: object) -> None:
    """A bare `--export-otlp` means the variables; a value is a checked endpoint."""
    assert _check(_args(tmp_path, export_otlp=given)).export == export


def test_check_refuses_a_bad_format_engine_or_endpoint(tmp_path: Path) -> None:
    """Each with one line, exit 2; a format gets the nearest one."""
    error = _refused(_check, _args(tmp_path, fmt="jeager"))
    assert str(error).startswith("--format: 'jeager' is not one of otlp-json, ")
    assert str(error).endswith(" (did you mean 'jaeger'?)")
    assert error.code is ExitCode.BAD_ARGUMENTS
    assert str(_refused(_check, _args(tmp_path, engine="spark"))) == (
        "--engine: 'spark' is not local or ray"
    )
    assert "is not an OTLP endpoint" in str(_refused(_check, _args(tmp_path, export_otlp="x")))
    assert _check(_args(tmp_path, fmt="otlp-json")).names == ["quoted_spans"]


def test_check_reads_the_paths(tmp_path: Path) -> None:
    """Inputs, the expected file and the baseline are checked before anything runs."""
    missing = tmp_path / "missing.jsonl"
    assert "does not exist" in str(
        _refused(_check, _args(tmp_path, expected=None, paths=[missing]))
    )
    out = tmp_path / "o.jsonl"
    assert "--baseline file" in str(_refused(_check, _args(tmp_path, out=out, baseline=out)))


# --- the progress bar ------------------------------------------------------------------------


def test_display_follows_the_bytes_read_on_the_local_engine(tmp_path: Path) -> None:
    """Local: the bar's total is the input size, completed the bytes read, then filled."""
    display = _Display(_args(tmp_path))
    assert display.local is True
    assert display.progress.disable is False
    task = display.progress.tasks[0]
    assert (task.description, task.total) == ("reading", None)
    summary = RescoreSummary(["x"], None, total_bytes=100, read=ReadStats(bytes_done=40))
    summary.turns_scored = 3
    display.on_progress(summary)
    assert (task.total, task.completed) == (100, 40)
    assert task.description == "3 turns scored (0.0/s)"
    display.done(summary)
    assert task.completed == 100


def test_display_without_a_known_size(tmp_path: Path) -> None:
    """No size (or Ray, which reads elsewhere): no total, and done() leaves the bar."""
    display = _Display(_args(tmp_path, quiet=True))
    assert display.progress.disable is True
    task = display.progress.tasks[0]
    display.on_progress(RescoreSummary(["x"], None, read=ReadStats(bytes_done=7)))
    assert (task.total, task.completed) == (None, 7)
    ray = _Display(_args(tmp_path, engine="ray"))
    assert ray.local is False
    sized = RescoreSummary(["x"], None, total_bytes=50, read=ReadStats(bytes_done=5))
    ray.on_progress(sized)
    ray.done(sized)
    assert (ray.progress.tasks[0].total, ray.progress.tasks[0].completed) == (None, 5)
    display.done(RescoreSummary(["x"], None, read=ReadStats(bytes_done=7)))
    assert task.completed == 7


# --- phoenix:// inputs -------------------------------------------------------------------------


def test_files_are_no_phoenix_input(tmp_path: Path) -> None:
    """Trace files, or URLs of another kind, leave the command on files."""
    assert _phoenix(_args(tmp_path)) is None
    assert _phoenix(_args(tmp_path, paths=[Path("s3://bucket/t.jsonl")])) is None


def test_a_phoenix_url_makes_the_phoenix_command(tmp_path: Path) -> None:
    """`phoenix://host:port/project` with its options becomes the Phoenix command."""
    command = _phoenix(
        _args(
            tmp_path,
            paths=[Path("phoenix://127.0.0.1:6006/default")],
            annotate_phoenix=True,
            phoenix_start="2026-01-01T00:00:00",
            phoenix_end="2026-01-02T00:00:00",
            phoenix_where=["k:v"],
            phoenix_trace_id=["a" * 32],
            phoenix_page_size=10,
        )
    )
    assert isinstance(command, PhoenixCommand)
    assert command.annotate is True
    query = command.query
    assert (query.start_time, query.end_time) == ("2026-01-01T00:00:00", "2026-01-02T00:00:00")
    assert (query.root_attributes, query.trace_ids, query.page_size) == (("k:v",), ("a" * 32,), 10)
    plain = _phoenix(_args(tmp_path, paths=[Path("phoenix://127.0.0.1:6006/default")]))
    assert (plain.annotate, plain.query.root_attributes, plain.query.trace_ids) == (False, (), ())


def test_phoenix_options_need_a_phoenix_input(tmp_path: Path) -> None:
    """`--phoenix-*` on trace files, or a bad Phoenix option, is a bad argument."""
    error = _refused(_phoenix, _args(tmp_path, phoenix_start="2026"))
    assert str(error) == "--annotate-phoenix and --phoenix-* need a phoenix:// input"
    url = [Path("phoenix://127.0.0.1:6006/default")]
    assert str(_refused(_phoenix, _args(tmp_path, paths=url, engine="ray"))) == (
        "a phoenix:// input is read on the local engine only"
    )
    assert str(_refused(_phoenix, _args(tmp_path, paths=url, fmt="jaeger"))) == (
        "--format applies to trace files, not to a phoenix:// input"
    )


# --- how a failed run exits -----------------------------------------------------------------


def test_failures_the_user_can_act_on_are_bad_arguments(tmp_path: Path) -> None:
    """ValueError, ImportError, FileNotFoundError: exit 2 with the message."""
    for error in (ValueError("v"), ImportError("i"), FileNotFoundError("f")):
        caught = _refused(_fail, error, None, tmp_path / "o.jsonl")
        assert (str(caught), caught.code) == (str(error), ExitCode.BAD_ARGUMENTS)


def test_a_run_that_could_not_finish_is_an_internal_error(tmp_path: Path) -> None:
    """Ray failing for good, or an OSError mid-run (a full disk): exit 1 with the message."""
    caught = _refused(_fail, RayEngineError("node lost"), None, tmp_path / "o.jsonl")
    assert (str(caught), caught.code) == ("node lost", ExitCode.INTERNAL_ERROR)
    caught = _refused(_fail, OSError(28, "No space left on device"), None, tmp_path / "o")
    assert (str(caught), caught.code) == (
        "[Errno 28] No space left on device",
        ExitCode.INTERNAL_ERROR,
    )
    assert caught.__suppress_context__


def test_any_other_failure_is_raised_as_it_is(tmp_path: Path) -> None:
    """A bug is left to `guarded` (exit 1, one line naming it)."""
    with pytest.raises(KeyError):
        _fail(KeyError("k"), None, tmp_path / "o.jsonl")
    command = _phoenix(_args(tmp_path, paths=[Path("phoenix://127.0.0.1:6006/p")]))
    with pytest.raises(KeyError):
        _fail(KeyError("k"), command, tmp_path / "o.jsonl")


def test_phoenix_failures_are_told_by_the_phoenix_command(tmp_path: Path) -> None:
    """A Phoenix error: the command's message and exit code."""
    command = _phoenix(_args(tmp_path, paths=[Path("phoenix://127.0.0.1:6006/p")]))
    error = PhoenixError("unreachable")
    error.pages_read = 2
    caught = _refused(_fail, error, command, tmp_path / "o.jsonl")
    assert caught.code is ExitCode.PARTIAL_INPUT
    assert str(caught).startswith("unreachable (2 pages were read;")
    assert _refused(_fail, PhoenixNotFoundError("404"), command, tmp_path).code is (
        ExitCode.BAD_ARGUMENTS
    )


# --- whole runs: what the command prints and how it exits --------------------------------------


def _rescore(*args: str) -> Any:
    """Run `groundwire rescore ARGS` in-process."""
    return CliRunner().invoke(app, ["rescore", *args], env={"COLUMNS": "300"})


def test_a_run_prints_the_summary_table_and_where_the_results_are(tmp_path: Path) -> None:
    """stdout: the score table and `results: OUT`; stderr: the summary lines; exit 0."""
    trace = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "quoted_spans │      2 │ 0.500 │   0 │      0 │       0" in result.stdout
    assert result.stdout.rstrip().endswith(f"results: {out}")
    assert "read 1 file(s): 2 records (0 bad, 0 metrics/logs), 6 spans, 2 traces, 2 turns" in (
        result.stderr
    )
    assert "scored 2 turns in" in result.stderr
    assert "no turn found" not in result.stderr
    assert len(out.read_text().splitlines()) == 2


def test_quiet_prints_nothing_but_problems(tmp_path: Path) -> None:
    """`--quiet`: no table, no summary, no results line."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_no_turn_found_is_said_with_the_reasons(tmp_path: Path) -> None:
    """Spans read and no turn: the reasons per trace family, and exit 5 with its line."""
    trace = write_spans_without_turns(tmp_path / "http.jsonl")
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q")
    assert result.exit_code == ExitCode.NO_TURNS
    lines = result.stderr.splitlines()
    assert lines[0] == "no turn found:"
    assert lines[1].startswith("  ")
    assert lines[-1] == (
        "groundwire: no RAG turn found in 4 spans (4 traces); nothing was scored (--allow-empty "
        "accepts this) (exit 5)"
    )


def test_strict_stops_at_a_bad_record_with_exit_3(tmp_path: Path) -> None:
    """`--strict` and a bad record: one line ending in (--strict), exit 3 (partial input)."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    trace.write_text(trace.read_text() + "{not json\n")
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "--strict")
    assert result.exit_code == ExitCode.PARTIAL_INPUT
    last = result.stderr.rstrip().splitlines()[-1]
    assert last.startswith("error: ")
    assert last.endswith(
        "not valid JSON (Expecting property name enclosed in double quotes at column 2) (--strict)"
    )
    assert "Traceback" not in result.output


def test_without_strict_a_bad_record_is_a_notice_and_exit_3(tmp_path: Path) -> None:
    """A bad record is reported above the bar and skipped; the rest is scored."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    trace.write_text(trace.read_text() + "{not json\n")
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q")
    assert result.exit_code == ExitCode.PARTIAL_INPUT
    assert result.stderr.startswith("groundwire: ")
    assert result.stderr.rstrip().endswith("readable are written (exit 3)")


def test_arguments_reach_the_run_as_given(tmp_path: Path) -> None:
    """--resume, --format and --grace go to the run: resuming scores nothing new."""
    trace = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    assert _rescore(str(trace), "-e", "quoted_spans", "-o", str(out), "-q").exit_code == 0
    again = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(out), "--resume", "--format", "otlp-json",
        "--grace", "0",
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "scored 0 turns" in again.stderr
    assert "skipped 2 (2 already in the output)" in again.stderr
    assert len(out.read_text().splitlines()) == 2
    wrong = _rescore(str(trace), "-e", "quoted_spans", "-o", str(out), "--format", "jaeger")
    assert wrong.exit_code == ExitCode.BAD_ARGUMENTS
    assert "is OTLP/JSON (otlp-json)" in wrong.stderr


def test_a_baseline_is_compared_and_printed(tmp_path: Path) -> None:
    """`--baseline`: the comparison lines after the table."""
    trace = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    first = tmp_path / "first.jsonl"
    assert _rescore(str(trace), "-e", "quoted_spans", "-o", str(first), "-q").exit_code == 0
    result = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "second.jsonl"),
        "--baseline", str(first),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"compared with {first}: 2 turns in both runs (0 worse, 0 better)" in result.stdout
    quiet = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "third.jsonl"), "-q",
        "--baseline", str(first),
    )  # fmt: skip
    assert (quiet.exit_code, quiet.stdout) == (0, "")


def test_an_html_report_gets_the_steps_and_the_comparison(tmp_path: Path) -> None:
    """HTML OUT: agent turns get their steps filled in; a baseline adds its section."""
    trace = TRACES / "openinference_langgraph_agent.jsonl"
    first = tmp_path / "first.jsonl"
    assert _rescore(str(trace), "-e", "quoted_spans", "-o", str(first), "-q").exit_code == 0
    out = tmp_path / "r.html"
    result = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(out), "-q", "--baseline", str(first)
    )
    assert result.exit_code == 0, result.output
    html = out.read_text(encoding="utf-8")
    assert "<!-- groundwire:steps:" not in html
    assert "<!-- groundwire:comparison -->" not in html
    assert '<section class="comparison" id="comparison">' in html
    plain = tmp_path / "plain.html"
    assert _rescore(str(trace), "-e", "quoted_spans", "-o", str(plain), "-q").exit_code == 0
    text = plain.read_text(encoding="utf-8")
    assert "<!-- groundwire:steps:" not in text
    assert '<section class="comparison"' not in text


def test_export_otlp_that_delivers_nothing_exits_7(tmp_path: Path) -> None:
    """An endpoint nobody listens on: results written, exit 7 with the line saying why."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    result = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(out), "-q", "--export-otlp",
        "http://127.0.0.1:9",
    )  # fmt: skip
    assert result.exit_code == ExitCode.EXPORT_FAILED, result.output
    assert "--export-otlp delivered nothing: http://127.0.0.1:9" in result.stderr
    assert result.stderr.rstrip().endswith("(exit 7)")
    assert json.loads(out.read_text().splitlines()[0])["query"] == "q1"


def test_the_table_shows_evaluator_names_as_they_are() -> None:
    """A name with square brackets (a plug-in's) is shown, not read as Rich markup."""
    console = Console(file=io.StringIO(), width=120)
    console.print(_summary_table(_summary({"[b]": EvaluatorTally(scored=1, total=1.0)}, 1, 1.0)))
    assert "[b]" in console.file.getvalue()  # type: ignore[attr-defined]


# --- survivors of the first mutation run: each pins one more promise ---------------------------


def test_progress_counts_failed_and_not_applicable_as_ran() -> None:
    """A failed or n/a evaluation beside a scored one is still an evaluation that ran."""
    assert _progress(_summary({"a": EvaluatorTally(scored=1, failed=1, skipped=1)}, 2, 1.0)) == (
        "2 turns scored (2.0/s)"
    )
    assert (
        _progress(_summary({"a": EvaluatorTally(scored=1, not_applicable=1, skipped=1)}, 2, 1.0))
        == "2 turns scored (2.0/s)"
    )


def test_check_refuses_an_output_that_is_the_expected_file(tmp_path: Path) -> None:
    """The --expected file is among the inputs OUT may not overwrite."""
    expected = tmp_path / "e.jsonl"
    expected.write_text("")
    error = _refused(_check, _args(tmp_path, expected=expected, out=expected))
    assert "is the --expected file" in str(error)


def test_the_progress_bar_columns_and_console(tmp_path: Path) -> None:
    """Spinner, description, bar, percent, elapsed, `ETA` and remaining, on stderr, kept."""
    from rich.progress import (
        BarColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from groundwire.cli._console import err_console

    progress = _Display(_args(tmp_path)).progress
    kinds = [type(column) for column in progress.columns]
    assert kinds == [
        SpinnerColumn,
        TextColumn,
        BarColumn,
        TextColumn,
        TimeElapsedColumn,
        TextColumn,
        TimeRemainingColumn,
    ]
    texts = [c.text_format for c in progress.columns if isinstance(c, TextColumn)]
    assert texts == ["{task.description}", "{task.percentage:>3.0f}%", "ETA"]
    assert progress.console is err_console
    assert progress.live.transient is False


def test_a_run_moves_the_bar_to_the_turns_scored(tmp_path: Path) -> None:
    """The bar's words end as the run's turns and rate (the run reports its progress)."""
    trace = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 0
    assert "2 turns scored (" in result.stderr
    assert "reading" not in result.stderr


def _terminal(monkeypatch: pytest.MonkeyPatch) -> tuple[io.StringIO, io.StringIO]:
    """Send the command's output to colour terminals (to see what is highlighted or wrapped)."""
    import groundwire.cli._console as console_module
    import groundwire.cli._rescore as rescore_module

    out, err = io.StringIO(), io.StringIO()
    stdout = Console(file=out, force_terminal=True, width=200, color_system="standard")
    stderr = Console(file=err, force_terminal=True, width=200, color_system="standard")
    monkeypatch.setattr(rescore_module, "console", stdout)
    monkeypatch.setattr(rescore_module, "err_console", stderr)
    monkeypatch.setattr(console_module, "err_console", stderr)
    monkeypatch.setattr(console_module, "fit_to_streams", lambda: None)
    return out, err


def test_result_lines_are_plain_and_never_wrapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Summary, comparison and `results:` lines: not highlighted, one line however long."""
    folder = tmp_path / ("d" * 120) / ("e" * 120)
    folder.mkdir(parents=True)
    trace = write_turns(["q1"], folder / "t.jsonl")
    first = folder / "first.jsonl"
    assert _rescore(str(trace), "-e", "quoted_spans", "-o", str(first), "-q").exit_code == 0
    out_file = folder / "o.jsonl"
    out, err = _terminal(monkeypatch)
    result = _rescore(
        str(trace), "-e", "quoted_spans", "-o", str(out_file), "--baseline", str(first)
    )
    assert result.exit_code == 0, result.output
    lines = out.getvalue().splitlines()
    assert f"results: {out_file}" in lines
    assert (
        f"compared with {first}: 1 turns in both runs (0 worse, 0 better), 0 only in this run, "
        "0 only in the baseline" in lines
    )
    assert (
        "read 1 file(s): 1 records (0 bad, 0 metrics/logs), 3 spans, 1 traces, 1 turns\n"
        in err.getvalue()
    )


def test_bad_records_are_told_on_the_commands_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skipped record is a `groundwire:` notice on the command's stderr console (above the
    bar), not a bare print."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    trace.write_text(trace.read_text() + "{not json\n")
    _, err = _terminal(monkeypatch)
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q")
    assert result.exit_code == ExitCode.PARTIAL_INPUT
    assert "skipped: not valid JSON" in err.getvalue()
    assert "skipped: not valid JSON" not in result.stderr


def test_a_binary_output_gets_no_html_steps(tmp_path: Path) -> None:
    """Steps are filled into an HTML report only: an .xlsx OUT is left as written."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    out = tmp_path / "o.xlsx"
    result = _rescore(str(trace), "-e", "quoted_spans", "-o", str(out), "-q")
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:2] == b"PK"


def test_an_unreachable_phoenix_is_told_by_the_phoenix_command(tmp_path: Path) -> None:
    """phoenix:// runs through the Phoenix command: an unreachable Phoenix is exit 4."""
    result = _rescore(
        "phoenix://127.0.0.1:9/p", "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q"
    )
    assert result.exit_code == ExitCode.NOTHING_READABLE
    assert "error: Phoenix at http://127.0.0.1:9 cannot be reached" in result.stderr
