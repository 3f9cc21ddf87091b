"""Reading `GROUNDWIRE_*` variables: one parser per kind, every bad value an error naming it.

Every variable groundwire reads goes through one of these (`configure()`'s settings, the
capture switches, the judges), so a kind of value is spelt and rejected the same way everywhere.

A privacy switch that silently reads `ture` as false would leak text, so flags accept only the
usual spellings and anything else is a ValueError.
"""

from __future__ import annotations

import json
import os
from typing import Any

from groundwire._values import FALSE, TRUE

__all__ = [
    "FALSE",
    "TRUE",
    "env_flag",
    "env_flag_or_list",
    "env_float",
    "env_int",
    "env_json_options",
    "env_list",
    "env_rates",
    "env_str",
]


def env_str(name: str) -> str | None:
    """The stripped value of a variable, or None when unset or blank."""
    raw = os.environ.get(name, "").strip()
    return raw or None


def env_flag(name: str) -> bool | None:
    """A true/false variable; None when unset; a ValueError naming it for anything else."""
    raw = env_str(name)
    if raw is None:
        return None
    flag = _flag(raw)
    if flag is None:
        raise ValueError(f"{name} must be one of true/false, 1/0, yes/no, on/off; got {raw!r}")
    return flag


def _flag(raw: str) -> bool | None:
    """True or False for any spelling of them `env_flag` takes; None for anything else."""
    if raw.lower() in TRUE:
        return True
    if raw.lower() in FALSE:
        return False
    return None


def env_int(name: str, *, minimum: int | None = None) -> int | None:
    """A whole-number variable; None when unset; a ValueError naming it when malformed."""
    raw = env_str(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str) -> list[str] | None:
    """A comma-separated variable as a list of its non-blank parts; None when unset."""
    raw = env_str(name)
    return None if raw is None else [part.strip() for part in raw.split(",") if part.strip()]


def env_float(name: str) -> float | None:
    """A number variable; None when unset; a ValueError naming it when malformed."""
    raw = env_str(name)
    if raw is None:
        return None
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None


def env_rates(name: str) -> dict[str, float] | None:
    """`name=rate,...` as a mapping; None when unset; a ValueError naming it when malformed."""
    raw = env_str(name)
    if raw is None:
        return None
    rates: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in raw.split(","))):
        key, sep, value = part.partition("=")
        try:
            if not sep:
                raise ValueError
            rates[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"{name} must look like 'name=0.5,other=0.1', got {raw!r}") from None
    return rates


def env_json_options(name: str) -> dict[str, dict[str, Any]] | None:
    """A JSON object of objects (`{"quote_verification": {"cosine": "off"}}`); None when unset;
    a ValueError naming the variable when it is not valid JSON or not of that shape."""
    raw = env_str(name)
    if raw is None:
        return None
    shape = f'{name} must be a JSON object of options by name, e.g. {{"name": {{"option": 1}}}}'
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"{shape}; it is not valid JSON ({error})") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f"{shape}, got {raw!r}")
    return value


def env_flag_or_list(name: str) -> bool | list[str] | None:
    """`true`, `false` (any spelling `env_flag` takes) or a comma-separated list of names;
    None when unset."""
    raw = env_str(name)
    if raw is None:
        return None
    flag = _flag(raw)
    return env_list(name) if flag is None else flag
