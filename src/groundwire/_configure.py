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
"""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from groundwire import semconv
from groundwire._breaker import CLOSED
from groundwire._deadline import run_until
from groundwire._env import FALSE, TRUE, env_flag, env_list, env_str
from groundwire._evaluator import AnyEvaluator
from groundwire._registry import resolve_evaluators
from groundwire._switch import DEFAULT_SWITCH_INTERVAL_S, SwitchInterval, check_switch_interval
from groundwire._types import RagTurn
from groundwire.capture import LIVE_CONTENT, CaptureConfig
from groundwire.emit import Emitter, resolve_events
from groundwire.exporters import (
    ExporterChoice,
    ExportGuard,
    JsonLinesFile,
    app_logger_provider,
    build_logger_provider,
    build_meter_provider,
    build_tracer_provider,
    choose_exporter,
)
from groundwire.runner import (
    BackgroundRunner,
    EvaluationSpanProcessor,
    RunnerConfig,
    RunnerStats,
    inline_supported,
)

__all__ = [
    "DEADLINE_SLACK_S",
    "DEFAULT_EXIT_TIMEOUT_S",
    "OnlineEvaluation",
    "OnlineStats",
    "ProviderHandle",
    "configure",
    "force_flush",
    "get_online",
    "shutdown",
]

logger = logging.getLogger("groundwire")

_INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"
DEFAULT_EXIT_TIMEOUT_S = 3.0
"""Default deadline of the exit hook (`exit_timeout_s`, `GROUNDWIRE_EXIT_TIMEOUT`): short, so a
pod's grace period, a CLI or a serverless function never waits on a dead Collector."""
DEADLINE_SLACK_S = 0.25
"""What `shutdown(timeout_s)` / `force_flush(timeout_s)` may take beyond `timeout_s`: starting and
joining threads, assembling spans still in the hand-off queue, uninstrumenting."""
_EXPORT_SHARE = 0.25
"""Share of a shutdown budget (at most `_EXPORT_RESERVE_MAX_S`) kept for exporting at the end."""
_EXPORT_RESERVE_MAX_S = 2.0
_lock = threading.Lock()
_current: OnlineEvaluation | None = None


# --- environment ---------------------------------------------------------------------------------


def _env_number(name: str, kind: type[int] | type[float]) -> Any:
    """A numeric variable, or a ValueError naming it."""
    raw = env_str(name)
    if raw is None:
        return None
    try:
        return kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"{name} must be {what}, got {raw!r}") from None


def _env_rates(name: str) -> dict[str, float] | None:
    """`name=rate,...` as a mapping, or a ValueError naming the variable."""
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


def _env_instrument(name: str) -> bool | list[str] | None:
    """`true`, `false` or a comma-separated list of instrumentor names."""
    raw = env_str(name)
    if raw is None:
        return None
    if raw.lower() in TRUE:
        return True
    if raw.lower() in FALSE:
        return False
    return [part.strip() for part in raw.split(",") if part.strip()]


def _import_filter(spec: str) -> Callable[[RagTurn], bool]:
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


def _seconds(name: str, value: object) -> float:
    """A positive, finite number of seconds, or a ValueError naming the option."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def _check_environment() -> None:
    """Validate the variables read later by the integrations and the judges, and warn about
    `GROUNDWIRE_*` names that nothing reads (a typo would otherwise be ignored silently)."""
    CaptureConfig.from_env()  # the integrations' privacy and length settings
    from groundwire.judges._config import JudgeConfig

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


def _pick(value: Any, env_value: Any, default: Any) -> Any:
    """The argument if given, else the variable's value, else the default."""
    if value is not None:
        return value
    return default if env_value is None else env_value


# --- integrations --------------------------------------------------------------------------------


def _is_ours(entry_point: Any) -> bool:
    """True for entry points of a `groundwire-*` distribution."""
    dist = getattr(entry_point, "dist", None)
    name = getattr(dist, "name", "") or ""
    return name.lower().replace("_", "-").startswith("groundwire-")


def _names(entry_point: Any) -> set[str]:
    """An integration's entry-point name (`groundwire_langchain`) and framework (`langchain`)."""
    name = str(entry_point.name)
    return {name, name.removeprefix("groundwire_")}


def _plan_instruments(selection: bool | Sequence[str]) -> list[tuple[str, Any]]:
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


def _instrument(
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


@dataclass(frozen=True, slots=True)
class ProviderHandle:
    """One telemetry provider that shutdown and force_flush flush (and shut, when groundwire
    built it) within what is left of their deadline. Each call gets the seconds left."""

    name: str
    flush: Callable[[float], object] | None
    close: Callable[[float], object] | None


@dataclass(frozen=True, slots=True)
class OnlineStats(RunnerStats):
    """`RunnerStats` plus what `configure()` set up and what became of the telemetry."""

    evaluators: tuple[str, ...] = ()
    instrumented: tuple[str, ...] = ()
    """Integrations `configure()` instrumented (empty: spans must come from elsewhere)."""
    exporter: str = ""
    """Where groundwire's own providers send telemetry (or the app's providers)."""
    spans_not_exported: int = 0
    """Spans given to groundwire's OTLP exporter that have not reached the endpoint."""
    unreachable: tuple[str, ...] = ()
    """Endpoints whose circuit breaker is open right now."""


# --- the handle ----------------------------------------------------------------------------------


@dataclass
class OnlineEvaluation:
    """What `configure()` set up; `groundwire.shutdown()` undoes it."""

    runner: BackgroundRunner
    processor: EvaluationSpanProcessor
    emitter: Emitter
    tracer_provider: Any
    meter_provider: Any
    owns_tracer_provider: bool
    owns_meter_provider: bool
    output_path: Path | None = None
    """The OTLP/JSON-lines file, when no OTLP endpoint was configured."""
    logger_provider: Any = None
    """Where log-based result events go (None with `events="span"` and no app provider)."""
    owns_logger_provider: bool = False
    instrumented: list[str] = field(default_factory=list)
    """Names of the integrations `configure()` instrumented."""
    exit_timeout_s: float = DEFAULT_EXIT_TIMEOUT_S
    """The exit hook's deadline."""
    providers: list[ProviderHandle] = field(default_factory=list)
    """Flushed and shut, in parallel, with what is left of a deadline (see `ProviderHandle`)."""
    guards: list[ExportGuard] = field(default_factory=list)
    """The breakers and counts of groundwire's own OTLP exporters."""
    exporter: str = ""
    _instrumentors: list[tuple[str, Any]] = field(default_factory=list)
    _prometheus_server: Any = None
    _push_reader: MetricReader | None = None
    _closed: bool = False
    _froze_gc: bool = False
    _switch: SwitchInterval | None = None
    """The thread switch interval `configure()` set, restored by `shutdown()`."""

    @property
    def prometheus_url(self) -> str | None:
        """The scrape URL of the Prometheus endpoint, when one was asked for."""
        server = self._prometheus_server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def stats(self) -> OnlineStats:
        """Turn counts (submitted, scored, errored, dropped, sampled out, in flight), plus the
        evaluators, the instrumented integrations, the exporter and unexported spans."""
        turns = self.runner.stats()
        return OnlineStats(
            **{name: getattr(turns, name) for name in RunnerStats.__dataclass_fields__},
            evaluators=tuple(e.name for e in self.runner.config.evaluators),
            instrumented=tuple(self.instrumented),
            exporter=self.exporter,
            spans_not_exported=self._spans_not_exported(),
            unreachable=tuple(g.name for g in self.guards if g.breaker.state != CLOSED),
        )

    def _spans_not_exported(self) -> int:
        """Spans handed to groundwire's OTLP span exporter that have not reached the endpoint."""
        return sum(guard.unsent() for guard in self.guards if guard.kind == "spans")

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Finish queued evaluations, then flush the providers; False if the deadline passed.

        Returns within `timeout_s` + `DEADLINE_SLACK_S`, whatever the exporters do.
        """
        timeout_s = _seconds("timeout_s", timeout_s)
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        ok = self.runner.force_flush(max(0.0, timeout_s - _export_reserve(timeout_s)))
        calls = [(f"flush {p.name}", _bind(p.flush, deadline)) for p in self.providers if p.flush]
        return all(outcome.ok for outcome in run_until(calls, deadline)) and ok

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Drain within `timeout_s` (the rest is counted as dropped), flush and shut what we
        built with what is left, and release it all. Returns within `timeout_s` +
        `DEADLINE_SLACK_S`; False when work was dropped or telemetry was left unexported."""
        if self._closed:
            return True
        timeout_s = _seconds("timeout_s", timeout_s)
        self._closed = True
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        runner_budget = max(0.0, deadline - _export_reserve(timeout_s) - time.monotonic())
        drained = self.runner.shutdown(runner_budget, report=False)
        self.processor.close()
        for name, instrumentor in self._instrumentors:
            try:
                instrumentor.uninstrument()
            except Exception:
                logger.warning("could not uninstrument %s", name, exc_info=True)
        for guard in self.guards:
            guard.close_by(deadline)
        calls = [(f"shut {p.name}", _bind(p.close, deadline)) for p in self.providers if p.close]
        outcomes = run_until(calls, deadline)
        if not all(outcome.done for outcome in outcomes):
            for guard in self.guards:
                guard.stop()  # abandoned exports stop their retry waits too
        LIVE_CONTENT.enabled = False
        if self._froze_gc:
            gc.unfreeze()  # what configure() froze is collectable again
        if self._switch is not None:
            self._switch.restore()
        unfinished = [outcome.name for outcome in outcomes if not outcome.done]
        self._report(timeout_s, unfinished)
        return drained and not unfinished and self._spans_not_exported() == 0

    def _report(self, timeout_s: float, unfinished: list[str]) -> None:
        """One warning with the numbers, when shutdown left anything behind."""
        turns, evaluations = self.runner.dropped_at_shutdown
        spans = self._spans_not_exported()
        if not (turns or spans or unfinished):
            return
        down = [g.name for g in self.guards if g.breaker.state != CLOSED]
        logger.warning(
            "shutdown deadline %g s: %d spans and %d evaluations not exported%s%s%s",
            timeout_s,
            spans,
            evaluations,
            f" ({turns} turns unfinished, counted as dropped)" if turns else "",
            f"; still running, abandoned: {', '.join(unfinished)}" if unfinished else "",
            f"; unreachable: {', '.join(down)}" if down else "",
        )


def _export_reserve(timeout_s: float) -> float:
    """The part of a budget kept for exporting what evaluation produced."""
    return min(_EXPORT_RESERVE_MAX_S, timeout_s * _EXPORT_SHARE)


def _bind(call: Callable[[float], object] | None, deadline: float) -> Callable[[], object]:
    """`call` with the seconds left before `deadline`, computed when it starts."""
    assert call is not None
    return lambda: call(max(0.0, deadline - time.monotonic()))


def _millis(seconds: float) -> int:
    """Whole milliseconds, at least 1 (0 means "no time" to some SDK calls, "forever" to none)."""
    return max(1, int(seconds * 1000))


def _providers(
    tracer_provider: Any,
    owns_tracer: bool,
    meter_provider: Any,
    owns_meter: bool,
    push_reader: MetricReader | None,
    prometheus_server: Any,
) -> list[ProviderHandle]:
    """What shutdown and force_flush flush and shut: ours are shut, the app's only flushed."""
    handles: list[ProviderHandle] = []
    if owns_tracer:
        handles.append(
            ProviderHandle(
                "tracer provider",
                lambda s: tracer_provider.force_flush(_millis(s)),
                lambda s: tracer_provider.shutdown(),
            )
        )
    elif hasattr(tracer_provider, "force_flush"):
        flush = lambda s: tracer_provider.force_flush(_millis(s))  # noqa: E731
        handles.append(ProviderHandle("the app's tracer provider", flush, flush))
    if owns_meter:
        handles.append(
            ProviderHandle(
                "meter provider",
                (lambda s: push_reader.force_flush(_millis(s))) if push_reader else None,
                lambda s: meter_provider.shutdown(timeout_millis=_millis(s)),
            )
        )
    elif hasattr(meter_provider, "force_flush"):
        flush = lambda s: meter_provider.force_flush(_millis(s))  # noqa: E731
        handles.append(ProviderHandle("the app's meter provider", flush, flush))
    if prometheus_server is not None:

        def close_prometheus(_seconds: float) -> None:
            """Stop the scrape endpoint."""
            prometheus_server.shutdown()
            prometheus_server.server_close()

        handles.append(ProviderHandle("Prometheus endpoint", None, close_prometheus))
    return handles


def _phoenix_annotations(url: str | None, tracer_provider: Any) -> list[ProviderHandle]:
    """With a Phoenix URL, a `PhoenixAnnotationProcessor` on the provider (it posts every score
    of the evaluation spans as a span annotation) and its handle; nothing otherwise."""
    if url is None:
        return []
    from groundwire.phoenix import PhoenixAnnotationProcessor

    annotator = PhoenixAnnotationProcessor(url)
    tracer_provider.add_span_processor(annotator)

    def close(seconds: float) -> None:
        """Post what is queued, then stop (the provider may be the app's, still running)."""
        annotator.force_flush(_millis(seconds))
        annotator.shutdown()

    return [
        ProviderHandle("Phoenix annotations", lambda s: annotator.force_flush(_millis(s)), close)
    ]


def _logger_handles(logger_provider: Any, owns: bool) -> list[ProviderHandle]:
    """The logger provider's handle: ours is shut (after the processor has emitted the inline
    scores' records), the app's only flushed. `LoggerProvider.shutdown` takes no timeout, so
    like the tracer provider's it runs where the deadline can abandon it."""
    if logger_provider is None:
        return []
    if owns:
        return [
            ProviderHandle(
                "logger provider",
                lambda s: logger_provider.force_flush(_millis(s)),
                lambda s: logger_provider.shutdown(),
            )
        ]
    if hasattr(logger_provider, "force_flush"):
        flush = lambda s: logger_provider.force_flush(_millis(s))  # noqa: E731
        return [ProviderHandle("the app's logger provider", flush, flush)]
    return []


def _describe_exporter(choice: ExporterChoice, owns: bool, guards: list[ExportGuard]) -> str:
    """Where telemetry goes, for stats() and the configure log line."""
    if not owns:
        return "the app's providers"
    if choice.kind == "file":
        return f"file {choice.path}"
    if choice.kind == "otlp":
        return "; ".join(guard.name for guard in guards) or "OTLP"
    return "none"


# --- configure -----------------------------------------------------------------------------------


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
    with _lock:
        if _current is not None:
            raise RuntimeError("groundwire is already configured; call groundwire.shutdown() first")
        _check_environment()
        freeze = _pick(gc_freeze, env_flag(semconv.ENV_GC_FREEZE), True)
        if not isinstance(freeze, bool):
            raise TypeError(f"gc_freeze must be True or False, got {gc_freeze!r}")
        switch_env = _env_number(semconv.ENV_SWITCH_INTERVAL, float)
        switch = check_switch_interval(
            _pick(switch_interval_s, switch_env, DEFAULT_SWITCH_INTERVAL_S),
            "switch_interval_s"
            if switch_interval_s is not None or switch_env is None
            else semconv.ENV_SWITCH_INTERVAL,
        )
        switch_explicit = switch_interval_s is not None or switch_env is not None
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
            online = _configure_from(
                given,
                service_name=service_name,
                output_path=output_path,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                logger_provider=logger_provider,
                events=events,
                phoenix_annotations=_pick(
                    phoenix_annotations, env_str(semconv.ENV_PHOENIX_ANNOTATIONS), None
                ),
                shutdown_timeout_s=shutdown_timeout_s,
                exit_timeout_s=exit_timeout_s,
            )
        except (ValueError, TypeError, KeyError) as error:
            _name_the_variable(error, given)
            raise
        _current = online
    if freeze:
        gc.freeze()  # startup objects leave full collections, whose pauses hit the app's turns
        online._froze_gc = True
    # groundwire's busy threads hold the GIL up to the interval each time an app thread wakes
    online._switch = SwitchInterval.apply(switch, explicit=switch_explicit)
    atexit.register(_shutdown_at_exit)
    return online


_VARIABLES = {
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


def _name_the_variable(error: BaseException, given: Mapping[str, Any]) -> None:
    """Raise a ValueError naming the variable (and its value) when a bad option came from the
    environment; return (the caller re-raises as is) when the argument was explicit."""
    message = str(error) if type(error).__str__ is not KeyError.__str__ else str(error.args[0])
    if type(error).__name__ == "UnknownEvaluatorError":
        option = "evaluators"
    else:
        option = next((o for o in _VARIABLES if message.startswith(o)), "")
    variable = _VARIABLES.get(option)
    if variable is None or given.get(option) is not None:
        return
    raw = env_str(variable)
    if raw is None or variable in message:
        return
    raise ValueError(f"{variable}={raw!r}: {message}") from error


def _configure_from(
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
) -> OnlineEvaluation:
    """Resolve every option (argument, else variable, else default) and configure."""
    evaluators, inline = given["evaluators"], given["inline"]
    sample_rate, evaluator_sample_rates = given["sample_rate"], given["evaluator_sample_rates"]
    turn_filter, judge_token_budget = given["turn_filter"], given["judge_token_budget"]
    max_queue_size, workers = given["max_queue_size"], given["workers"]
    async_concurrency, evaluator_timeout_s = (
        given["async_concurrency"],
        given["evaluator_timeout_s"],
    )
    executor = given["executor"]
    exporter, prometheus_port = given["exporter"], given["prometheus_port"]
    prometheus_host, instrument = given["prometheus_host"], given["instrument"]
    return _configure(
        service_name=_pick(service_name, env_str(semconv.ENV_SERVICE_NAME), None),
        evaluators=_pick(evaluators, env_list(semconv.ENV_EVALUATORS), ()),
        inline=_pick(inline, env_list(semconv.ENV_INLINE), ()),
        sample_rate=_pick(sample_rate, _env_number(semconv.ENV_SAMPLE_RATE, float), 1.0),
        evaluator_sample_rates=_pick(
            evaluator_sample_rates, _env_rates(semconv.ENV_EVALUATOR_SAMPLE_RATES), {}
        ),
        turn_filter=_pick(turn_filter, env_str(semconv.ENV_TURN_FILTER), None),
        judge_token_budget=_pick(
            judge_token_budget, _env_number(semconv.ENV_JUDGE_TOKEN_BUDGET, int), None
        ),
        max_queue_size=_pick(max_queue_size, _env_number(semconv.ENV_MAX_QUEUE_SIZE, int), 2048),
        workers=_pick(workers, _env_number(semconv.ENV_WORKERS, int), 2),
        async_concurrency=_pick(
            async_concurrency, _env_number(semconv.ENV_ASYNC_CONCURRENCY, int), 8
        ),
        evaluator_timeout_s=_pick(
            evaluator_timeout_s, _env_number(semconv.ENV_EVALUATOR_TIMEOUT, float), 30.0
        ),
        executor=_pick(executor, env_str(semconv.ENV_EXECUTOR), "threads"),
        exporter=_pick(exporter, env_str(semconv.ENV_EXPORTER), "auto"),
        output_path=_pick(output_path, env_str(semconv.ENV_OUTPUT_PATH), None),
        prometheus_port=_pick(prometheus_port, _env_number(semconv.ENV_PROMETHEUS_PORT, int), None),
        prometheus_host=_pick(prometheus_host, env_str(semconv.ENV_PROMETHEUS_HOST), "127.0.0.1"),
        instrument=_pick(instrument, _env_instrument(semconv.ENV_INSTRUMENT), True),
        events=resolve_events(events),
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        phoenix_annotations=phoenix_annotations,
        shutdown_timeout_s=_seconds("shutdown_timeout_s", shutdown_timeout_s),
        exit_timeout_s=_seconds(
            f"exit_timeout_s ({semconv.ENV_EXIT_TIMEOUT})",
            _pick(
                exit_timeout_s,
                _env_number(semconv.ENV_EXIT_TIMEOUT, float),
                DEFAULT_EXIT_TIMEOUT_S,
            ),
        ),
    )


def _configure(
    *,
    service_name: str | None,
    evaluators: Any,
    inline: Sequence[str],
    sample_rate: float,
    evaluator_sample_rates: Mapping[str, float],
    turn_filter: Callable[[RagTurn], bool] | str | None,
    judge_token_budget: int | None,
    max_queue_size: int,
    workers: int,
    async_concurrency: int,
    evaluator_timeout_s: float,
    executor: str,
    exporter: str,
    output_path: str | os.PathLike[str] | None,
    prometheus_port: int | None,
    prometheus_host: str,
    instrument: bool | Sequence[str],
    events: str,
    tracer_provider: Any,
    meter_provider: Any,
    logger_provider: Any,
    phoenix_annotations: str | None,
    shutdown_timeout_s: float,
    exit_timeout_s: float,
) -> OnlineEvaluation:
    """Validate every option, then build and wire everything (the body of `configure`)."""
    if isinstance(turn_filter, str):
        turn_filter = _import_filter(turn_filter)
    if inline and not inline_supported():
        logger.warning(
            "this opentelemetry-sdk has no SpanProcessor._on_ending hook (added in 1.36); "
            "running the inline evaluators %s in the background instead",
            sorted(inline),
        )
        inline = ()
    config = RunnerConfig(
        evaluators=resolve_evaluators(evaluators),
        inline=frozenset(inline),
        sample_rate=sample_rate,
        evaluator_sample_rates=evaluator_sample_rates,
        turn_filter=turn_filter,
        judge_token_budget=judge_token_budget,
        max_queue_size=max_queue_size,
        workers=workers,
        async_concurrency=async_concurrency,
        evaluator_timeout_s=evaluator_timeout_s,
        executor=executor,
    )
    if prometheus_port is not None and (
        isinstance(prometheus_port, bool) or not 0 <= prometheus_port <= 65535
    ):
        raise ValueError(f"prometheus_port must be a port number (0-65535), got {prometheus_port}")
    if not config.evaluators:
        raise ValueError(
            f"configure() would score nothing: no evaluators (pass evaluators=[...] or set "
            f"{semconv.ENV_EVALUATORS}); to capture spans only, instrument the integrations "
            f"directly (docs/online.md)"
        )
    if not isinstance(prometheus_host, str) or not prometheus_host.strip():
        raise ValueError(
            f"prometheus_host ({semconv.ENV_PROMETHEUS_HOST}) must be a host name or address, "
            f"got {prometheus_host!r}"
        )
    if phoenix_annotations is not None and (
        not isinstance(phoenix_annotations, str)
        or not phoenix_annotations.startswith(("http://", "https://"))
    ):
        raise ValueError(
            f"phoenix_annotations ({semconv.ENV_PHOENIX_ANNOTATIONS}) must be Phoenix's base URL, "
            f"http(s)://host:port, got {phoenix_annotations!r}"
        )
    choice = choose_exporter(exporter, output_path)
    planned = _plan_instruments(instrument)
    attributes = {semconv.SERVICE_NAME: service_name} if service_name else {}
    resource = Resource.create(attributes)
    file = JsonLinesFile(choice.path) if choice.path is not None else None

    tracer_provider = tracer_provider or trace.get_tracer_provider()
    owns_tracer = not isinstance(tracer_provider, SdkTracerProvider)
    if owns_tracer and not isinstance(tracer_provider, trace.ProxyTracerProvider):
        raise TypeError(
            f"groundwire needs an OpenTelemetry SDK TracerProvider to watch spans; the app's "
            f"is a {type(tracer_provider).__name__}. Pass tracer_provider= an SDK provider."
        )
    guards: list[ExportGuard] = []
    if owns_tracer:
        tracer_provider = build_tracer_provider(resource, choice, file, guards=guards)
        trace.set_tracer_provider(tracer_provider)

    readers: tuple[MetricReader, ...] = ()
    push_reader: MetricReader | None = None
    prometheus_server = None
    meter_provider = meter_provider or metrics.get_meter_provider()
    owns_meter = not isinstance(meter_provider, SdkMeterProvider)
    if prometheus_port is not None:
        if owns_meter:
            readers, prometheus_server = _prometheus(prometheus_port, prometheus_host)
        else:
            logger.warning(
                "prometheus_port ignored: the app's meter provider was built before "
                "groundwire.configure(); add a PrometheusMetricReader to it instead"
            )
    if owns_meter:
        meter_provider, push_reader = build_meter_provider(
            resource, choice, file, readers, guards=guards
        )
        metrics.set_meter_provider(meter_provider)

    logger_provider = app_logger_provider(logger_provider)
    owns_logger = logger_provider is None and events != semconv.EVENTS_SPAN
    if owns_logger:
        # groundwire's own: not made global (a process may set that only once, and the app's
        # later set_logger_provider would then fail); only the result events use it
        logger_provider = build_logger_provider(resource, choice, file, guards=guards)

    emitter = Emitter(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        events=events,
        evaluators=config.evaluators,
    )
    runner = BackgroundRunner(config, emitter)
    warm_s = runner.warm_up()  # imports and models load now, not on the app's first turns
    logger.debug("groundwire: evaluators warmed up in %.2f s", warm_s)
    processor = EvaluationSpanProcessor(runner, emitter, shutdown_timeout_s=shutdown_timeout_s)
    tracer_provider.add_span_processor(processor)
    annotations = _phoenix_annotations(phoenix_annotations, tracer_provider)
    LIVE_CONTENT.enabled = True
    instrumented = _instrument(planned, tracer_provider, meter_provider)
    owns_any = owns_tracer or owns_meter or owns_logger
    if choice.path is not None and owns_any:
        logger.warning(
            "groundwire: no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT); writing "
            "traces, metrics and logs as OTLP/JSON lines to %s",
            choice.path.resolve(),
        )
    described = _describe_exporter(choice, owns_tracer or owns_meter, guards)
    logger.info(
        "groundwire: scoring %s; instrumented: %s; telemetry: %s; exit deadline %g s",
        ", ".join(e.name for e in config.evaluators),
        ", ".join(name for name, _ in instrumented)
        or "none (spans must come from another instrumentation)",
        described,
        exit_timeout_s,
    )
    return OnlineEvaluation(
        runner=runner,
        processor=processor,
        emitter=emitter,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        owns_tracer_provider=owns_tracer,
        owns_meter_provider=owns_meter,
        output_path=choice.path if owns_any else None,
        logger_provider=logger_provider,
        owns_logger_provider=owns_logger,
        instrumented=[name for name, _ in instrumented],
        exit_timeout_s=exit_timeout_s,
        providers=_providers(
            tracer_provider, owns_tracer, meter_provider, owns_meter, push_reader, prometheus_server
        )
        + _logger_handles(logger_provider, owns_logger)
        + annotations,
        guards=guards,
        exporter=described,
        _instrumentors=instrumented,
        _prometheus_server=prometheus_server,
        _push_reader=push_reader,
    )


def _prometheus(port: int, host: str) -> tuple[tuple[MetricReader, ...], Any]:
    """A PrometheusMetricReader and its HTTP server on `host:port`."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server
    except ImportError as error:
        raise ImportError(
            "prometheus_port needs the Prometheus extra: pip install 'groundwire[prometheus]'"
        ) from error
    reader = PrometheusMetricReader()
    server, _thread = start_http_server(port, addr=host)
    logger.info("groundwire: Prometheus metrics on http://%s:%d/metrics", host, server.server_port)
    return (reader,), server


# --- module-level lifecycle ----------------------------------------------------------------------


def get_online() -> OnlineEvaluation | None:
    """The active configuration, or None."""
    return _current


def shutdown(timeout_s: float = 30.0) -> bool:
    """Drain and stop online evaluation (no-op when not configured); False if work was dropped."""
    global _current
    timeout_s = _seconds("timeout_s", timeout_s)
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
