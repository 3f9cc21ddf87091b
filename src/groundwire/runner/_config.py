"""What the runner does with turns: which evaluators, where they run, and how much.

`RunnerConfig` validates everything on construction, so a bad option fails in `configure()` with
a message naming it, never later on a worker thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from groundwire._evaluator import AnyEvaluator, is_async_evaluator
from groundwire._types import RagTurn
from groundwire.runner._sampling import check_rate

__all__ = ["RunnerConfig", "TurnFilter"]

TurnFilter = Callable[[RagTurn], bool]
"""A predicate on a turn: False means "do not score this one" (counted as sampled out)."""


def _positive_int(name: str, value: object) -> int:
    """`value` when it is an int of at least 1, else a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, got {value!r}")
    return value


@dataclass(frozen=True)
class RunnerConfig:
    """Options of online evaluation (the `groundwire.configure()` arguments about scoring)."""

    evaluators: Sequence[AnyEvaluator]
    inline: frozenset[str] = frozenset()
    """Names of sync evaluators run on the app's thread as the turn's root span ends."""
    sample_rate: float = 1.0
    evaluator_sample_rates: Mapping[str, float] = field(default_factory=dict)
    turn_filter: TurnFilter | None = None
    judge_token_budget: int | None = None
    """LLM-judge tokens per rolling hour; None: unlimited."""
    max_queue_size: int = 2048
    workers: int = 2
    async_concurrency: int = 8
    evaluator_timeout_s: float | None = 30.0
    executor: str = "threads"
    """Where sync evaluators run: `threads` (the runner's worker threads) or `process` (one
    worker process, off the app's GIL; see `groundwire.runner._process`)."""

    def __post_init__(self) -> None:
        """Validate every option; errors name the option."""
        names = [evaluator.name for evaluator in self.evaluators]
        if len(set(names)) != len(names):
            raise ValueError(f"evaluator names must be unique, got {names}")
        object.__setattr__(self, "evaluators", tuple(self.evaluators))
        object.__setattr__(self, "inline", frozenset(self.inline))
        unknown = sorted(self.inline - set(names))
        if unknown:
            raise ValueError(f"inline names {unknown} are not among the evaluators {names}")
        not_sync = sorted(name for name in self.inline if is_async_evaluator(self.by_name(name)))
        if not_sync:
            raise ValueError(f"inline evaluators must be sync; {not_sync} are async")
        object.__setattr__(self, "sample_rate", check_rate("sample_rate", self.sample_rate))
        rates = {
            name: check_rate(f"evaluator_sample_rates[{name!r}]", rate)
            for name, rate in dict(self.evaluator_sample_rates).items()
        }
        unknown = sorted(set(rates) - set(names))
        if unknown:
            raise ValueError(f"evaluator_sample_rates names {unknown} are not among {names}")
        object.__setattr__(self, "evaluator_sample_rates", rates)
        if self.turn_filter is not None and not callable(self.turn_filter):
            raise TypeError(f"turn_filter must be callable, got {self.turn_filter!r}")
        budget = self.judge_token_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
            raise TypeError(f"judge_token_budget must be a whole number or None, got {budget!r}")
        if budget is not None and budget < 0:
            raise ValueError(f"judge_token_budget must be 0 or more, got {budget}")
        _positive_int("max_queue_size", self.max_queue_size)
        _positive_int("workers", self.workers)
        _positive_int("async_concurrency", self.async_concurrency)
        timeout = self.evaluator_timeout_s
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise ValueError(
                f"evaluator_timeout_s must be a positive number or None, got {timeout!r}"
            )

        if self.executor not in ("threads", "process"):
            raise ValueError(
                f"executor must be one of ['threads', 'process'], got {self.executor!r}"
            )

    def by_name(self, name: str) -> AnyEvaluator:
        """The evaluator called `name`."""
        for evaluator in self.evaluators:
            if evaluator.name == name:
                return evaluator
        raise KeyError(name)

    @property
    def inline_evaluators(self) -> tuple[AnyEvaluator, ...]:
        """Evaluators run inline, in configuration order."""
        return tuple(e for e in self.evaluators if e.name in self.inline)

    @property
    def background_evaluators(self) -> tuple[AnyEvaluator, ...]:
        """Evaluators run by the background runner, in configuration order."""
        return tuple(e for e in self.evaluators if e.name not in self.inline)

    def rate_for(self, name: str) -> float:
        """The sampling rate of one evaluator (the global rate applies first)."""
        return self.evaluator_sample_rates.get(name, 1.0)
