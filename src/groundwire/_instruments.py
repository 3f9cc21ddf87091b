"""Which of groundwire's integrations `configure()` instruments, found by entry point.

`plan_instruments` finds the installed `groundwire-*` integrations (entry-point group
`opentelemetry_instrumentor`) and checks the selection before anything is installed;
`instrument` then installs them on the providers `configure()` chose.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import Any

from groundwire import semconv

__all__ = ["instrument", "plan_instruments"]

logger = logging.getLogger("groundwire")

_INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"


def _is_ours(entry_point: Any) -> bool:
    """True for entry points of a `groundwire-*` distribution."""
    dist = getattr(entry_point, "dist", None)
    name = getattr(dist, "name", "") or ""
    return name.lower().replace("_", "-").startswith("groundwire-")


def _names(entry_point: Any) -> set[str]:
    """An integration's entry-point name (`groundwire_langchain`) and framework (`langchain`)."""
    name = str(entry_point.name)
    return {name, name.removeprefix("groundwire_")}


def plan_instruments(selection: bool | Sequence[str]) -> list[tuple[str, Any]]:
    """The installed `groundwire-*` integrations to instrument, before anything is installed;
    a ValueError names requested ones that are not installed (or whose framework is missing)."""
    if isinstance(selection, str) or not isinstance(selection, bool | Sequence):
        raise TypeError(f"instrument must be True, False or a list of names, got {selection!r}")
    if selection is False:
        return []
    wanted = None if selection is True else set(selection)
    planned: list[tuple[str, Any]] = []
    available: list[str] = []
    for entry_point in entry_points(group=_INSTRUMENTOR_GROUP):
        if not _is_ours(entry_point):
            continue
        available.append(entry_point.name.removeprefix("groundwire_"))
        if wanted is not None and not _names(entry_point) & wanted:
            continue
        try:
            instrumentor = entry_point.load()()
            from opentelemetry.instrumentation.dependencies import get_dependency_conflicts

            if get_dependency_conflicts(instrumentor.instrumentation_dependencies()):
                logger.debug("skipping %s: its framework is not installed", entry_point.name)
                continue
        except ImportError as error:
            logger.debug("skipping %s: %s", entry_point.name, error)
            continue
        planned.append((entry_point.name, instrumentor))
    if wanted is not None:
        found = {alias for name, _ in planned for alias in (name, name.removeprefix("groundwire_"))}
        missing = sorted(wanted - found)
        if missing:
            raise ValueError(
                f"instrument ({semconv.ENV_INSTRUMENT}) asks for {missing}, which cannot be "
                f"instrumented here; installed integrations with their framework: "
                f"{sorted(n.removeprefix('groundwire_') for n, _ in planned) or 'none'} "
                f"(installed at all: {sorted(available) or 'none'})"
            )
    return planned


def instrument(
    planned: list[tuple[str, Any]], tracer_provider: Any, meter_provider: Any
) -> list[tuple[str, Any]]:
    """Instrument the planned integrations (one already instrumented elsewhere is left alone)."""
    done: list[tuple[str, Any]] = []
    for name, instrumentor in planned:
        if instrumentor.is_instrumented_by_opentelemetry:
            continue
        try:
            instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        except Exception:
            logger.warning("could not instrument %s", name, exc_info=True)
            continue
        done.append((name, instrumentor))
    return done
