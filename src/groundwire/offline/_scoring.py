"""Scoring chunks of turns, in this process or in worker processes.

Sync evaluators run directly (`run_evaluator`); when any evaluator is async the chunk runs on an
event loop (`arun_evaluator`, sync ones in threads) with at most `concurrency` calls in flight.
That loop is one per process, kept on a daemon thread for the whole run, so judge clients that
bind to a loop (httpx, openai) keep working from one chunk to the next, and `rescore` works from
code that already runs a loop (Jupyter).
Worker processes build their evaluators once, from a picklable spec, and ignore SIGINT so that
Ctrl-C reaches only the parent, which stops cleanly.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, Final, TypeVar

from groundwire._evaluate import EvaluatorSpec
from groundwire._evaluator import (
    AnyEvaluator,
    EvaluationOutcome,
    arun_evaluator,
    is_async_evaluator,
    run_evaluator,
)
from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn, Score
from groundwire.offline._results import TurnResult

__all__ = ["WorkerScores", "init_worker", "join_scores", "score_chunk", "score_in_worker"]

_worker_evaluators: list[AnyEvaluator] = []
_worker_concurrency = 8
T = TypeVar("T")


class _Loop:
    """One event loop on a daemon thread, started on first use and reused for every chunk."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the shared loop and wait for its result."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="groundwire-rescore-loop", daemon=True
                ).start()
                self._loop = loop
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()


_LOOP = _Loop()


async def _score_async(
    turns: Sequence[RagTurn], evaluators: Sequence[AnyEvaluator], concurrency: int
) -> list[list[EvaluationOutcome]]:
    """Every evaluator on every turn, at most `concurrency` calls at once; outcomes by turn."""
    limit = asyncio.Semaphore(concurrency)

    async def one(evaluator: AnyEvaluator, turn: RagTurn) -> EvaluationOutcome:
        """One evaluation under the concurrency limit."""
        async with limit:
            return await arun_evaluator(evaluator, turn)

    async def per_turn(turn: RagTurn) -> list[EvaluationOutcome]:
        """All evaluators on one turn, in evaluator order."""
        return list(await asyncio.gather(*(one(ev, turn) for ev in evaluators)))

    return list(await asyncio.gather(*(per_turn(turn) for turn in turns)))


def score_chunk(
    turns: Sequence[RagTurn], evaluators: Sequence[AnyEvaluator], concurrency: int = 8
) -> list[TurnResult]:
    """Score each turn with every evaluator; never raises for an evaluator's failure."""
    if any(is_async_evaluator(evaluator) for evaluator in evaluators):
        outcomes = _LOOP.run(_score_async(turns, evaluators, concurrency))
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


THREAD_VARIABLES: Final = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
"""Thread-pool sizes of numpy's BLAS and friends, read when those libraries load."""


def init_worker(spec: EvaluatorSpec | Sequence[Any], concurrency: int, threads: int = 1) -> None:
    """Worker-process initialiser: ignore SIGINT, size native thread pools, build the evaluators.

    Each worker's BLAS gets `threads` threads (unless the user set the variables), so N workers
    do not oversubscribe the cores; numpy must not be imported before this runs.
    """
    global _worker_concurrency
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))
    _worker_evaluators[:] = resolve_evaluators(spec)
    _worker_concurrency = concurrency


WorkerScores = list[tuple[dict[str, Score], dict[str, float]]]
"""Per turn of a chunk: scores and durations by evaluator (the turns stay with the parent)."""


def score_in_worker(turns: list[RagTurn]) -> WorkerScores:
    """Score a chunk with the evaluators `init_worker` built (runs in a worker process).

    Only the scores travel back: the parent still holds the turns, so their texts are not
    pickled a second time.
    """
    results = score_chunk(turns, _worker_evaluators, _worker_concurrency)
    return [(result.scores, result.durations) for result in results]


def join_scores(turns: list[RagTurn], scores: WorkerScores) -> list[TurnResult]:
    """The parent's turns with the scores a worker computed for them."""
    return [
        TurnResult(turn, by_name, durations)
        for turn, (by_name, durations) in zip(turns, scores, strict=True)
    ]
