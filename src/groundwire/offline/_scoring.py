"""Scoring chunks of turns, in this process or in worker processes.

Sync evaluators run directly (`run_evaluator`); when any evaluator is async the chunk runs on an
event loop (`arun_evaluator`, sync ones in threads) with at most `concurrency` calls in flight.
Worker processes build their evaluators once, from a picklable spec, and ignore SIGINT so that
Ctrl-C reaches only the parent, which stops cleanly.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from typing import Any

from groundwire._evaluate import EvaluatorSpec
from groundwire._evaluator import (
    AnyEvaluator,
    EvaluationOutcome,
    arun_evaluator,
    is_async_evaluator,
    run_evaluator,
)
from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn
from groundwire.offline._results import TurnResult

__all__ = ["init_worker", "score_chunk", "score_in_worker"]

_worker_evaluators: list[AnyEvaluator] = []
_worker_concurrency = 8


async def _score_async(
    turns: Sequence[RagTurn], evaluators: Sequence[AnyEvaluator], concurrency: int
) -> list[list[EvaluationOutcome]]:
    limit = asyncio.Semaphore(concurrency)

    async def one(evaluator: AnyEvaluator, turn: RagTurn) -> EvaluationOutcome:
        async with limit:
            return await arun_evaluator(evaluator, turn)

    async def per_turn(turn: RagTurn) -> list[EvaluationOutcome]:
        return list(await asyncio.gather(*(one(ev, turn) for ev in evaluators)))

    return list(await asyncio.gather(*(per_turn(turn) for turn in turns)))


def score_chunk(
    turns: Sequence[RagTurn], evaluators: Sequence[AnyEvaluator], concurrency: int = 8
) -> list[TurnResult]:
    """Score each turn with every evaluator; never raises for an evaluator's failure."""
    if any(is_async_evaluator(evaluator) for evaluator in evaluators):
        outcomes = asyncio.run(_score_async(turns, evaluators, concurrency))
    else:
        sync: Sequence[Any] = evaluators
        outcomes = [[run_evaluator(ev, turn) for ev in sync] for turn in turns]
    results: list[TurnResult] = []
    for turn, per_turn in zip(turns, outcomes, strict=True):
        scores = {ev.name: outcome.score for ev, outcome in zip(evaluators, per_turn, strict=True)}
        durations = {
            ev.name: outcome.duration_s for ev, outcome in zip(evaluators, per_turn, strict=True)
        }
        results.append(TurnResult(turn, scores, durations))
    return results


def init_worker(spec: EvaluatorSpec | Sequence[Any], concurrency: int) -> None:
    """Worker-process initialiser: ignore SIGINT and build the evaluators once."""
    global _worker_concurrency
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_evaluators[:] = resolve_evaluators(spec)
    _worker_concurrency = concurrency


def score_in_worker(turns: list[RagTurn]) -> list[TurnResult]:
    """Score a chunk with the evaluators `init_worker` built (runs in a worker process)."""
    return score_chunk(turns, _worker_evaluators, _worker_concurrency)
