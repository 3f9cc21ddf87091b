"""configure() shortens the interpreter's thread switch interval while groundwire runs (a waking
app thread waits for the GIL at most that long behind a busy evaluation thread), never overrides
an interval the app chose unless told to, and shutdown() puts the earlier one back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

import groundwire
from groundwire import RagTurn, Score

from .conftest import Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


class _One:
    """A cheap sync evaluator."""

    name = "one"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score 1."""
        return Score(name=self.name, value=1.0)


@pytest.fixture(autouse=True)
def python_interval(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts at CPython's default interval, without the variable, and the test
    process gets its own interval back afterwards."""
    before = sys.getswitchinterval()
    monkeypatch.delenv("GROUNDWIRE_SWITCH_INTERVAL_S", raising=False)
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def _options(telemetry: Telemetry, **extra: Any) -> dict[str, Any]:
    return {
        "evaluators": [_One()],
        "instrument": False,
        "tracer_provider": telemetry.tracer_provider,
        "meter_provider": telemetry.meter_provider,
        **extra,
    }


def test_default_is_one_millisecond_and_shutdown_restores_pythons(telemetry: Telemetry) -> None:
    groundwire.configure(**_options(telemetry))
    assert sys.getswitchinterval() == pytest.approx(0.001)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_an_interval_the_app_chose_is_left_alone_by_default(telemetry: Telemetry) -> None:
    sys.setswitchinterval(0.002)
    groundwire.configure(**_options(telemetry))
    assert sys.getswitchinterval() == pytest.approx(0.002)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_an_explicit_interval_wins_over_the_apps_and_is_undone(telemetry: Telemetry) -> None:
    sys.setswitchinterval(0.002)
    groundwire.configure(**_options(telemetry, switch_interval_s=0.0005))
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.002)


def test_zero_leaves_the_interval_alone(telemetry: Telemetry) -> None:
    groundwire.configure(**_options(telemetry, switch_interval_s=0))
    assert sys.getswitchinterval() == pytest.approx(0.005)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_the_variable_sets_it_and_the_argument_beats_the_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.setswitchinterval(0.003)  # the app's own: the variable is an explicit choice too
    monkeypatch.setenv("GROUNDWIRE_SWITCH_INTERVAL_S", "0.002")
    groundwire.configure(**_options(telemetry))
    assert sys.getswitchinterval() == pytest.approx(0.002)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.003)
    groundwire.configure(**_options(telemetry, switch_interval_s=0.0007))
    assert sys.getswitchinterval() == pytest.approx(0.0007)
    groundwire.shutdown(2)


def test_a_change_made_after_configure_is_not_undone(telemetry: Telemetry) -> None:
    groundwire.configure(**_options(telemetry))
    sys.setswitchinterval(0.004)  # the app changed its mind meanwhile: its choice stands
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.004)


@pytest.mark.parametrize("seconds", [1.0, 1e-6])
def test_the_bounds_are_accepted(telemetry: Telemetry, seconds: float) -> None:
    """One second and one microsecond are the longest and shortest intervals allowed."""
    groundwire.configure(**_options(telemetry, switch_interval_s=seconds))
    assert sys.getswitchinterval() == pytest.approx(seconds)
    groundwire.shutdown(2)
    assert sys.getswitchinterval() == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (-0.001, ValueError, "switch_interval_s must be 0"),
        (2.0, ValueError, "up to 1"),
        (float("nan"), ValueError, "switch_interval_s"),
        (1e-9, ValueError, "at least 1e-06"),
        (True, TypeError, "switch_interval_s must be a number of seconds"),
        ("0.001", TypeError, "switch_interval_s must be a number of seconds"),
    ],
)
def test_bad_values_name_the_argument_before_anything_is_installed(
    telemetry: Telemetry, value: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        groundwire.configure(**_options(telemetry, switch_interval_s=value))
    assert sys.getswitchinterval() == pytest.approx(0.005)
    groundwire.configure(**_options(telemetry))  # nothing was left installed
    groundwire.shutdown(2)


@pytest.mark.parametrize(("raw", "words"), [("fast", "must be a number"), ("-1", "must be 0")])
def test_bad_variable_values_name_the_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, raw: str, words: str
) -> None:
    monkeypatch.setenv("GROUNDWIRE_SWITCH_INTERVAL_S", raw)
    with pytest.raises(ValueError, match=f"GROUNDWIRE_SWITCH_INTERVAL_S {words}"):
        groundwire.configure(**_options(telemetry))
    assert sys.getswitchinterval() == pytest.approx(0.005)
