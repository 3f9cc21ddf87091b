"""`configure()`'s settings: each option from its argument, else its variable, else its default,
validated before anything is installed.

Every `GROUNDWIRE_*` variable is read through `_env`'s parsers; a bad value is a ValueError or
TypeError naming the argument or the variable (`name_the_variable`), its value and what is
allowed.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundwire import semconv
from groundwire._env import (
    env_flag,
    env_flag_or_list,
    env_float,
    env_int,
    env_json_options,
    env_list,
    env_rates,
    env_str,
)
from groundwire._registry import get_evaluator, resolve_evaluators
from groundwire._switch import DEFAULT_SWITCH_INTERVAL_S, check_switch_interval
from groundwire._types import RagTurn
from groundwire.capture import CaptureConfig
from groundwire.emit import resolve_events
from groundwire.runner import RunnerConfig, inline_supported

__all__ = [
    "DEFAULT_EXIT_TIMEOUT_S",
    "Settings",
    "Tuning",
    "check_environment",
    "name_the_variable",
    "read_tuning",
    "resolve_settings",
    "runner_config",
    "seconds",
]

logger = logging.getLogger("groundwire")

DEFAULT_EXIT_TIMEOUT_S = 3.0
"""Default deadline of the exit hook (`exit_timeout_s`, `GROUNDWIRE_EXIT_TIMEOUT`): short, so a
pod's grace period, a CLI or a serverless function never waits on a dead Collector."""


def import_filter(spec: str) -> Callable[[RagTurn], bool]:
    """Import the `module:function` turn filter named by the variable."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(
            f"{semconv.ENV_TURN_FILTER} must be 'package.module:function', got {spec!r}"
        )
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise ValueError(
            f"{semconv.ENV_TURN_FILTER}={spec!r} cannot be imported: {error}"
        ) from None
    if not callable(target):
        raise TypeError(f"{semconv.ENV_TURN_FILTER}={spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def seconds(name: str, value: object) -> float:
    """A positive, finite number of seconds, or a ValueError naming the option."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def check_environment() -> None:
    """Validate the variables read later by the integrations and the judges, and warn about
    `GROUNDWIRE_*` names that nothing reads (a typo would otherwise be ignored silently)."""
    CaptureConfig.from_env()  # the integrations' privacy and length settings
    from groundwire.judges import JudgeConfig

    JudgeConfig.from_env()
    known = {
        value
        for name, value in vars(semconv).items()
        if name.startswith("ENV_") and isinstance(value, str)
    }
    unknown = sorted(
        name for name in os.environ if name.startswith("GROUNDWIRE_") and name not in known
    )
    if unknown:
        logger.warning(
            "unknown GROUNDWIRE_* variables ignored: %s (known: %s)",
            ", ".join(unknown),
            ", ".join(sorted(known)),
        )


def pick(value: Any, env_value: Any, default: Any) -> Any:
    """The argument if given, else the variable's value, else the default."""
    if value is not None:
        return value
    return default if env_value is None else env_value


VARIABLES = {
    "evaluators": semconv.ENV_EVALUATORS,
    "inline": semconv.ENV_INLINE,
    "sample_rate": semconv.ENV_SAMPLE_RATE,
    "evaluator_sample_rates": semconv.ENV_EVALUATOR_SAMPLE_RATES,
    "turn_filter": semconv.ENV_TURN_FILTER,
    "judge_token_budget": semconv.ENV_JUDGE_TOKEN_BUDGET,
    "max_queue_size": semconv.ENV_MAX_QUEUE_SIZE,
    "workers": semconv.ENV_WORKERS,
    "async_concurrency": semconv.ENV_ASYNC_CONCURRENCY,
    "evaluator_timeout_s": semconv.ENV_EVALUATOR_TIMEOUT,
    "executor": semconv.ENV_EXECUTOR,
    "exporter": semconv.ENV_EXPORTER,
    "prometheus_port": semconv.ENV_PROMETHEUS_PORT,
    "prometheus_host": semconv.ENV_PROMETHEUS_HOST,
    "instrument": semconv.ENV_INSTRUMENT,
}
"""The variable behind each option, to name it in errors about a value it supplied."""


def name_the_variable(error: BaseException, given: Mapping[str, Any]) -> None:
    """Raise a ValueError naming the variable (and its value) when a bad option came from the
    environment; return (the caller re-raises as is) when the argument was explicit."""
    message = str(error) if type(error).__str__ is not KeyError.__str__ else str(error.args[0])
    if type(error).__name__ == "UnknownEvaluatorError":
        option = "evaluators"
    else:
        option = next((o for o in VARIABLES if message.startswith(o)), "")
    variable = VARIABLES.get(option)
    if variable is None or given.get(option) is not None:
        return
    raw = env_str(variable)
    if raw is None or variable in message:
        return
    raise ValueError(f"{variable}={raw!r}: {message}") from error


@dataclass(frozen=True, slots=True)
class Tuning:
    """The interpreter tuning `configure()` applies: gc freeze and the thread switch interval."""

    gc_freeze: bool
    switch_interval_s: float
    switch_explicit: bool
    """The interval was asked for (argument or variable), not the default."""


def read_tuning(gc_freeze: bool | None, switch_interval_s: float | None) -> Tuning:
    """`gc_freeze` and `switch_interval_s`, each from its argument, variable or default."""
    freeze = pick(gc_freeze, env_flag(semconv.ENV_GC_FREEZE), True)
    if not isinstance(freeze, bool):
        raise TypeError(f"gc_freeze must be True or False, got {gc_freeze!r}")
    switch_env = env_float(semconv.ENV_SWITCH_INTERVAL)
    switch = check_switch_interval(
        pick(switch_interval_s, switch_env, DEFAULT_SWITCH_INTERVAL_S),
        "switch_interval_s"
        if switch_interval_s is not None or switch_env is None
        else semconv.ENV_SWITCH_INTERVAL,
    )
    return Tuning(freeze, switch, switch_interval_s is not None or switch_env is not None)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every option of `configure()`, resolved (argument, else variable, else default)."""

    service_name: str | None
    evaluators: Any
    inline: Sequence[str]
    sample_rate: float
    evaluator_sample_rates: Mapping[str, float]
    turn_filter: Callable[[RagTurn], bool] | str | None
    judge_token_budget: int | None
    max_queue_size: int
    workers: int
    async_concurrency: int
    evaluator_timeout_s: float
    executor: str
    exporter: str
    output_path: str | os.PathLike[str] | None
    prometheus_port: int | None
    prometheus_host: str
    instrument: bool | Sequence[str]
    events: str
    tracer_provider: Any
    meter_provider: Any
    logger_provider: Any
    phoenix_annotations: str | None
    shutdown_timeout_s: float
    exit_timeout_s: float


def resolve_settings(
    given: Mapping[str, Any],
    *,
    service_name: str | None,
    output_path: str | os.PathLike[str] | None,
    tracer_provider: Any,
    meter_provider: Any,
    logger_provider: Any,
    events: str | None,
    phoenix_annotations: str | None,
    shutdown_timeout_s: float,
    exit_timeout_s: float | None,
) -> Settings:
    """Resolve every option: `given` holds the arguments that have a variable (`VARIABLES`)."""
    g = given
    return Settings(
        service_name=pick(service_name, env_str(semconv.ENV_SERVICE_NAME), None),
        evaluators=pick(g["evaluators"], env_list(semconv.ENV_EVALUATORS), ()),
        inline=pick(g["inline"], env_list(semconv.ENV_INLINE), ()),
        sample_rate=pick(g["sample_rate"], env_float(semconv.ENV_SAMPLE_RATE), 1.0),
        evaluator_sample_rates=pick(
            g["evaluator_sample_rates"], env_rates(semconv.ENV_EVALUATOR_SAMPLE_RATES), {}
        ),
        turn_filter=pick(g["turn_filter"], env_str(semconv.ENV_TURN_FILTER), None),
        judge_token_budget=pick(
            g["judge_token_budget"], env_int(semconv.ENV_JUDGE_TOKEN_BUDGET), None
        ),
        max_queue_size=pick(g["max_queue_size"], env_int(semconv.ENV_MAX_QUEUE_SIZE), 2048),
        workers=pick(g["workers"], env_int(semconv.ENV_WORKERS), 2),
        async_concurrency=pick(g["async_concurrency"], env_int(semconv.ENV_ASYNC_CONCURRENCY), 8),
        evaluator_timeout_s=pick(
            g["evaluator_timeout_s"], env_float(semconv.ENV_EVALUATOR_TIMEOUT), 30.0
        ),
        executor=pick(g["executor"], env_str(semconv.ENV_EXECUTOR), "threads"),
        exporter=pick(g["exporter"], env_str(semconv.ENV_EXPORTER), "auto"),
        output_path=pick(output_path, env_str(semconv.ENV_OUTPUT_PATH), None),
        prometheus_port=pick(g["prometheus_port"], env_int(semconv.ENV_PROMETHEUS_PORT), None),
        prometheus_host=pick(
            g["prometheus_host"], env_str(semconv.ENV_PROMETHEUS_HOST), "127.0.0.1"
        ),
        instrument=pick(g["instrument"], env_flag_or_list(semconv.ENV_INSTRUMENT), True),
        events=resolve_events(events),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        phoenix_annotations=pick(
            phoenix_annotations, env_str(semconv.ENV_PHOENIX_ANNOTATIONS), None
        ),
        shutdown_timeout_s=seconds("shutdown_timeout_s", shutdown_timeout_s),
        exit_timeout_s=seconds(
            f"exit_timeout_s ({semconv.ENV_EXIT_TIMEOUT})",
            pick(exit_timeout_s, env_float(semconv.ENV_EXIT_TIMEOUT), DEFAULT_EXIT_TIMEOUT_S),
        ),
    )


_PASSED_TO_RUNNER = (
    "sample_rate",
    "evaluator_sample_rates",
    "judge_token_budget",
    "max_queue_size",
    "workers",
    "async_concurrency",
    "evaluator_timeout_s",
    "executor",
)
"""The settings `RunnerConfig` takes as they are (it validates them, naming the option)."""


def runner_config(settings: Settings) -> RunnerConfig:
    """Validate the scoring options (and the Prometheus and Phoenix ones) and build the
    runner's configuration; inline evaluators run in the background on an SDK without the
    hook they need (with a warning)."""
    s = settings
    turn_filter = import_filter(s.turn_filter) if isinstance(s.turn_filter, str) else s.turn_filter
    inline = s.inline
    if inline and not inline_supported():
        logger.warning(
            "this opentelemetry-sdk has no SpanProcessor._on_ending hook (added in 1.36); "
            "running the inline evaluators %s in the background instead",
            sorted(inline),
        )
        inline = ()
    config = RunnerConfig(
        evaluators=resolve_evaluators(_with_env_options(s.evaluators)),
        inline=frozenset(inline),
        turn_filter=turn_filter,
        **{name: getattr(s, name) for name in _PASSED_TO_RUNNER},
    )
    _check_outputs(s, config)
    return config


def _with_env_options(evaluators: Any) -> Any:
    """`evaluators` with the evaluators named by name built with their options from
    `GROUNDWIRE_EVALUATOR_OPTIONS` (the only way to give options where the evaluators are only
    names, as in `GROUNDWIRE_EVALUATORS`); ValueError naming the variable when it names an
    evaluator that is not among them by name."""
    options = env_json_options(semconv.ENV_EVALUATOR_OPTIONS)
    if not options or isinstance(evaluators, str | Mapping):
        return evaluators
    names = [item for item in evaluators if isinstance(item, str)]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ValueError(
            f"{semconv.ENV_EVALUATOR_OPTIONS} gives options for {unknown}, which are not among "
            f"the evaluators named {names}"
        )
    return [
        _built(item, options[item]) if isinstance(item, str) and item in options else item
        for item in evaluators
    ]


def _built(name: str, options: dict[str, Any]) -> Any:
    """The evaluator `name` with `options`; a bad option is a ValueError naming the variable."""
    try:
        return get_evaluator(name, **options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{semconv.ENV_EVALUATOR_OPTIONS}: {name}: {error}") from None


def _check_outputs(s: Settings, config: RunnerConfig) -> None:
    """Validate the options about where results go (ValueError naming the option)."""
    port = s.prometheus_port
    if port is not None and (isinstance(port, bool) or not 0 <= port <= 65535):
        raise ValueError(f"prometheus_port must be a port number (0-65535), got {port}")
    if not config.evaluators:
        raise ValueError(
            f"configure() would score nothing: no evaluators (pass evaluators=[...] or set "
            f"{semconv.ENV_EVALUATORS}); to capture spans only, instrument the integrations "
            f"directly (docs/online.md)"
        )
    if not isinstance(s.prometheus_host, str) or not s.prometheus_host.strip():
        raise ValueError(
            f"prometheus_host ({semconv.ENV_PROMETHEUS_HOST}) must be a host name or address, "
            f"got {s.prometheus_host!r}"
        )
    if s.output_path is not None and not isinstance(s.output_path, str | os.PathLike):
        raise ValueError(
            f"output_path ({semconv.ENV_OUTPUT_PATH}) must be a file path, got {s.output_path!r}"
        )
    name = s.service_name
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError(
            f"service_name ({semconv.ENV_SERVICE_NAME}) must be a non-empty name, got {name!r}"
        )
    url = s.phoenix_annotations
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("http://", "https://"))
    ):
        raise ValueError(
            f"phoenix_annotations ({semconv.ENV_PHOENIX_ANNOTATIONS}) must be Phoenix's base URL, "
            f"http(s)://host:port, got {url!r}"
        )
