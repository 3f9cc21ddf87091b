"""Turn-level accounting: every submitted turn ends as exactly one of four outcomes.

`submitted == scored + errored + dropped + sampled_out + in_flight` at every instant, which is
what the tests and `groundwire.stats()` users rely on to know nothing was lost silently.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunnerStats", "TurnCounters"]


@dataclass(frozen=True, slots=True)
class RunnerStats:
    """A snapshot of the runner's turn counts."""

    submitted: int
    scored: int
    """Every evaluation that ran succeeded."""
    errored: int
    """At least one evaluation failed (raised, timed out, or gave NaN)."""
    dropped: int
    """Not evaluated: the queue was full, or shutdown's deadline passed first."""
    sampled_out: int
    """Not evaluated by choice: sampling, the turn filter, per-evaluator rates or the budget."""
    in_flight: int
    """Queued or being evaluated."""
    queue_size: int

    @property
    def finished(self) -> int:
        """Turns that reached an outcome."""
        return self.scored + self.errored + self.dropped + self.sampled_out

    def adds_up(self) -> bool:
        """True when every submitted turn is finished or in flight, exactly once."""
        return self.submitted == self.finished + self.in_flight


class TurnCounters:
    """The counters behind `RunnerStats`; the runner guards them with its own lock."""

    def __init__(self) -> None:
        self.submitted = 0
        self.scored = 0
        self.errored = 0
        self.dropped = 0
        self.sampled_out = 0

    def add(self, outcome: str, turns: int = 1) -> None:
        """Count submitted turns that ended as `outcome` (`scored`, `errored`, ...)."""
        setattr(self, outcome, getattr(self, outcome) + turns)

    def snapshot(self, in_flight: int, queue_size: int) -> RunnerStats:
        """The counts now."""
        return RunnerStats(
            submitted=self.submitted,
            scored=self.scored,
            errored=self.errored,
            dropped=self.dropped,
            sampled_out=self.sampled_out,
            in_flight=in_flight,
            queue_size=queue_size,
        )
