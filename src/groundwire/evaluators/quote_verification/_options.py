"""The matching and cosine options of `verify_quotes` and `QuoteVerification`, defined once.

`Options` names each option with its type and default; `OptionArgs` is the same list as keyword
arguments (for type checkers: `**options: Unpack[OptionArgs]`); `Options.checked` validates
what a caller passed (bad values fail at once, naming the option) and `option_parameters` gives
the signatures that `help()` and the CLI's "did you mean" hint read.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, TypedDict

from groundwire.evaluators.quote_verification._trim import TRIM_METHODS, TrimMethod

__all__ = ["COSINE_POLICIES", "CosinePolicy", "OptionArgs", "Options", "signature_with_options"]

CosinePolicy: TypeAlias = Literal["always", "fuzzy", "off"]
"""Which located quotes get `cosine_similarity`: every one, only those whose words differ from
their span's (a verbatim span is 1.0 without the model), or none."""
COSINE_POLICIES: Final[tuple[CosinePolicy, ...]] = ("always", "fuzzy", "off")


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


def _choice(name: str, value: object, accepted: tuple[str, ...]) -> None:
    """Check an option that takes one of a few strings; the error lists them."""
    if value not in accepted:
        raise ValueError(f"{name} must be one of {list(accepted)}, got {value!r}")


class OptionArgs(TypedDict, total=False):
    """The options as keyword arguments (the fields of `Options`; a test keeps them equal)."""

    window_size: int | None
    overlap: int | None
    bm25_k1: float
    bm25_b: float
    ellipsis_max_gap: int | None
    trim_spans: bool
    trim_method: TrimMethod
    min_fuzzy_ratio: float
    expand_window_neighbors: int
    meaning_check: bool
    cosine: CosinePolicy


@dataclass(frozen=True, slots=True)
class Options:
    """The settings of `verify_quotes` with their defaults (see its docstring for each)."""

    window_size: int | None = None
    overlap: int | None = None
    bm25_k1: float = 1.5
    bm25_b: float = 0.4
    ellipsis_max_gap: int | None = None
    trim_spans: bool = True
    trim_method: TrimMethod = "fuzzy"
    min_fuzzy_ratio: float = 0.6
    expand_window_neighbors: int = 1
    meaning_check: bool = True
    cosine: CosinePolicy = "fuzzy"

    @classmethod
    def checked(cls, *, where: str = "", **given: object) -> Options:
        """Validate the options a caller passed (the others keep their defaults); an unknown
        name or a bad value raises, naming the option (prefixed by `where`, e.g. the
        evaluator's name)."""
        prefix = f"{where}: " if where else ""
        defaults = {field.name: field.default for field in dataclasses.fields(cls)}
        for name in given:
            if name not in defaults:
                raise TypeError(f"{prefix}got an unexpected keyword argument {name!r}")
        merged = {name: given.get(name, default) for name, default in defaults.items()}
        try:
            return cls._validated(merged)
        except (TypeError, ValueError) as error:
            if not prefix:
                raise
            raise type(error)(prefix + str(error)) from None

    @classmethod
    def _validated(cls, o: dict[str, object]) -> Options:
        """Options from complete values, each checked."""
        size = _int_option("window_size", o["window_size"], 1, optional=True)
        over = _int_option("overlap", o["overlap"], 0, optional=True)
        if size is not None and over is not None and over >= size:
            raise ValueError(f"overlap must be smaller than window_size ({size}), got {over}")
        for flag in ("trim_spans", "meaning_check"):
            if not isinstance(o[flag], bool):
                raise TypeError(f"{flag} must be a bool, got {type(o[flag]).__name__}")
        _choice("trim_method", o["trim_method"], TRIM_METHODS)
        _choice("cosine", o["cosine"], COSINE_POLICIES)
        neighbours = _int_option(
            "expand_window_neighbors", o["expand_window_neighbors"], 0, optional=False
        )
        return cls(
            window_size=size,
            overlap=over,
            bm25_k1=_float_option("bm25_k1", o["bm25_k1"], 0.0, None),
            bm25_b=_float_option("bm25_b", o["bm25_b"], 0.0, 1.0),
            ellipsis_max_gap=_int_option(
                "ellipsis_max_gap", o["ellipsis_max_gap"], 0, optional=True
            ),
            trim_spans=bool(o["trim_spans"]),
            trim_method=o["trim_method"],  # type: ignore[arg-type]  # checked above
            min_fuzzy_ratio=_float_option("min_fuzzy_ratio", o["min_fuzzy_ratio"], 0.0, 1.0),
            expand_window_neighbors=neighbours or 0,
            meaning_check=bool(o["meaning_check"]),
            cosine=o["cosine"],  # type: ignore[arg-type]  # checked above
        )


def signature_with_options(
    function: Callable[..., Any], *, method: bool = False
) -> inspect.Signature:
    """The function's signature with its `**options` spelled out as keyword-only parameters
    (name, default, type), for `help()` and the CLI's "did you mean" hint; `method`: leave
    `self` out (for a class's signature from its `__init__`)."""
    signature = inspect.signature(function)
    kept = [
        parameter
        for parameter in signature.parameters.values()
        if parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return signature.replace(parameters=[*kept[int(method) :], *_option_parameters()])


def _option_parameters() -> list[inspect.Parameter]:
    """The options as keyword-only parameters with their defaults and types."""
    hints = OptionArgs.__annotations__
    return [
        inspect.Parameter(
            field.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field.default,
            annotation=getattr(hints[field.name], "__forward_arg__", hints[field.name]),
        )
        for field in dataclasses.fields(Options)
    ]
