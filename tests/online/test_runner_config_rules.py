"""`RunnerConfig`'s rules, constructed directly: its defaults, what it normalises, and the exact
message of each bad option (each names the option and the value given), so that `configure()`
fails early and clearly. Milliseconds in all."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from groundwire import RagTurn
from groundwire.runner import RunnerConfig

from .conftest import AnswerLength, HasContext, Judge


def _config(**options: Any) -> RunnerConfig:
    """A config of two sync evaluators and one async judge, with `options`."""
    options.setdefault("evaluators", [HasContext(), Judge(), AnswerLength()])
    return RunnerConfig(**options)


def _refused(error: type[Exception], message: str, **options: Any) -> None:
    """Constructing with `options` raises `error` with exactly `message`."""
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        _config(**options)


def test_the_defaults() -> None:
    """Everything in the background at every rate, 2048 queued turns, two workers, eight
    concurrent judges, a 30 s timeout, on threads, with no filter or budget."""
    config = _config()
    assert config.inline == frozenset() and config.sample_rate == 1.0
    assert config.evaluator_sample_rates == {} and config.turn_filter is None
    assert config.judge_token_budget is None and config.max_queue_size == 2048
    assert config.workers == 2 and config.async_concurrency == 8
    assert config.evaluator_timeout_s == 30.0 and config.executor == "threads"


def test_options_are_normalised() -> None:
    """Evaluators become a tuple, inline names a frozenset, rates floats in a plain dict."""
    has_context, judge, length = HasContext(), Judge(), AnswerLength()
    config = RunnerConfig(
        [has_context, judge, length],
        inline={"has_context"},
        sample_rate=1,
        evaluator_sample_rates={"judge": 0},
    )
    assert config.evaluators == (has_context, judge, length)
    assert config.inline == frozenset({"has_context"}) and type(config.inline) is frozenset
    assert type(config.sample_rate) is float and config.sample_rate == 1.0
    assert config.evaluator_sample_rates == {"judge": 0.0}
    assert type(config.evaluator_sample_rates["judge"]) is float


def test_inline_and_background_evaluators_keep_the_configured_order() -> None:
    """The inline ones and the rest, each in configuration order; looked up by name."""
    has_context, judge, length = HasContext(), Judge(), AnswerLength()
    config = RunnerConfig([has_context, judge, length], inline={"answer_length", "has_context"})
    assert config.inline_evaluators == (has_context, length)
    assert config.background_evaluators == (judge,)
    assert config.by_name("judge") is judge and config.by_name("answer_length") is length
    with pytest.raises(KeyError, match=r"^'missing'$"):
        config.by_name("missing")


def test_an_evaluators_rate_is_its_own_or_one() -> None:
    """`rate_for` gives an evaluator's own rate, 1.0 for one without."""
    config = _config(evaluator_sample_rates={"judge": 0.25})
    assert config.rate_for("judge") == 0.25 and config.rate_for("has_context") == 1.0


def test_evaluator_names_must_be_unique() -> None:
    """Two evaluators of one name are refused, listing the names."""
    _refused(
        ValueError,
        "evaluator names must be unique, got ['has_context', 'has_context']",
        evaluators=[HasContext(), HasContext()],
    )


def test_inline_names_must_be_configured_sync_evaluators() -> None:
    """Unknown inline names are listed (sorted); an async one cannot run inline."""
    names = "['has_context', 'judge', 'answer_length']"
    _refused(
        ValueError,
        f"inline names ['x', 'y'] are not among the evaluators {names}",
        inline={"y", "x", "has_context"},
    )
    _refused(ValueError, "inline evaluators must be sync; ['judge'] are async", inline={"judge"})
    assert _config(inline={"has_context", "answer_length"}).inline == {
        "has_context",
        "answer_length",
    }


def test_rates_are_checked_and_named() -> None:
    """The global and per-evaluator rates must be numbers in [0, 1], for known evaluators."""
    _refused(ValueError, "sample_rate must be in [0, 1], got 1.5", sample_rate=1.5)
    _refused(TypeError, "sample_rate must be a number in [0, 1], got True", sample_rate=True)
    _refused(
        ValueError,
        "evaluator_sample_rates['judge'] must be in [0, 1], got -0.1",
        evaluator_sample_rates={"judge": -0.1},
    )
    names = "['has_context', 'judge', 'answer_length']"
    _refused(
        ValueError,
        f"evaluator_sample_rates names ['a', 'b'] are not among {names}",
        evaluator_sample_rates={"b": 0.5, "judge": 0.5, "a": 0.5},
    )


def test_the_turn_filter_must_be_callable() -> None:
    """A filter that is not a function is refused; a function is kept."""

    def keep(turn: RagTurn) -> bool:
        return True

    _refused(TypeError, "turn_filter must be callable, got 'yes'", turn_filter="yes")
    assert _config(turn_filter=keep).turn_filter is keep


def test_the_judge_token_budget_is_a_whole_number_of_zero_or_more() -> None:
    """None, 0 or more is allowed; a bool, a float or a negative number is refused."""
    for bad in (True, 2.5, "10"):
        _refused(
            TypeError,
            f"judge_token_budget must be a whole number or None, got {bad!r}",
            judge_token_budget=bad,
        )
    _refused(ValueError, "judge_token_budget must be 0 or more, got -1", judge_token_budget=-1)
    assert _config(judge_token_budget=0).judge_token_budget == 0


@pytest.mark.parametrize("option", ["max_queue_size", "workers", "async_concurrency"])
def test_counts_are_whole_numbers_of_at_least_one(option: str) -> None:
    """A bool, a float, zero or a negative count is refused naming the option; 1 is allowed."""
    for bad in (0, -3, 1.0, True):
        _refused(
            ValueError,
            f"{option} must be a whole number of at least 1, got {bad!r}",
            **{option: bad},
        )
    assert getattr(_config(**{option: 1}), option) == 1


def test_the_evaluator_timeout_is_a_positive_finite_number_or_none() -> None:
    """None or a positive int or float; never a bool, a string, zero, negative or not finite."""
    for bad in (0, -1.0, math.inf, math.nan, True, "5"):
        _refused(
            ValueError,
            f"evaluator_timeout_s must be a positive number or None, got {bad!r}",
            evaluator_timeout_s=bad,
        )
    assert _config(evaluator_timeout_s=None).evaluator_timeout_s is None
    assert _config(evaluator_timeout_s=2).evaluator_timeout_s == 2
    assert _config(evaluator_timeout_s=0.001).evaluator_timeout_s == 0.001


def test_the_executor_is_threads_or_process() -> None:
    """Only the two executors are known."""
    _refused(
        ValueError, "executor must be one of ['threads', 'process'], got 'gpu'", executor="gpu"
    )
    assert _config(executor="process").executor == "process"


def test_only_names_must_be_unique() -> None:
    """Two evaluators of one class with different names are fine."""
    second = HasContext()
    second.name = "has_context_2"  # type: ignore[misc]
    config = RunnerConfig([HasContext(), second])
    assert [e.name for e in config.evaluators] == ["has_context", "has_context_2"]
