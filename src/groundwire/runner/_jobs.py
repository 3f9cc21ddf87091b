"""The runner's records of a turn: what inline evaluation did, the background job, the lost turn.

Plain data shared by admission (`_admission`), execution (`_execution`) and emission
(`_emission`); the runner's lock guards the fields a job's threads share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from groundwire import semconv
from groundwire._evaluator import AnyEvaluator, EvaluationOutcome
from groundwire._types import RagTurn, Score

__all__ = ["NO_INLINE", "InlineResult", "Job", "Lost", "service_of", "turn_outcome"]


class Lost(NamedTuple):
    """A submitted turn that will not be evaluated (sampled out or dropped), to be counted.

    A tuple, so that a backlog of them is counted by `collections.Counter` in C.
    """

    outcome: str
    """`semconv.OUTCOME_SAMPLED_OUT` or `semconv.OUTCOME_DROPPED`."""
    service: str | None
    """The turn's app (`service_of`); the turn itself is not kept."""
    count_evaluations: bool = True
    """False when no evaluation was configured for the turn (nothing to count in metrics)."""


@dataclass(frozen=True, slots=True)
class InlineResult:
    """What inline evaluation did for a turn, handed to the runner to count and to finish."""

    outcomes: tuple[EvaluationOutcome, ...] = ()
    sampled_out: tuple[str, ...] = ()
    """Inline evaluators left out by their per-evaluator rate."""

    @property
    def scores(self) -> tuple[Score, ...]:
        """The inline scores."""
        return tuple(outcome.score for outcome in self.outcomes)


NO_INLINE = InlineResult()
"""A turn that inline evaluation did nothing for."""


@dataclass(eq=False, slots=True)
class Job:
    """One turn's background work and what came of it so far."""

    turn: RagTurn
    inline: InlineResult
    pending: set[str]
    """Background evaluators with no outcome yet (counted as dropped if the job is dropped)."""
    planned: bool = False
    sync: list[AnyEvaluator] = field(default_factory=list)
    asynchronous: list[AnyEvaluator] = field(default_factory=list)
    next_sync: int = 0
    scores: list[Score] = field(default_factory=list)
    ran: int = 0
    failed: bool = False
    done: bool = False


def service_of(turn: RagTurn | None) -> str | None:
    """The turn's `service.name` (which app it came from), when known."""
    if turn is None:
        return None
    service = turn.attributes.get(semconv.SERVICE_NAME)
    return service if isinstance(service, str) else None


def turn_outcome(inline: InlineResult, ran: int, failed: bool) -> str:
    """The turn-level outcome: errored, scored or sampled_out."""
    if failed or any(not outcome.score.ok for outcome in inline.outcomes):
        return "errored"
    return "scored" if ran or inline.outcomes else "sampled_out"
