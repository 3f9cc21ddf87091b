"""Turns re-scored on the spot (`groundwire calibrate --traces`): read once, scored per judge.

The turns come out of the same reader and assembler as `rescore`'s; each judge configuration
then scores the same turns, so two judges are compared on exactly the same answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from groundwire import semconv
from groundwire._evaluate import evaluate_many
from groundwire._evaluator import AnyEvaluator
from groundwire._types import RagTurn
from groundwire.calibrate._scores import ScoredTurn, scored_turns

__all__ = ["Scored", "TracesRead", "read_turns", "score_turns"]


@dataclass(frozen=True, slots=True)
class TracesRead:
    """The turns of the trace files and what reading them met."""

    turns: list[RagTurn]
    spans: int
    damaged: int


@dataclass(frozen=True, slots=True)
class Scored:
    """One judge run: the scored turns, how many evaluations ran and how many gave no value."""

    turns: list[ScoredTurn]
    evaluations: int
    failed: int


def read_turns(
    paths: Sequence[str | os.PathLike[str]], on_problem: Callable[[str], None] | None = None
) -> TracesRead:
    """Every turn of the trace files (bad records reported through `on_problem` and skipped)."""
    from groundwire.offline import Problems, TurnCounts, iter_turns

    problems = Problems(on_report=on_problem)
    turns = list(iter_turns(paths, problems, TurnCounts()))
    stats = problems.stats
    return TracesRead(turns, stats.spans, stats.bad_records + stats.damaged_files)


def score_turns(
    turns: Sequence[RagTurn], evaluators: Sequence[AnyEvaluator], *, concurrency: int = 8
) -> Scored:
    """Score the turns with these evaluators; an error or a skip counts as failed."""
    results = evaluate_many(turns, list(evaluators), concurrency=concurrency)
    scores = [score for result in results for score in result.values()]
    failed = sum(1 for s in scores if s.error or s.label == semconv.LABEL_SKIPPED)
    return Scored(scored_turns(turns, results), len(scores), failed)
