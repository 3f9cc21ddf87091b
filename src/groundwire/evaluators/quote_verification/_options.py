"""Validated settings of one `verify_quotes` call (bad values fail at once, naming the option)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from groundwire.evaluators.quote_verification._trim import TRIM_METHODS, TrimMethod

__all__ = ["Options"]


def _int_option(name: str, value: object, minimum: int, *, optional: bool) -> int | None:
    """Check an integer option (or None when optional); the error names the option."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        expected = "an int or None" if optional else "an int"
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _float_option(name: str, value: object, low: float, high: float | None) -> float:
    """Check a numeric option within bounds; the error names the option."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    number = float(value)
    if math.isnan(number) or number < low or (high is not None and number > high):
        bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be {bounds}, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class Options:
    """The matching settings of `verify_quotes` (see its docstring for each)."""

    window_size: int | None
    overlap: int | None
    bm25_k1: float
    bm25_b: float
    ellipsis_max_gap: int | None
    trim_spans: bool
    trim_method: TrimMethod
    min_fuzzy_ratio: float
    expand_window_neighbors: int
    meaning_check: bool = True

    @classmethod
    def checked(
        cls,
        *,
        window_size: object,
        overlap: object,
        bm25_k1: object,
        bm25_b: object,
        ellipsis_max_gap: object,
        trim_spans: object,
        trim_method: object,
        min_fuzzy_ratio: object,
        expand_window_neighbors: object,
        meaning_check: object = True,
    ) -> Options:
        """Validate every option; the error names the option and the accepted values."""
        size = _int_option("window_size", window_size, 1, optional=True)
        over = _int_option("overlap", overlap, 0, optional=True)
        if size is not None and over is not None and over >= size:
            raise ValueError(f"overlap must be smaller than window_size ({size}), got {over}")
        for flag, value in (("trim_spans", trim_spans), ("meaning_check", meaning_check)):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool, got {type(value).__name__}")
        if trim_method not in TRIM_METHODS:
            raise ValueError(
                f"trim_method must be one of {list(TRIM_METHODS)}, got {trim_method!r}"
            )
        neighbours = _int_option(
            "expand_window_neighbors", expand_window_neighbors, 0, optional=False
        )
        return cls(
            window_size=size,
            overlap=over,
            bm25_k1=_float_option("bm25_k1", bm25_k1, 0.0, None),
            bm25_b=_float_option("bm25_b", bm25_b, 0.0, 1.0),
            ellipsis_max_gap=_int_option("ellipsis_max_gap", ellipsis_max_gap, 0, optional=True),
            trim_spans=bool(trim_spans),
            trim_method=trim_method,  # type: ignore[arg-type]
            min_fuzzy_ratio=_float_option("min_fuzzy_ratio", min_fuzzy_ratio, 0.0, 1.0),
            expand_window_neighbors=neighbours or 0,
            meaning_check=bool(meaning_check),
        )
