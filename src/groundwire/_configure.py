"""`groundwire.configure()`: online evaluation in one call, and its `shutdown` / `force_flush`.

```python
import groundwire

groundwire.configure(service_name="support-bot", evaluators=["quoted_spans", "groundedness"])
...  # the app runs; turns are scored as they complete
groundwire.shutdown()  # also registered atexit
```

Every argument has a `GROUNDWIRE_*` environment variable (names in `groundwire.semconv`); an
argument given explicitly wins over the variable, the variable over the default. The app's own
SDK tracer and meter providers (and any logger provider) are used when it has them; otherwise
groundwire creates them (OTLP when `OTEL_EXPORTER_OTLP_*ENDPOINT` is set, else an OTLP/JSON-lines
file) and makes them global. See docs/online.md.

It is the lifecycle: one configuration at a time, installed under a lock, tuned (gc freeze, the
thread switch interval) and shut down by `shutdown()` or at exit. The parts are elsewhere:
`_settings` (options, variables, validation), `_wiring` (providers, runner, processor,
instrumentation) and `_online` (the handle, its flush and shutdown).

A configuration made from the environment alone (`configure_from_environment`, called by the
zero-code hook `groundwire.autoconfigure` under `opentelemetry-instrument`) gives way to the
app's own `configure()`: that one shuts it down and takes its place, so there is still one runner
on one set of providers.
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from groundwire._evaluator import AnyEvaluator
from groundwire._online import DEADLINE_SLACK_S, OnlineEvaluation, OnlineStats, ProviderHandle
from groundwire._settings import (
    DEFAULT_EXIT_TIMEOUT_S,
    Tuning,
    check_environment,
    name_the_variable,
    read_tuning,
    resolve_settings,
    seconds,
)
from groundwire._switch import SwitchInterval
from groundwire._types import RagTurn
from groundwire._wiring import wire

__all__ = [
    "DEADLINE_SLACK_S",
    "DEFAULT_EXIT_TIMEOUT_S",
    "OnlineEvaluation",
    "OnlineStats",
    "ProviderHandle",
    "configure",
    "configure_from_environment",
    "force_flush",
    "get_online",
    "shutdown",
]

logger = logging.getLogger("groundwire")

_lock = threading.Lock()
_current: OnlineEvaluation | None = None
_from_environment: OnlineEvaluation | None = None
"""The configuration `configure_from_environment` made, which an explicit `configure()` replaces."""


def configure(
    *,
    service_name: str | None = None,
    evaluators: Sequence[str | AnyEvaluator] | Mapping[str, Mapping[str, Any]] | None = None,
    inline: Sequence[str] | None = None,
    sample_rate: float | None = None,
    evaluator_sample_rates: Mapping[str, float] | None = None,
    turn_filter: Callable[[RagTurn], bool] | str | None = None,
    judge_token_budget: int | None = None,
    max_queue_size: int | None = None,
    workers: int | None = None,
    async_concurrency: int | None = None,
    evaluator_timeout_s: float | None = None,
    executor: str | None = None,
    exporter: str | None = None,
    output_path: str | os.PathLike[str] | None = None,
    prometheus_port: int | None = None,
    prometheus_host: str | None = None,
    instrument: bool | Sequence[str] | None = None,
    events: str | None = None,
    phoenix_annotations: str | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    logger_provider: Any = None,
    shutdown_timeout_s: float = 10.0,
    exit_timeout_s: float | None = None,
    gc_freeze: bool | None = None,
    switch_interval_s: float | None = None,
) -> OnlineEvaluation:
    """Score the app's RAG turns as they happen and emit the scores as telemetry.

    Raises RuntimeError when already configured (call `groundwire.shutdown()` first), and
    ValueError/TypeError naming the argument (or variable), its value and what is allowed for a
    bad option, before anything is installed. docs/online.md describes every argument.
    """
    global _current
    _give_way()
    with _lock:
        if _current is not None:
            raise RuntimeError("groundwire is already configured; call groundwire.shutdown() first")
        check_environment()
        tuning = read_tuning(gc_freeze, switch_interval_s)
        given = {
            "evaluators": evaluators,
            "inline": inline,
            "sample_rate": sample_rate,
            "evaluator_sample_rates": evaluator_sample_rates,
            "turn_filter": turn_filter,
            "judge_token_budget": judge_token_budget,
            "max_queue_size": max_queue_size,
            "workers": workers,
            "async_concurrency": async_concurrency,
            "evaluator_timeout_s": evaluator_timeout_s,
            "executor": executor,
            "exporter": exporter,
            "prometheus_port": prometheus_port,
            "prometheus_host": prometheus_host,
            "instrument": instrument,
        }
        try:
            settings = resolve_settings(
                given,
                service_name=service_name,
                output_path=output_path,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                logger_provider=logger_provider,
                events=events,
                phoenix_annotations=phoenix_annotations,
                shutdown_timeout_s=shutdown_timeout_s,
                exit_timeout_s=exit_timeout_s,
            )
            online = wire(settings)
        except (ValueError, TypeError, KeyError) as error:
            name_the_variable(error, given)
            raise
        _current = online
    _tune(online, tuning)
    atexit.register(_shutdown_at_exit)
    return online


def configure_from_environment(**options: Any) -> OnlineEvaluation:
    """`configure(**options)` (the rest from the `GROUNDWIRE_*` variables), marked as made from
    the environment: the app's own `configure()` call later replaces it instead of failing."""
    global _from_environment
    online = configure(**options)
    _from_environment = online
    return online


def _give_way() -> None:
    """Shut down the configuration made from the environment (within its exit deadline), so the
    app's explicit `configure()` takes its place."""
    global _from_environment
    online, _from_environment = _from_environment, None
    if online is None or online is not _current:
        return
    logger.info("groundwire: configure() replaces the configuration made from the environment")
    shutdown(online.exit_timeout_s)


def _tune(online: OnlineEvaluation, tuning: Tuning) -> None:
    """Freeze what startup made (gc) and set the thread switch interval; `shutdown()` undoes
    both."""
    if tuning.gc_freeze:
        gc.freeze()  # startup objects leave full collections, whose pauses hit the app's turns
        online._froze_gc = True
    # groundwire's busy threads hold the GIL up to the interval each time an app thread wakes
    online._switch = SwitchInterval.apply(tuning.switch_interval_s, explicit=tuning.switch_explicit)


def get_online() -> OnlineEvaluation | None:
    """The active configuration, or None."""
    return _current


def shutdown(timeout_s: float = 30.0) -> bool:
    """Drain and stop online evaluation (no-op when not configured); False if work was dropped."""
    global _current
    timeout_s = seconds("timeout_s", timeout_s)
    with _lock:
        online, _current = _current, None
    if online is None:
        return True
    atexit.unregister(_shutdown_at_exit)
    return online.shutdown(timeout_s)


def force_flush(timeout_s: float = 30.0) -> bool:
    """Finish queued evaluations and flush telemetry; True when not configured."""
    online = _current
    return True if online is None else online.force_flush(timeout_s)


def _shutdown_at_exit() -> None:
    """The atexit hook: shut down within the exit deadline (`exit_timeout_s`)."""
    online = _current
    shutdown(online.exit_timeout_s if online is not None else DEFAULT_EXIT_TIMEOUT_S)
