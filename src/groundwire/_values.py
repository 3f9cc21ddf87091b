"""Configuration values by kind: one converter per kind, each raising a short ValueError.

A value may come from YAML (already typed), an environment variable or a command-line flag (a
string), so each converter takes either and spells a kind one way everywhere. The caller adds
where the value came from (the gateway's `ConfigError` names the key and its source); secrets are
never part of these messages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "FALSE",
    "TRUE",
    "as_bool",
    "as_float",
    "as_headers",
    "as_int",
    "as_list",
    "as_mapping",
    "as_opt_int",
    "as_opt_str",
    "as_options",
    "as_rates",
    "as_str",
]

TRUE: Final = frozenset({"1", "true", "yes", "on"})
"""Spellings of an enabled flag (case-insensitive)."""
FALSE: Final = frozenset({"0", "false", "no", "off"})
"""Spellings of a disabled flag (case-insensitive)."""


def as_str(value: Any) -> str:
    """A non-blank string, stripped."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    return value.strip()


def as_opt_str(value: Any) -> str | None:
    """`as_str`, or None for a missing or empty value."""
    return None if value is None or value == "" else as_str(value)


def as_int(value: Any) -> int:
    """A whole number: an int (not a bool) or its decimal spelling; `1.5`, `1e3`, `1_000` and
    `true` are refused."""
    if isinstance(value, bool):
        raise ValueError("expected a whole number")
    if isinstance(value, str):
        value = value.strip()
        if not value.removeprefix("-").isdecimal():
            raise ValueError("expected a whole number")
        return int(value)
    if not isinstance(value, int):
        raise ValueError("expected a whole number")
    return value


def as_opt_int(value: Any) -> int | None:
    """`as_int`, or None for a missing or empty value."""
    return None if value is None or value == "" else as_int(value)


def as_float(value: Any) -> float:
    """A finite number (an int, a float or its spelling; not a bool, NaN or infinity)."""
    if isinstance(value, bool):
        raise ValueError("expected a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a number") from None
    if not math.isfinite(number):
        raise ValueError("expected a finite number")
    return number


def as_bool(value: Any) -> bool:
    """A bool, or one of the flag spellings in `TRUE` / `FALSE` (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in TRUE:
        return True
    if isinstance(value, str) and value.strip().lower() in FALSE:
        return False
    raise ValueError("expected true or false")


def as_list(value: Any) -> tuple[str, ...]:
    """Names from a list or a comma-separated string; blanks dropped, each stripped."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(item.strip() for item in value if item.strip())
    raise ValueError("expected a list of names (or a comma-separated string)")


def as_mapping(value: Any, convert: Callable[[Any], Any]) -> dict[str, Any]:
    """A mapping with string keys, or `key=value,...` in a string; `convert` maps each value."""
    if isinstance(value, str):
        pairs: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in value.split(","))):
            key, sep, item = part.partition("=")
            if not sep or not key.strip():
                raise ValueError("expected key=value pairs separated by commas")
            pairs[key.strip()] = convert(item.strip())
        return pairs
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: convert(v) for k, v in value.items()}
    raise ValueError("expected a mapping (or key=value,... in a variable)")


def as_headers(value: Any) -> dict[str, str]:
    """Header names to values (each value as a string)."""
    return as_mapping(value, lambda item: str(item))


def as_rates(value: Any) -> dict[str, float]:
    """Names to numbers (`name=0.5,...` in a string)."""
    return as_mapping(value, as_float)


def as_options(value: Any) -> dict[str, dict[str, Any]]:
    """Evaluator names to their keyword arguments (a JSON object of objects in a string)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError("expected a JSON object (in a variable)") from None
    if isinstance(value, Mapping) and all(isinstance(v, Mapping) for v in value.values()):
        return {str(k): dict(v) for k, v in value.items()}
    raise ValueError("expected a mapping of evaluator name -> keyword arguments")
