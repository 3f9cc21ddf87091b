"""The evaluator protocols, and the one wrapper that every call into an evaluator goes through.

An evaluator is any object with a `name` and either `evaluate(turn) -> Score` (sync: cheap,
deterministic) or `async aevaluate(turn) -> Score` (async: LLM judges). `run_evaluator` and
`arun_evaluator` are the plug-in boundary: they never raise, so neither the app nor the runner
needs a try/except of its own around user code.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Final, Protocol, TypeAlias, runtime_checkable

from groundwire import semconv
from groundwire._types import RagTurn, Score

__all__ = [
    "JUDGE_UNREACHABLE",
    "AnyEvaluator",
    "AsyncEvaluator",
    "EvaluationOutcome",
    "Evaluator",
    "SkipEvaluation",
    "arun_evaluator",
    "is_async_evaluator",
    "run_evaluator",
]

logger = logging.getLogger("groundwire")


@runtime_checkable
class Evaluator(Protocol):
    """A synchronous evaluator: cheap and deterministic, safe to run on any thread."""

    @property
    def name(self) -> str:
        """The score's name (`gen_ai.evaluation.name`)."""
        ...

    def evaluate(self, turn: RagTurn) -> Score:
        """Score one turn."""
        ...


@runtime_checkable
class AsyncEvaluator(Protocol):
    """An asynchronous evaluator, typically an LLM judge."""

    @property
    def name(self) -> str:
        """The score's name (`gen_ai.evaluation.name`)."""
        ...

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Score one turn."""
        ...


AnyEvaluator: TypeAlias = Evaluator | AsyncEvaluator
"""Either kind of evaluator."""


def is_async_evaluator(evaluator: AnyEvaluator) -> bool:
    """True when the evaluator is async (has `aevaluate`); async wins when it has both."""
    return asyncio.iscoroutinefunction(getattr(evaluator, "aevaluate", None))


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    """A score with how long it took; `raised` is True when the evaluator raised."""

    score: Score
    duration_s: float
    raised: bool


JUDGE_UNREACHABLE: Final = "judge_unreachable"
"""The skip reason (`Score.details["skip_reason"]`) of evaluations a judge's open breaker skipped;
`--resume` scores such turns again (the judge may be back)."""


class SkipEvaluation(Exception):  # noqa: N818 - a signal, like StopIteration, not an error
    """Raised inside an evaluator to say "not evaluated, for `reason`" (e.g. `judge_unreachable`):
    the boundary records a `skipped` score (value None) instead of an error, and logs nothing."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _skipped(evaluator: AnyEvaluator, skip: SkipEvaluation, started: float) -> EvaluationOutcome:
    score = Score(
        name=_safe_name(evaluator),
        value=None,
        label=semconv.LABEL_SKIPPED,
        explanation=str(skip),
        details={"skip_reason": skip.reason},
    )
    return EvaluationOutcome(score, time.perf_counter() - started, False)


def _checked(evaluator: AnyEvaluator, result: object) -> Score:
    if not isinstance(result, Score):
        raise TypeError(
            f"evaluator {evaluator.name!r} returned {type(result).__name__}, expected a Score"
        )
    return result


def _failure(evaluator: AnyEvaluator, error: BaseException, started: float) -> EvaluationOutcome:
    name = _safe_name(evaluator)
    logger.warning("evaluator %r failed: %s: %s", name, type(error).__name__, error)
    return EvaluationOutcome(Score.failed(name, error), time.perf_counter() - started, True)


def _safe_name(evaluator: object) -> str:
    try:
        return str(evaluator.name)  # type: ignore[attr-defined]
    except Exception:
        return type(evaluator).__name__


def run_evaluator(evaluator: Evaluator, turn: RagTurn) -> EvaluationOutcome:
    """Run a sync evaluator; an exception becomes a NaN score with `error` set, never a raise."""
    started = time.perf_counter()
    try:
        score = _checked(evaluator, evaluator.evaluate(turn))
    except SkipEvaluation as skip:
        return _skipped(evaluator, skip, started)
    except Exception as error:
        return _failure(evaluator, error, started)
    return EvaluationOutcome(score, time.perf_counter() - started, False)


async def arun_evaluator(
    evaluator: AnyEvaluator, turn: RagTurn, *, timeout_s: float | None = None
) -> EvaluationOutcome:
    """Run either kind of evaluator from async code, with an optional deadline; never raises.

    Sync evaluators run in a worker thread so they do not block the event loop.
    """
    started = time.perf_counter()
    try:
        if is_async_evaluator(evaluator):
            coroutine = evaluator.aevaluate(turn)  # type: ignore[union-attr]
        else:
            coroutine = asyncio.to_thread(evaluator.evaluate, turn)  # type: ignore[union-attr]
        result = await asyncio.wait_for(coroutine, timeout_s)
        score = _checked(evaluator, result)
    except TimeoutError:
        error = TimeoutError(f"no result within {timeout_s} s")
        return _failure(evaluator, error, started)
    except SkipEvaluation as skip:
        return _skipped(evaluator, skip, started)
    except Exception as error:
        return _failure(evaluator, error, started)
    return EvaluationOutcome(score, time.perf_counter() - started, False)
