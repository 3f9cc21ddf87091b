"""The judge token budget: a rolling hour in one-minute buckets, on an injected clock."""

from __future__ import annotations

import pytest

from groundwire.runner import TokenBudget


class Clock:
    """A settable monotonic clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        """The current time."""
        return self.now


def test_usage_in_one_minute_adds_up_and_the_limit_itself_is_not_allowed() -> None:
    """Spends in the same minute accumulate; at exactly the limit no more judging is allowed."""
    clock = Clock()
    budget = TokenBudget(100, clock=clock)
    budget.spend(60)
    clock.now = 30.0
    budget.spend(39)
    assert budget.used() == 99
    assert budget.allows()
    budget.spend(1)
    assert budget.used() == 100
    assert not budget.allows()


def test_zero_and_negative_spends_are_ignored() -> None:
    """Nothing is recorded for 0 or negative usage (a judge that reported none)."""
    budget = TokenBudget(10, clock=Clock())
    budget.spend(0)
    budget.spend(-5)
    assert budget.used() == 0


def test_usage_leaves_the_window_an_hour_after_its_minute_began() -> None:
    """A minute's usage counts until exactly one hour after that minute's start, then expires."""
    clock = Clock()
    budget = TokenBudget(1_000, clock=clock)
    clock.now = 30.0
    budget.spend(100)  # minute starting at 0
    clock.now = 70.0
    budget.spend(10)  # minute starting at 60
    clock.now = 3599.9
    assert budget.used() == 110
    clock.now = 3600.0
    assert budget.used() == 10
    clock.now = 3630.0
    assert budget.used() == 10
    clock.now = 3660.0
    assert budget.used() == 0


def test_a_spent_budget_allows_judging_again_once_usage_expires() -> None:
    """After the hour, the same budget allows judges again."""
    clock = Clock()
    budget = TokenBudget(50, clock=clock)
    budget.spend(80)
    assert not budget.allows()
    clock.now = 3600.0
    assert budget.allows()


def test_a_zero_budget_never_allows_a_judge() -> None:
    """`judge_token_budget=0` is valid and skips every judge."""
    assert not TokenBudget(0, clock=Clock()).allows()


@pytest.mark.parametrize(
    ("limit", "error", "message"),
    [
        (True, TypeError, "judge_token_budget must be a whole number, got True"),
        (1.5, TypeError, "judge_token_budget must be a whole number, got 1.5"),
        (-1, ValueError, "judge_token_budget must be 0 or more, got -1"),
    ],
)
def test_a_bad_budget_is_refused_naming_the_setting(
    limit: object, error: type[Exception], message: str
) -> None:
    """A bool, a float or a negative budget is refused with a message naming the setting."""
    with pytest.raises(error) as raised:
        TokenBudget(limit)  # type: ignore[arg-type]
    assert str(raised.value) == message
