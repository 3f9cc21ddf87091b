"""What a `rescore` run read, scored and skipped: `RescoreSummary` and its per-evaluator tallies.

Filled in while the run goes (`tally` counts each chunk of results), shown by the CLI
(`RescoreSummary.lines`) and returned to callers of `groundwire.offline.rescore`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from groundwire._evaluator import JUDGE_UNREACHABLE
from groundwire.offline._export import ExportReport
from groundwire.offline._pipeline import TurnCounts
from groundwire.offline._results import ScoreCounts, TurnResult
from groundwire.offline.readers import ReadStats

__all__ = ["EvaluatorTally", "RescoreSummary", "tally"]


@dataclass(slots=True)
class EvaluatorTally(ScoreCounts):
    """How one evaluator fared over the run (`ScoreCounts`, and why evaluations were skipped)."""

    skip_reasons: dict[str, int] = field(default_factory=dict)
    """`skipped` by reason (`details["skip_reason"]`, e.g. `judge_unreachable`)."""


@dataclass(slots=True)
class RescoreSummary:
    """What a run read, scored and skipped; filled in while it runs."""

    evaluators: list[str]
    out: Path | None
    engine: str = "local"
    workers: int = 1
    total_bytes: int = 0
    """Size on disk of the input files (for progress)."""
    read: ReadStats = field(default_factory=ReadStats)
    counts: TurnCounts = field(default_factory=TurnCounts)
    turns_scored: int = 0
    tallies: dict[str, EvaluatorTally] = field(default_factory=dict)
    expected_matched: int = 0
    """Turns given gold answers from the `expected` file."""
    exported_spans: int = 0
    """Carrier spans handed to the OTLP exporter (see `export` for what the endpoint accepted)."""
    exported_log_records: int = 0
    """`gen_ai.evaluation.result` log records sent with `export_otlp`."""
    export: ExportReport | None = None
    """What `--export-otlp` delivered, when it was asked for."""
    resume_notes: list[str] = field(default_factory=list)
    """What `--resume` found in OUT (a torn last record dropped, a leftover partial file)."""
    kept_partial: Path | None = None
    """Where a failed run kept the results it wrote (OUT itself left as it was)."""
    interrupted: bool = False
    elapsed_s: float = 0.0
    results: list[TurnResult] | None = None
    """The results themselves, when no `out` file was given."""

    @property
    def turns_read(self) -> int:
        """Turns assembled from the files (resumed ones included)."""
        return self.counts.turns

    @property
    def turns_skipped(self) -> int:
        """Turns read but not scored: already in OUT, or left when the run was interrupted."""
        return self.counts.turns - self.turns_scored

    @property
    def evaluations(self) -> int:
        """Evaluations this run made (turns scored x evaluators), whatever their outcome."""
        return sum(
            t.scored + t.not_applicable + t.failed + t.skipped for t in self.tallies.values()
        )

    @property
    def evaluations_failed(self) -> int:
        """Evaluations that failed (NaN) or were skipped (no judge, judge unreachable)."""
        return sum(t.failed + t.skipped for t in self.tallies.values())

    @property
    def damaged_inputs(self) -> int:
        """Bad records skipped plus compressed streams cut short (what makes input partial)."""
        return self.read.bad_records + self.read.damaged_files

    @property
    def no_turn_reasons(self) -> list[str]:
        """Why traces gave no turn, one line per trace family (docs/assembly.md, "Diagnosis")."""
        return self.counts.no_turn.lines()

    def means(self) -> dict[str, float | None]:
        """Evaluator name -> mean computed value."""
        return {name: tally.mean for name, tally in self.tallies.items()}

    def lines(self) -> list[str]:
        """A short human-readable summary."""
        r, c = self.read, self.counts
        rate = self.turns_scored / self.elapsed_s if self.elapsed_s > 0 else 0.0
        skipped = sum(t.skipped for t in self.tallies.values())
        # a turn whose every evaluation was skipped (no judge) was read, not scored
        verb = "read" if self.evaluations and skipped == self.evaluations else "scored"
        out = [
            f"read {r.files} file(s): {r.records} records ({r.bad_records} bad, "
            f"{r.other_records} metrics/logs), {r.spans} spans, {c.traces} traces, {c.turns} turns",
            f"{verb} {self.turns_scored} turns in {self.elapsed_s:.1f} s ({rate:.1f} turns/s); "
            f"skipped {self.turns_skipped} ({c.resumed} already in the output)",
        ]
        if verb == "read":
            out.append(f"every evaluation skipped ({skipped}): nothing was scored")
        if r.damaged_files:
            out.append(
                f"{r.damaged_files} file(s) damaged or cut short: every record before the damage "
                "was read (see the messages above)"
            )
        if c.duplicate_spans or c.duplicate_turns:
            out.append(
                f"left out {c.duplicate_spans} duplicate spans and {c.duplicate_turns} duplicate "
                "turns (the same spans exported twice)"
            )
        if c.late_spans or c.forced_traces:
            out.append(
                f"reassembly: {c.forced_traces} traces released early to bound memory, "
                f"{c.late_spans} late spans ignored"
            )
        if c.evaluation_spans or c.evaluation_logs:
            out.append(
                f"left out {c.evaluation_spans} evaluation spans and {c.evaluation_logs} "
                "evaluation result log records of earlier scoring"
            )
        if c.incomplete:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(c.incomplete.items()))
            out.append(
                f"{c.incomplete_traces} traces incomplete, not scored ({reasons}): "
                "some of their spans never arrived (give every file of the time window)"
            )
        if c.parent_missing:
            out.append(
                f"{c.parent_missing} traces scored without a parent span that never arrived "
                "(their turns are whole; `groundwire inspect` names the missing span)"
            )
        if self.expected_matched:
            out.append(f"gold answers attached to {self.expected_matched} turns")
        unreachable = sum(t.skip_reasons.get(JUDGE_UNREACHABLE, 0) for t in self.tallies.values())
        if unreachable:
            out.append(
                f"{unreachable} evaluations skipped (judge_unreachable): the judge could not be "
                "reached (refused, DNS, TLS or timeout), so the client stopped calling it for a "
                "cool-down instead of retrying every turn; once it is back, run again with "
                "--resume to score just those turns"
            )
        if self.export is not None:
            out.extend(self.export.lines())
            if self.exported_log_records:
                out.append(
                    f"{self.exported_log_records} evaluation result log records handed to the "
                    "OTLP log exporter"
                )
        if self.interrupted:
            out.append("interrupted: the output holds every turn scored before the stop")
        return out


def tally(summary: RescoreSummary, result: TurnResult) -> None:
    """Count one scored turn on the summary, each score by its outcome."""
    summary.turns_scored += 1
    for name, score in result.scores.items():
        counts = summary.tallies.setdefault(name, EvaluatorTally())
        if counts.count(score) == "skipped":
            reason = str((score.details or {}).get("skip_reason") or "unspecified")
            counts.skip_reasons[reason] = counts.skip_reasons.get(reason, 0) + 1
