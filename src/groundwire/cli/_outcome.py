"""A run's summary -> its exit code and the line explaining it: the one place this is decided.

Order, first match wins (see `ExitCode`): INTERRUPTED, NOTHING_READABLE, NO_TURNS,
ALL_EVALUATIONS_FAILED, EXPORT_FAILED, PARTIAL_INPUT, OK.
BAD_ARGUMENTS is decided before a run starts.
"""

from __future__ import annotations

from groundwire.cli._exit import ExitCode
from groundwire.offline.rescore import RescoreSummary

__all__ = ["exit_code", "explain"]


def exit_code(summary: RescoreSummary, *, allow_empty: bool = False) -> ExitCode:
    """The exit code that says what the run did (see the table in `groundwire.cli._exit`)."""
    read = summary.read
    if summary.interrupted:
        return ExitCode.INTERRUPTED
    if read.spans == 0 and summary.damaged_inputs > 0:
        return ExitCode.NOTHING_READABLE
    if summary.turns_read == 0 and not allow_empty:
        return ExitCode.NO_TURNS
    if summary.evaluations > 0 and summary.evaluations_failed == summary.evaluations:
        return ExitCode.ALL_EVALUATIONS_FAILED
    if summary.export is not None and summary.export.failed:
        return ExitCode.EXPORT_FAILED
    if summary.damaged_inputs > 0:
        return ExitCode.PARTIAL_INPUT
    return ExitCode.OK


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
