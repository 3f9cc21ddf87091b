"""Find evaluators by name.

Names come from the `groundwire.evaluators` entry-point group (ours are registered there too, so a
user's plug-in is found exactly like a built-in) and from `register_evaluator` at run time. Each
entry point names a factory: a class or function called with the keyword arguments given to
`get_evaluator`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from groundwire._evaluator import AnyEvaluator, AsyncEvaluator, Evaluator

__all__ = [
    "ENTRY_POINT_GROUP",
    "EvaluatorFactory",
    "UnknownEvaluatorError",
    "available_evaluators",
    "get_evaluator",
    "register_evaluator",
    "resolve_evaluators",
]

ENTRY_POINT_GROUP = "groundwire.evaluators"
"""The entry-point group evaluator plug-ins register under."""

EvaluatorFactory = Callable[..., AnyEvaluator]
"""Builds an evaluator from keyword options."""

_lock = threading.Lock()
_registered: dict[str, EvaluatorFactory] = {}


class UnknownEvaluatorError(KeyError):
    """Raised for an evaluator name nobody registered; the message lists the known names."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = tuple(known)
        super().__init__(name)

    def __str__(self) -> str:
        known = ", ".join(self.known) or "(none)"
        return (
            f"unknown evaluator {self.name!r}; known evaluators: {known}. Plug-ins register under "
            f"the {ENTRY_POINT_GROUP!r} entry-point group."
        )


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def register_evaluator(name: str, factory: EvaluatorFactory, *, replace: bool = False) -> None:
    """Register an evaluator factory under `name` for this process.

    Raises ValueError when the name is taken (by a plug-in or an earlier call) unless `replace`.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"evaluator name must be a non-empty string, got {name!r}")
    with _lock:
        if not replace and (name in _registered or name in _entry_points()):
            raise ValueError(f"an evaluator named {name!r} is already registered")
        _registered[name] = factory


def available_evaluators() -> list[str]:
    """Every evaluator name that `get_evaluator` accepts, sorted."""
    with _lock:
        names = set(_registered)
    return sorted(names | set(_entry_points()))


def get_evaluator(name: str, **options: Any) -> AnyEvaluator:
    """Build the evaluator registered as `name` with the given options."""
    with _lock:
        factory = _registered.get(name)
    if factory is None:
        entry_point = _entry_points().get(name)
        if entry_point is None:
            raise UnknownEvaluatorError(name, available_evaluators())
        factory = entry_point.load()
    evaluator = factory(**options)
    if not isinstance(evaluator, Evaluator | AsyncEvaluator):
        raise TypeError(
            f"evaluator {name!r} built a {type(evaluator).__name__}, which has neither "
            "evaluate(turn) nor aevaluate(turn)"
        )
    return evaluator


def resolve_evaluators(
    evaluators: Sequence[str | AnyEvaluator] | Mapping[str, Mapping[str, Any]],
) -> list[AnyEvaluator]:
    """Turn names, instances, or a mapping of name -> options into evaluator instances.

    Raises ValueError when two evaluators share a name (their scores would collide).
    """
    if isinstance(evaluators, str):
        raise TypeError("evaluators must be a sequence of names or instances, not one string")
    built: list[AnyEvaluator] = []
    if isinstance(evaluators, Mapping):
        built = [get_evaluator(name, **dict(opts)) for name, opts in evaluators.items()]
    else:
        for item in evaluators:
            if isinstance(item, str):
                built.append(get_evaluator(item))
            elif isinstance(item, Evaluator | AsyncEvaluator):
                built.append(item)
            else:
                raise TypeError(
                    f"evaluators[{len(built)}] is a {type(item).__name__}; expected a registered "
                    "name or an object with evaluate(turn) or aevaluate(turn)"
                )
    names = [evaluator.name for evaluator in built]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"two evaluators share the name(s) {duplicates}; names must be unique")
    return built
