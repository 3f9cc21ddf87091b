"""The `rescore` pipeline's steps (`offline/_rescore_run.py`), one promise each: the lock on OUT,
the summary a run starts with, the hooks, stopping, finishing or setting aside the output, and
the OTLP export's counts.

Small real trace files (four turns), the real evaluators, writers and a real OTLP receiver on
loopback; each test takes a fraction of a second.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import StopFlag, rescore
from groundwire.offline._rescore_inputs import RescoreOptions, check_inputs
from groundwire.offline._rescore_run import (
    finish_output,
    hold_output,
    open_export,
    run_rescore,
    start,
)
from groundwire.offline._summary import RescoreSummary
from groundwire.offline.writers import OutputPathError, OutputTarget, open_writer, partial_path
from groundwire.testing import OtlpHttpReceiver
from tests.offline._traces import record_turns, write_groundwire_jsonl

TURNS = 4


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four recorded turns as OTLP/JSON lines."""
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    return write_groundwire_jsonl(record_turns(TURNS), path, batch=3)


@pytest.fixture(scope="module")
def receiver() -> Any:
    """A real OTLP/HTTP receiver on loopback."""
    with OtlpHttpReceiver() as running:
        yield running


def _lines(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines output."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class Stopper:
    """A results hook that asks the run to stop after the first chunk."""

    def __init__(self, stop: StopFlag) -> None:
        self.stop = stop
        self.chunks: list[int] = []

    def __call__(self, results: list[Any]) -> None:
        """Count the chunk and ask for a stop."""
        self.chunks.append(len(results))
        self.stop.set()


def test_results_without_out_stay_in_the_summary(traces: Path) -> None:
    """No OUT: every result is in `summary.results`; the summary names the evaluators, engine,
    workers, input size, one tally per evaluator, and the time taken."""
    summary = rescore(traces, ["quoted_spans"], None)
    assert summary.results is not None and len(summary.results) == TURNS
    assert summary.turns_scored == TURNS and summary.out is None
    assert summary.evaluators == ["quoted_spans"]
    assert (summary.engine, summary.workers) == ("local", 1)
    assert summary.total_bytes == traces.stat().st_size
    assert list(summary.tallies) == ["quoted_spans"]
    assert summary.tallies["quoted_spans"].scored == TURNS
    assert summary.elapsed_s > 0 and summary.interrupted is False
    assert summary.kept_partial is None and summary.export is None
    assert summary.resume_notes == []


def test_out_is_written_in_place_and_its_lock_released(traces: Path, tmp_path: Path) -> None:
    """With OUT: the results are in OUT (not in the summary), no partial file or lock is left."""
    out = tmp_path / "out.jsonl"
    summary = rescore(traces, ["quoted_spans"], out)
    assert summary.results is None and summary.out == out
    assert len(_lines(out)) == TURNS
    assert not partial_path(out).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_hold_output_locks_out_until_released(tmp_path: Path) -> None:
    """A second run on the same OUT is refused while the first holds it; no OUT, no lock."""
    assert hold_output(None) is None
    out = tmp_path / "deep" / "out.jsonl"
    lock = hold_output(out)
    assert lock is not None
    with pytest.raises(OutputPathError, match=r"another groundwire run is writing out\.jsonl"):
        hold_output(out)
    lock.release()
    again = hold_output(out)
    assert again is not None
    again.release()


def test_a_failing_start_releases_the_lock(
    traces: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the set-up fails (here the export's protocol variable is bad) OUT is free again."""
    out = tmp_path / "out.jsonl"
    options = RescoreOptions(paths=traces, evaluators=["quoted_spans"], out=out, export_otlp=True)
    inputs = check_inputs(options)
    lock = hold_output(inputs.out)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "kafka")
    with pytest.raises(ValueError, match="kafka"):
        start(options, inputs, lock)
    free = hold_output(out)
    assert free is not None
    free.release()


def test_open_export_only_when_asked(receiver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No export unless asked; an endpoint string is used as given; True means the standard
    variables."""
    options = RescoreOptions(paths=[], evaluators=[])
    assert open_export(options, []) is None
    given = RescoreOptions(paths=[], evaluators=[], export_otlp=receiver.endpoint)
    export = open_export(given, [])
    assert export is not None and export.report.endpoint == receiver.endpoint
    export.close()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
    from_variables = open_export(RescoreOptions(paths=[], evaluators=[], export_otlp=True), [])
    assert from_variables is not None
    assert from_variables.report.endpoint == receiver.endpoint + "/v1/traces"
    from_variables.close()


def test_export_counts_what_was_sent(traces: Path, receiver: Any) -> None:
    """Results exported to a live endpoint: the summary counts the carrier spans and log
    records sent and holds the endpoint's report."""
    before = len(receiver.spans())
    summary = rescore(traces, ["quoted_spans"], None, export_otlp=receiver.endpoint)
    assert summary.exported_spans == TURNS
    assert summary.exported_log_records == TURNS
    assert summary.export is not None and summary.export.endpoint == receiver.endpoint
    assert receiver.wait_for(lambda r: len(r.spans()) >= before + TURNS, 5.0)


def test_hooks_see_every_chunk_and_the_progress(traces: Path, tmp_path: Path) -> None:
    """`on_results` gets each chunk as written; `progress` gets the summary after each, with
    the turns scored so far and the time taken."""
    chunks: list[int] = []
    seen: list[tuple[int, float]] = []
    summary = rescore(
        traces,
        ["quoted_spans"],
        tmp_path / "out.jsonl",
        chunk_size=3,
        on_results=lambda results: chunks.append(len(results)),
        progress=lambda s: seen.append((s.turns_scored, s.elapsed_s)),
    )
    assert chunks == [3, 1]
    assert [scored for scored, _ in seen] == [3, TURNS]
    assert all(elapsed > 0 for _, elapsed in seen)
    assert summary.turns_scored == TURNS


def test_results_are_flushed_chunk_by_chunk(traces: Path, tmp_path: Path) -> None:
    """After each chunk the writer is flushed: a hook already reads the chunk in the file."""
    out = tmp_path / "out.jsonl"
    written: list[int] = []

    def read_back(results: list[Any]) -> None:
        written.append(len(partial_path(out).read_text(encoding="utf-8").splitlines()))

    rescore(traces, ["quoted_spans"], out, chunk_size=1, on_results=read_back)
    assert written == [1, 2, 3, 4]


def test_a_stop_ends_the_run_after_the_chunk_in_flight(traces: Path, tmp_path: Path) -> None:
    """A stop asked mid-run: the summary says interrupted, OUT holds what was written."""
    stop = StopFlag()
    hook = Stopper(stop)
    out = tmp_path / "out.jsonl"
    summary = rescore(traces, ["quoted_spans"], out, chunk_size=1, stop=stop, on_results=hook)
    assert hook.chunks == [1]
    assert summary.interrupted is True and summary.turns_scored == 1
    assert len(_lines(out)) == 1


def test_a_stop_after_the_last_turn_is_not_an_interruption(traces: Path) -> None:
    """A stop asked once every turn was read changes nothing: not interrupted."""
    stop = StopFlag()
    summary = rescore(
        traces, ["quoted_spans"], None, chunk_size=10, stop=stop, on_results=lambda _r: stop.set()
    )
    assert summary.turns_scored == TURNS and summary.interrupted is False


def test_a_second_ctrl_c_keeps_what_was_written(traces: Path, tmp_path: Path) -> None:
    """KeyboardInterrupt mid-run is an interruption, not a failure: OUT is committed with the
    chunks written, the stop flag is set, and the interrupt goes on up."""
    out = tmp_path / "out.jsonl"
    stop = StopFlag()

    def interrupt(results: list[Any]) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rescore(traces, ["quoted_spans"], out, chunk_size=2, stop=stop, on_results=interrupt)
    assert stop.is_set()
    assert len(_lines(out)) == 2 and not partial_path(out).exists()


def test_a_failed_run_leaves_an_existing_out_and_keeps_its_results_aside(
    traces: Path, tmp_path: Path
) -> None:
    """A crash mid-run: OUT is left as it was, the results written are kept in the partial
    file, and a notice says both; the lock is released."""
    out = tmp_path / "out.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    notices: list[str] = []

    def crash(results: list[Any]) -> None:
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError, match="hook failed"):
        rescore(
            traces, ["quoted_spans"], out, chunk_size=2, on_results=crash, on_problem=notices.append
        )
    partial = partial_path(out)
    assert out.read_text(encoding="utf-8") == "earlier\n"
    assert len(partial.read_text(encoding="utf-8").splitlines()) == 2
    assert notices == [
        f"the run failed: the 2 results written are kept in {partial}; {out} is left as it was"
    ]
    lock = hold_output(out)
    assert lock is not None
    lock.release()


def test_a_failed_run_without_out_says_so(traces: Path, tmp_path: Path) -> None:
    """A crash before OUT existed: the notice names only where the results are kept."""
    out = tmp_path / "new.jsonl"
    notices: list[str] = []

    def crash(results: list[Any]) -> None:
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError):
        rescore(
            traces, ["quoted_spans"], out, chunk_size=1, on_results=crash, on_problem=notices.append
        )
    assert not out.exists()
    assert notices == [f"the run failed: the 1 results written are kept in {partial_path(out)}"]


def test_a_leftover_partial_file_is_replaced_and_said(traces: Path, tmp_path: Path) -> None:
    """A partial file left by an earlier run that did not finish is replaced, with a notice."""
    out = tmp_path / "out.jsonl"
    partial = partial_path(out)
    partial.write_text("half a line", encoding="utf-8")
    notices: list[str] = []
    rescore(traces, ["quoted_spans"], out, on_problem=notices.append)
    assert notices == [f"replaced {partial}, left by an earlier run that did not finish"]
    assert len(_lines(out)) == TURNS


def test_an_unwritable_out_is_an_output_path_error(traces: Path, tmp_path: Path) -> None:
    """OUT's partial file cannot be cleared when the run opens it (a folder of folders stands
    there): OutputPathError naming the file and the reason; OUT's lock is released."""
    out = tmp_path / "out.jsonl"
    options = RescoreOptions(paths=traces, evaluators=["quoted_spans"], out=out)
    inputs = check_inputs(options)
    run = start(options, inputs, hold_output(inputs.out))
    (partial_path(out) / "nested").mkdir(parents=True)
    with pytest.raises(
        OutputPathError, match=r"^cannot write .*out\.partial\.jsonl: Is a directory$"
    ):
        run.execute()
    lock = hold_output(out)
    assert lock is not None
    lock.release()


def test_resume_skips_what_out_holds_and_reports_its_notes(traces: Path, tmp_path: Path) -> None:
    """Resume: turns already in OUT are skipped; a cut last line is dropped and noted."""
    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:2]) + lines[2][:15], encoding="utf-8")
    notices: list[str] = []
    summary = rescore(traces, ["quoted_spans"], out, resume=True, on_problem=notices.append)
    assert summary.counts.resumed == 2 and summary.turns_scored == TURNS - 2
    assert summary.resume_notes and summary.resume_notes == notices
    assert len(_lines(out)) == TURNS


def test_expected_answers_matched_are_counted(traces: Path, tmp_path: Path) -> None:
    """Gold answers joined to turns: the summary counts the turns that got one."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query": "How tall is the Eiffel Tower? (1)", "expected": ["x"]}))
    summary = rescore(traces, ["quoted_spans"], None, expected=gold)
    assert summary.expected_matched == 1


def test_on_read_reports_progress_at_most_five_times_a_second(traces: Path) -> None:
    """While grouping reads, progress is reported, then not again within 0.2 s; once a stop
    was asked for, reading stops."""
    seen: list[float] = []
    options = RescoreOptions(
        paths=traces, evaluators=["quoted_spans"], progress=lambda s: seen.append(s.elapsed_s)
    )
    run = start(options, check_inputs(options), None)
    assert run.on_read() is False and len(seen) == 1 and seen[0] > 0
    assert run.on_read() is False and len(seen) == 1
    run.last_report -= 0.2
    run.on_read()
    assert len(seen) == 2
    run.stop.set()
    assert run.on_read() is True and run.read_stopped is True
    quiet = start(RescoreOptions(paths=traces, evaluators=["quoted_spans"]), run.inputs, None)
    assert quiet.on_read() is False and quiet.read_stopped is False


def test_progress_while_reading_tells_the_seconds_since_the_start(traces: Path) -> None:
    """The progress told while grouping reads carries the seconds since the run started (a
    duration, not a clock reading)."""
    seen: list[float] = []
    options = RescoreOptions(
        paths=traces, evaluators=["quoted_spans"], progress=lambda s: seen.append(s.elapsed_s)
    )
    before = time.perf_counter()
    run = start(options, check_inputs(options), None)
    run.on_read()
    assert len(seen) == 1 and 0 < seen[0] <= time.perf_counter() - before


def test_several_files_are_grouped_whole_with_progress_while_reading(
    tmp_path: Path,
) -> None:
    """Two files: traces are grouped whole before scoring, and progress is told while reading."""
    spans = record_turns(TURNS)
    first = write_groundwire_jsonl(spans[:5], tmp_path / "a.jsonl")
    second = write_groundwire_jsonl(spans[5:], tmp_path / "b.jsonl")
    seen: list[int] = []
    summary = rescore([first, second], ["quoted_spans"], None, progress=lambda s: seen.append(1))
    assert summary.turns_scored == TURNS and seen
    assert summary.total_bytes == first.stat().st_size + second.stat().st_size


def test_run_rescore_times_the_whole_run(traces: Path) -> None:
    """`run_rescore` is the pipeline: its summary's time covers the run from the checks on."""
    summary = run_rescore(RescoreOptions(paths=traces, evaluators=["quoted_spans"]))
    assert summary.turns_scored == TURNS and summary.elapsed_s > 0


def _writer(tmp_path: Path, out: Path, *, append: bool = False) -> tuple[Any, OutputTarget]:
    """A real JSON-lines writer on OUT's partial file, and its target."""
    target = OutputTarget(out, append=append)
    target.prepare()
    return open_writer(target.write_path, ["quoted_spans"], append=append), target


def test_finish_output_with_no_result_leaves_an_existing_out(tmp_path: Path) -> None:
    """A run that wrote no result does not replace an existing OUT: it says so."""
    out = tmp_path / "out.jsonl"
    out.write_text("earlier\n", encoding="utf-8")
    writer, target = _writer(tmp_path, out)
    notices: list[str] = []
    summary = RescoreSummary(evaluators=["quoted_spans"], out=out)
    finish_output(writer, target, summary, failed=False, notice=notices.append)
    assert out.read_text(encoding="utf-8") == "earlier\n"
    assert notices == [f"no result written: {out} is left as it was"]
    assert not partial_path(out).exists() and summary.kept_partial is None


def test_finish_output_with_no_result_and_no_out_makes_an_empty_out(tmp_path: Path) -> None:
    """No earlier OUT (or appending to it): the empty output is committed, no notice."""
    out = tmp_path / "out.jsonl"
    writer, target = _writer(tmp_path, out)
    notices: list[str] = []
    summary = RescoreSummary(evaluators=["quoted_spans"], out=out)
    finish_output(writer, target, summary, failed=False, notice=notices.append)
    assert out.exists() and notices == []
    writer, target = _writer(tmp_path, out, append=True)
    finish_output(writer, target, summary, failed=False, notice=notices.append)
    assert out.exists() and notices == []


def test_finish_output_of_a_failed_run_without_rows(tmp_path: Path) -> None:
    """A failed run that wrote nothing keeps nothing aside and says so."""
    out = tmp_path / "out.jsonl"
    writer, target = _writer(tmp_path, out)
    notices: list[str] = []
    summary = RescoreSummary(evaluators=["quoted_spans"], out=out)
    finish_output(writer, target, summary, failed=True, notice=notices.append)
    assert notices == ["the run failed: no result written"]
    assert summary.kept_partial is None and not partial_path(out).exists()


def test_finish_output_of_a_failed_run_keeps_its_rows(tmp_path: Path) -> None:
    """A failed run's rows are kept aside, and the summary says where."""
    out = tmp_path / "out.jsonl"
    writer, target = _writer(tmp_path, out)
    summary = RescoreSummary(evaluators=["quoted_spans"], out=out, turns_scored=3)
    finish_output(writer, target, summary, failed=True, notice=lambda _t: None)
    assert summary.kept_partial == partial_path(out)


def test_finish_output_without_a_target_only_closes(tmp_path: Path) -> None:
    """No target: the writer is closed, nothing is moved or said."""
    out = tmp_path / "out.jsonl"
    writer = open_writer(out, ["quoted_spans"])
    notices: list[str] = []
    summary = RescoreSummary(evaluators=["quoted_spans"], out=None, turns_scored=1)
    finish_output(writer, None, summary, failed=False, notice=notices.append)
    assert out.exists() and notices == []


def _ray_run(traces: Path, out: Path | None, **extra: Any) -> Any:
    """A run set up for the Ray engine (Ray itself is not started: only the output is chosen)."""
    options = RescoreOptions(
        paths=traces, evaluators=["quoted_spans"], out=out, engine="ray", **extra
    )
    return start(options, check_inputs(options), None)


def test_on_ray_workers_write_parquet_parts_and_encode_line_formats(
    traces: Path, tmp_path: Path
) -> None:
    """On Ray with nothing else to feed, a .parquet OUT is written part by part by the workers
    and a .jsonl/.csv OUT is encoded by them; other formats, an export, a results hook or the
    local engine keep the driver's writer."""
    parquet = _ray_run(traces, tmp_path / "out.parquet")
    parts = parquet.worker_parts()
    assert type(parts).__name__ == "PartsOutput"
    assert parts.out == str(tmp_path / "out.parquet") and parts.summary is parquet.summary
    assert parts.append is False
    for suffix in (".jsonl", ".CSV"):
        lines = _ray_run(traces, tmp_path / f"out{suffix}")
        encoded = lines.worker_parts()
        assert type(encoded).__name__ == "EncodedOutput"
        encoded.close()
    assert _ray_run(traces, tmp_path / "out.html").worker_parts() is None
    assert _ray_run(traces, None).worker_parts() is None
    hooked = _ray_run(traces, tmp_path / "h.parquet", on_results=lambda _r: None)
    assert hooked.worker_parts() is None
    exported = _ray_run(traces, tmp_path / "e.parquet", export_otlp="http://127.0.0.1:9")
    assert exported.worker_parts() is None
    exported.export.close()
    options = RescoreOptions(paths=traces, evaluators=["quoted_spans"], out=tmp_path / "l.parquet")
    assert start(options, check_inputs(options), None).worker_parts() is None


def test_results_are_the_turns_scored_with_sane_times(traces: Path) -> None:
    """Each result kept is a scored turn; every time reported is the run's own (seconds, not
    a clock reading)."""
    seen: list[float] = []
    summary = rescore(traces, ["quoted_spans"], None, progress=lambda s: seen.append(s.elapsed_s))
    assert summary.results is not None
    assert sorted(r.turn.query for r in summary.results) == [
        f"How tall is the Eiffel Tower? ({i})" for i in range(TURNS)
    ]
    assert 0 < summary.elapsed_s < 60 and seen and all(0 < s < 60 for s in seen)


def test_out_is_locked_while_the_run_writes(traces: Path, tmp_path: Path) -> None:
    """During a run, another run on the same OUT is refused."""
    out = tmp_path / "out.jsonl"
    refused: list[str] = []

    def try_again(results: list[Any]) -> None:
        with pytest.raises(OutputPathError) as error:
            hold_output(out)
        refused.append(str(error.value))

    run_rescore(
        RescoreOptions(paths=traces, evaluators=["quoted_spans"], out=out, on_results=try_again)
    )
    assert refused and "another groundwire run is writing" in refused[0]


def test_a_failed_run_leaves_an_existing_parquet_out_untouched(
    traces: Path, tmp_path: Path
) -> None:
    """Parquet merges its parts into OUT on close: a failed run abandons them instead, so an
    existing OUT keeps its bytes."""
    out = tmp_path / "out.parquet"
    rescore(traces, ["quoted_spans"], out)
    before = out.read_bytes()

    def crash(results: list[Any]) -> None:
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError):
        rescore(traces, ["quoted_spans"], out, chunk_size=1, on_results=crash, on_problem=print)
    assert out.read_bytes() == before


def test_a_csv_out_has_a_column_per_evaluator(traces: Path, tmp_path: Path) -> None:
    """The writer is opened with the evaluators' names (the CSV header names them)."""
    out = tmp_path / "out.csv"
    rescore(traces, ["quoted_spans"], out)
    assert "quoted_spans" in out.read_text(encoding="utf-8").splitlines()[0]


def test_bad_records_are_reported_counted_or_fatal_when_strict(
    traces: Path, tmp_path: Path
) -> None:
    """A broken line: reported to `on_problem` and counted in the summary; with `strict` the
    run stops on it."""
    from groundwire.offline import BadRecordError

    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(traces.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    notices: list[str] = []
    summary = rescore(damaged, ["quoted_spans"], None, on_problem=notices.append)
    assert summary.read.bad_records == 1 and len(notices) == 1
    assert summary.turns_scored == TURNS
    with pytest.raises(BadRecordError):
        rescore(damaged, ["quoted_spans"], None, strict=True, on_problem=notices.append)


def test_a_file_without_turns_still_tallies_every_evaluator(tmp_path: Path) -> None:
    """No turn at all: the summary still has one (empty) tally per evaluator."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    summary = rescore(empty, ["quoted_spans"], None, on_problem=lambda _t: None)
    assert list(summary.tallies) == ["quoted_spans"]
    assert summary.tallies["quoted_spans"].scored == 0


def test_reading_several_files_reports_progress_before_scoring(tmp_path: Path) -> None:
    """Grouping several files reads them all first: progress is told while reading too."""
    spans = record_turns(TURNS)
    first = write_groundwire_jsonl(spans[:6], tmp_path / "a.jsonl")
    second = write_groundwire_jsonl(spans[6:], tmp_path / "b.jsonl")
    seen: list[int] = []
    rescore(
        [first, second],
        ["quoted_spans"],
        None,
        chunk_size=100,
        progress=lambda s: seen.append(s.turns_scored),
    )
    assert seen[0] == 0 and seen[-1] == TURNS


def test_a_sigint_during_the_run_is_a_graceful_stop(traces: Path, tmp_path: Path) -> None:
    """The first Ctrl-C while the run writes sets its stop flag: it ends after the chunk in
    flight, interrupted, with OUT valid."""
    import os
    import signal

    out = tmp_path / "out.jsonl"
    summary = rescore(
        traces,
        ["quoted_spans"],
        out,
        chunk_size=1,
        on_results=lambda _r: os.kill(os.getpid(), signal.SIGINT),
    )
    assert summary.interrupted is True and 1 <= summary.turns_scored < TURNS
    assert len(_lines(out)) == summary.turns_scored


def test_resume_refuses_an_out_scored_by_other_evaluators(traces: Path, tmp_path: Path) -> None:
    """`start` checks OUT against this run's evaluators: OUT written by other evaluators is not
    resumed (ResumeError naming them), and the lock on OUT is released."""
    from groundwire.offline import ResumeError

    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    options = RescoreOptions(
        paths=traces, evaluators=["quoted_spans", "quote_verification"], out=out, resume=True
    )
    inputs = check_inputs(options)
    lock = hold_output(inputs.out)
    with pytest.raises(ResumeError, match="are not this run's"):
        start(options, inputs, lock)
    hold_output(out).release()  # free again
    assert len(_lines(out)) == TURNS


def test_the_summary_starts_with_the_engine_and_workers(traces: Path) -> None:
    """The summary a run starts with names its engine and its worker count."""
    on_ray = _ray_run(traces, None, workers=3)
    assert (on_ray.summary.engine, on_ray.summary.workers) == ("ray", 3)
    options = RescoreOptions(paths=traces, evaluators=["quoted_spans"], workers=2)
    local = start(options, check_inputs(options), None)
    assert (local.summary.engine, local.summary.workers) == ("local", 2)


def test_a_stopped_html_report_says_it_is_partial(traces: Path, tmp_path: Path) -> None:
    """A run stopped mid-way closes its report as interrupted: the HTML says it is partial;
    a whole run's report does not."""
    stop = StopFlag()
    out = tmp_path / "out.html"
    summary = rescore(
        traces, ["quoted_spans"], out, chunk_size=1, stop=stop, on_results=Stopper(stop)
    )
    assert summary.interrupted is True
    assert "this report is partial" in out.read_text(encoding="utf-8")
    whole = tmp_path / "whole.html"
    rescore(traces, ["quoted_spans"], whole)
    assert "this report is partial" not in whole.read_text(encoding="utf-8")


def test_exported_results_name_the_evaluators_version(traces: Path, receiver: Any) -> None:
    """The export knows the run's evaluators: each result event it sends carries the version
    of the evaluator that scored it."""
    before = len(receiver.log_records())
    rescore(traces, ["quoted_spans"], None, export_otlp=receiver.endpoint)
    assert receiver.wait_for(lambda r: len(r.log_records()) >= before + TURNS, 5.0)
    sent = receiver.log_records()[before:]
    assert all(record.attributes.get("groundwire.evaluator.version") for record in sent)


def test_the_local_engine_reads_the_format_it_is_told(traces: Path) -> None:
    """`fmt` reaches the local readers: OTLP lines asked to be read as Jaeger JSON are
    refused, naming the format they are in."""
    from groundwire.offline.readers import FormatMismatchError

    with pytest.raises(FormatMismatchError, match="read it as otlp-json"):
        rescore(traces, ["quoted_spans"], None, fmt="jaeger")
    assert rescore(traces, ["quoted_spans"], None, fmt="otlp-json").turns_scored == TURNS


def test_the_local_engine_keeps_the_window_it_is_given(traces: Path, tmp_path: Path) -> None:
    """`window` reaches the trace window: spans read twice are left out by default, and read
    again when the window remembers no span (the documented opt-out)."""
    from groundwire.offline import WindowOptions

    twice = tmp_path / "twice.jsonl"
    twice.write_text(traces.read_text(encoding="utf-8") * 2, encoding="utf-8")
    default = rescore(twice, ["quoted_spans"], None)
    assert default.counts.duplicate_spans > 0
    forgetful = WindowOptions(remember_spans=0, remember_turns=0)
    summary = rescore(twice, ["quoted_spans"], None, window=forgetful)
    assert summary.counts.duplicate_spans == 0


def test_a_span_source_is_read_instead_of_files(traces: Path) -> None:
    """A span source (`source`) is called with the run's problem reporter and its batches are
    the turns scored: a problem it reports is counted in the summary."""
    from groundwire.offline.readers import read_spans

    def source(problems: Any) -> Any:
        problems.report("source", "one record the source could not read")
        return read_spans([traces], problems)

    summary = rescore([], ["quoted_spans"], None, source=source, on_problem=lambda _t: None)
    assert summary.turns_scored == TURNS and summary.read.bad_records == 1
