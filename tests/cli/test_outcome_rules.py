"""A run's summary -> its exit code and the line saying why: every rule and its precedence."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from groundwire.cli._exit import ExitCode
from groundwire.cli._outcome import code_for, exit_code, explain
from groundwire.offline import EvaluatorTally, ReadStats, RescoreSummary, TurnCounts
from groundwire.offline._export import ExportReport


def _summary(
    *,
    spans: int = 10,
    bad: int = 0,
    damaged_files: int = 0,
    files: int = 1,
    turns: int = 2,
    traces: int = 2,
    scored: int = 2,
    tallies: dict[str, EvaluatorTally] | None = None,
    export: ExportReport | None = None,
    interrupted: bool = False,
) -> RescoreSummary:
    """A finished run's summary with the given counts."""
    return RescoreSummary(
        evaluators=["quoted_spans"],
        out=Path("out.jsonl"),
        read=ReadStats(files=files, spans=spans, bad_records=bad, damaged_files=damaged_files),
        counts=TurnCounts(traces=traces, turns=turns),
        turns_scored=scored,
        tallies={"quoted_spans": EvaluatorTally(scored=2)} if tallies is None else tallies,
        export=export,
        interrupted=interrupted,
    )


def test_a_clean_run_is_ok_and_needs_no_reason() -> None:
    """Spans read, turns found, evaluations ran: 0 and no line."""
    summary = _summary()
    assert exit_code(summary) is ExitCode.OK
    assert explain(summary, ExitCode.OK) is None
    assert code_for(spans=1, damaged=0, turns=1) is ExitCode.OK


def test_interrupted_wins_over_everything() -> None:
    """Ctrl-C is said first, whatever else went wrong, with how many turns were scored."""
    summary = _summary(spans=0, bad=3, turns=0, scored=7, interrupted=True)
    assert exit_code(summary) is ExitCode.INTERRUPTED
    assert explain(summary, ExitCode.INTERRUPTED) == (
        "interrupted after 7 scored turns; run again with --resume to continue"
    )


def test_nothing_readable_needs_damage_and_no_span() -> None:
    """No span and a damaged record: 4; no span and no damage is only no turns."""
    assert code_for(spans=0, damaged=1, turns=0) is ExitCode.NOTHING_READABLE
    assert code_for(spans=0, damaged=0, turns=0) is ExitCode.NO_TURNS
    assert code_for(spans=1, damaged=1, turns=0) is ExitCode.NO_TURNS
    summary = _summary(spans=0, bad=2, damaged_files=1, files=3, turns=0)
    assert exit_code(summary, allow_empty=True) is ExitCode.NOTHING_READABLE
    assert explain(summary, ExitCode.NOTHING_READABLE) == (
        "nothing readable: no span in 3 file(s); 3 damaged record(s) or stream(s) "
        "(see the messages above)"
    )


def test_no_turns_unless_allowed() -> None:
    """No turn is 5, or 0 with `--allow-empty`; the line counts spans and traces."""
    summary = _summary(spans=4, turns=0, traces=3, scored=0, tallies={})
    assert exit_code(summary) is ExitCode.NO_TURNS
    assert exit_code(summary, allow_empty=True) is ExitCode.OK
    assert code_for(spans=4, damaged=0, turns=0, allow_empty=True) is ExitCode.OK
    assert explain(summary, ExitCode.NO_TURNS) == (
        "no RAG turn found in 4 spans (3 traces); nothing was scored (--allow-empty accepts this)"
    )


@pytest.mark.parametrize(
    ("failed", "skipped", "code"),
    [(2, 0, ExitCode.ALL_EVALUATIONS_FAILED), (1, 1, ExitCode.ALL_EVALUATIONS_FAILED)],
)
def test_every_evaluation_failed_or_skipped(failed: int, skipped: int, code: ExitCode) -> None:
    """Failed and skipped evaluations together, all of them: 6, with both counts said."""
    tallies = {"a": EvaluatorTally(failed=failed), "b": EvaluatorTally(skipped=skipped)}
    summary = _summary(tallies=tallies)
    assert exit_code(summary) is code
    assert explain(summary, code) == (
        f"every evaluation failed or was skipped: {failed} failed, {skipped} skipped, of 2"
    )


def test_one_evaluation_that_ran_keeps_the_run_ok() -> None:
    """One success among failures is not 6; no evaluation at all is not 6 either."""
    assert code_for(spans=1, damaged=0, turns=1, evaluations=3, evaluations_failed=2) is (
        ExitCode.OK
    )
    assert code_for(spans=1, damaged=0, turns=1, evaluations=0, evaluations_failed=0) is (
        ExitCode.OK
    )
    assert code_for(spans=1, damaged=0, turns=1, evaluations=1, evaluations_failed=1) is (
        ExitCode.ALL_EVALUATIONS_FAILED
    )


def test_export_that_delivered_nothing() -> None:
    """Spans emitted and none accepted: 7, with the endpoint and the exporter's reasons."""
    report = ExportReport(
        endpoint="http://127.0.0.1:1", emitted=5, rejected=5, reasons=Counter(a=3, b=2)
    )
    summary = _summary(export=report)
    assert exit_code(summary) is ExitCode.EXPORT_FAILED
    assert explain(summary, ExitCode.EXPORT_FAILED) == (
        "--export-otlp delivered nothing: http://127.0.0.1:1 accepted none of 5 evaluation "
        "spans (a; b)"
    )
    bare = _summary(export=ExportReport(endpoint="e", emitted=1))
    assert explain(bare, ExitCode.EXPORT_FAILED) == (
        "--export-otlp delivered nothing: e accepted none of 1 evaluation spans (unknown)"
    )


def test_export_that_delivered_some_is_not_a_failure() -> None:
    """One accepted span, or none emitted, keeps 0; a run without export has no line for 7."""
    assert exit_code(_summary(export=ExportReport(endpoint="e", emitted=2, accepted=1))) is (
        ExitCode.OK
    )
    assert exit_code(_summary(export=ExportReport(endpoint="e"))) is ExitCode.OK
    assert explain(_summary(), ExitCode.EXPORT_FAILED) is None


def test_export_failure_outranks_partial_input() -> None:
    """Nothing exported and a bad record: 7 (the precedence table)."""
    assert code_for(spans=1, damaged=1, turns=1, export_failed=True) is ExitCode.EXPORT_FAILED
    assert code_for(spans=1, damaged=1, turns=1) is ExitCode.PARTIAL_INPUT


def test_partial_input() -> None:
    """Damaged records beside good ones: 3, with the count skipped."""
    summary = _summary(bad=1, damaged_files=1)
    assert exit_code(summary) is ExitCode.PARTIAL_INPUT
    assert explain(summary, ExitCode.PARTIAL_INPUT) == (
        "partial input: 2 damaged record(s) or stream(s) skipped; the results of everything "
        "readable are written"
    )


def test_evaluation_counts_default_to_none_ran() -> None:
    """Given only evaluations (none failed) or only failures (none ran), the run is not 6."""
    assert code_for(spans=1, damaged=0, turns=1, evaluations=1) is ExitCode.OK
    assert code_for(spans=1, damaged=0, turns=1, evaluations_failed=1) is ExitCode.OK
