"""A run's summary -> its exit code and the line explaining it: the one place this is decided.

`rescore` and `inspect` both decide through `code_for`, so the same input exits the same way.
Order, first match wins (`groundwire.cli._exit.PRECEDENCE`): INTERRUPTED, NOTHING_READABLE,
NO_TURNS, ALL_EVALUATIONS_FAILED, EXPORT_FAILED, PARTIAL_INPUT, OK. BAD_ARGUMENTS is decided
before a run starts.
"""

from __future__ import annotations

from groundwire.cli._exit import ExitCode
from groundwire.offline.rescore import RescoreSummary

__all__ = ["code_for", "exit_code", "explain"]


def code_for(
    *,
    spans: int,
    damaged: int,
    turns: int,
    allow_empty: bool = False,
    interrupted: bool = False,
    evaluations: int = 0,
    evaluations_failed: int = 0,
    export_failed: bool = False,
) -> ExitCode:
    """The exit code for what a run read and did; `inspect` passes what it read, no evaluation."""
    if interrupted:
        return ExitCode.INTERRUPTED
    if spans == 0 and damaged > 0:
        return ExitCode.NOTHING_READABLE
    if turns == 0 and not allow_empty:
        return ExitCode.NO_TURNS
    if evaluations > 0 and evaluations_failed == evaluations:
        return ExitCode.ALL_EVALUATIONS_FAILED
    if export_failed:
        return ExitCode.EXPORT_FAILED
    if damaged > 0:
        return ExitCode.PARTIAL_INPUT
    return ExitCode.OK


def exit_code(summary: RescoreSummary, *, allow_empty: bool = False) -> ExitCode:
    """The exit code that says what the run did (see the table in `groundwire.cli._exit`)."""
    return code_for(
        spans=summary.read.spans,
        damaged=summary.damaged_inputs,
        turns=summary.turns_read,
        allow_empty=allow_empty,
        interrupted=summary.interrupted,
        evaluations=summary.evaluations,
        evaluations_failed=summary.evaluations_failed,
        export_failed=summary.export is not None and summary.export.failed,
    )


def explain(summary: RescoreSummary, code: ExitCode) -> str | None:
    """One line saying why the run did not exit 0 (None for OK)."""
    read = summary.read
    if code is ExitCode.INTERRUPTED:
        return (
            f"interrupted after {summary.turns_scored} scored turns; run again with --resume "
            "to continue"
        )
    if code is ExitCode.NOTHING_READABLE:
        return (
            f"nothing readable: no span in {read.files} file(s); {summary.damaged_inputs} "
            "damaged record(s) or stream(s) (see the messages above)"
        )
    if code is ExitCode.NO_TURNS:
        return (
            f"no RAG turn found in {read.spans} spans ({summary.counts.traces} traces); "
            "nothing was scored (--allow-empty accepts this)"
        )
    if code is ExitCode.ALL_EVALUATIONS_FAILED:
        failed = sum(t.failed for t in summary.tallies.values())
        skipped = sum(t.skipped for t in summary.tallies.values())
        return (
            f"every evaluation failed or was skipped: {failed} failed, {skipped} skipped, "
            f"of {summary.evaluations}"
        )
    if code is ExitCode.EXPORT_FAILED and summary.export is not None:
        why = "; ".join(summary.export.reasons) or "unknown"
        return (
            f"--export-otlp delivered nothing: {summary.export.endpoint} accepted none of "
            f"{summary.export.emitted} evaluation spans ({why})"
        )
    if code is ExitCode.PARTIAL_INPUT:
        return (
            f"partial input: {summary.damaged_inputs} damaged record(s) or stream(s) skipped; "
            "the results of everything readable are written"
        )
    return None
