"""`evaluate` and `evaluate_many`: score turns from plain code, sync or async evaluators alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from pydantic import ValidationError

from groundwire._evaluator import (
    AnyEvaluator,
    Evaluator,
    arun_evaluator,
    is_async_evaluator,
    run_evaluator,
)
from groundwire._registry import resolve_evaluators
from groundwire._sync import run_sync
from groundwire._types import RagTurn, Score

__all__ = ["aevaluate_many", "evaluate", "evaluate_many"]

EvaluatorSpec = Sequence[str | AnyEvaluator] | Mapping[str, Mapping[str, Any]]
"""Evaluator names, instances, or a mapping of name -> constructor options."""


def _as_turn(turn: RagTurn | Mapping[str, Any], where: str) -> RagTurn:
    if isinstance(turn, RagTurn):
        return turn
    if isinstance(turn, Mapping):
        try:
            return RagTurn.model_validate(turn)
        except ValidationError as error:
            raise ValueError(f"{where} is not a valid RagTurn: {error}") from error
    raise TypeError(f"{where} is a {type(turn).__name__}; expected a RagTurn or a mapping")


async def _score_turn(
    turn: RagTurn, evaluators: Sequence[AnyEvaluator], limit: asyncio.Semaphore
) -> dict[str, Score]:
    async def one(evaluator: AnyEvaluator) -> Score:
        async with limit:
            return (await arun_evaluator(evaluator, turn)).score

    scores = await asyncio.gather(*(one(evaluator) for evaluator in evaluators))
    return {ev.name: score for ev, score in zip(evaluators, scores, strict=True)}


def evaluate(turn: RagTurn | Mapping[str, Any], evaluators: EvaluatorSpec) -> dict[str, Score]:
    """Score one turn with each evaluator; returns evaluator name -> Score.

    An evaluator that raises gives a NaN score with `error` set; the others still run.
    """
    checked = _as_turn(turn, "turn")
    resolved = resolve_evaluators(evaluators)
    if not any(is_async_evaluator(evaluator) for evaluator in resolved):
        sync = cast(list[Evaluator], resolved)
        return {ev.name: run_evaluator(ev, checked).score for ev in sync}
    return run_sync(_score_turn(checked, resolved, asyncio.Semaphore(len(resolved))))


def _prepare(
    turns: Iterable[RagTurn | Mapping[str, Any]], evaluators: EvaluatorSpec, concurrency: int
) -> tuple[list[RagTurn], list[AnyEvaluator]]:
    """Validate the arguments of the batch functions; errors name the argument or turn."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
    checked = [_as_turn(turn, f"turns[{index}]") for index, turn in enumerate(turns)]
    return checked, resolve_evaluators(evaluators)


async def _agather(
    turns: list[RagTurn], evaluators: list[AnyEvaluator], concurrency: int
) -> list[dict[str, Score]]:
    limit = asyncio.Semaphore(concurrency)
    return list(await asyncio.gather(*(_score_turn(t, evaluators, limit) for t in turns)))


async def aevaluate_many(
    turns: Iterable[RagTurn | Mapping[str, Any]],
    evaluators: EvaluatorSpec,
    *,
    concurrency: int = 8,
) -> list[dict[str, Score]]:
    """Async form of `evaluate_many` (sync evaluators run in threads, off the event loop)."""
    checked, resolved = _prepare(turns, evaluators, concurrency)
    return await _agather(checked, resolved, concurrency)


def evaluate_many(
    turns: Iterable[RagTurn | Mapping[str, Any]],
    evaluators: EvaluatorSpec,
    *,
    concurrency: int = 8,
) -> list[dict[str, Score]]:
    """Score many turns, at most `concurrency` evaluations in flight; results keep turn order.

    With only sync evaluators the turns are scored in this thread, one after another: they are
    CPU-bound, so threads would only add switching under the GIL (2x slower, measured).
    """
    checked, resolved = _prepare(turns, evaluators, concurrency)
    if not any(is_async_evaluator(evaluator) for evaluator in resolved):
        sync = cast(list[Evaluator], resolved)
        return [{ev.name: run_evaluator(ev, turn).score for ev in sync} for turn in checked]
    return run_sync(_agather(checked, resolved, concurrency))
