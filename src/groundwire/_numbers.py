"""Numbers read from outside (span attributes, score files): one rule each, shared by readers.

A score or a document's retrieval score arrives as whatever the writer put there: a number, a
numeric string, a boolean, null, NaN. These say once what counts, so the assembler, the baseline
reader and the readers of recorded scores agree.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["finite_float", "unit_score"]


def finite_float(value: Any) -> float | None:
    """A finite float from a number or a numeric string, else None (booleans, None, NaN,
    infinities and anything `float()` refuses)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def unit_score(value: Any) -> float | None:
    """A finite number in [0, 1] as a float, else None: strings and booleans are not scores."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0.0 <= number <= 1.0 else None
