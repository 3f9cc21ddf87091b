"""The shared rules for numbers read from outside (`groundwire._numbers`)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from groundwire._numbers import finite_float, unit_score


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.5, 0.5),
        (2, 2.0),
        (-3, -3.0),
        ("0.25", 0.25),
        (" 7 ", 7.0),
        ("", None),
        ("nan", None),
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        ("inf", None),
        (True, None),
        (False, None),
        (None, None),
        ("high", None),
        ([1], None),
    ],
)
def test_finite_float_takes_numbers_and_numeric_strings(value: Any, expected: float | None) -> None:
    """Numbers and numeric strings; bools, non-finite values and anything else are None."""
    result = finite_float(value)
    assert result == expected
    assert result is None or type(result) is float


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0.0),
        (1, 1.0),
        (0.0, 0.0),
        (1.0, 1.0),
        (0.47, 0.47),
        (1.0000001, None),
        (-0.0000001, None),
        (2, None),
        ("0.5", None),
        (True, None),
        (False, None),
        (None, None),
        (math.nan, None),
        (math.inf, None),
    ],
)
def test_unit_score_takes_finite_numbers_in_zero_one(value: Any, expected: float | None) -> None:
    """A score in [0, 1] from a number only: strings, booleans and the rest are None."""
    result = unit_score(value)
    assert result == expected
    assert result is None or type(result) is float
