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
import importlib
import logging
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
from groundwire._env import FALSE, TRUE, env_list, env_str
from groundwire._evaluator import AnyEvaluator
from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter, resolve_events
from groundwire.exporters._jsonl import JsonLinesFile
from groundwire.exporters._logs import app_logger_provider, build_logger_provider
from groundwire.exporters._providers import (
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

__all__ = ["OnlineEvaluation", "configure", "force_flush", "get_online", "shutdown"]

logger = logging.getLogger("groundwire")

_INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"
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


def _instrument(
    selection: bool | Sequence[str], tracer_provider: Any, meter_provider: Any
) -> list[tuple[str, Any]]:
    """Instrument the installed `groundwire-*` integrations; absent frameworks are skipped."""
    if selection is False:
        return []
    wanted = None if selection is True else set(selection)
    done: list[tuple[str, Any]] = []
    for entry_point in entry_points(group=_INSTRUMENTOR_GROUP):
        if not _is_ours(entry_point) or (wanted is not None and not _names(entry_point) & wanted):
            continue
        try:
            instrumentor = entry_point.load()()
            from opentelemetry.instrumentation.dependencies import get_dependency_conflicts

            if get_dependency_conflicts(instrumentor.instrumentation_dependencies()):
                logger.debug("skipping %s: its framework is not installed", entry_point.name)
                continue
            if instrumentor.is_instrumented_by_opentelemetry:
                continue
            instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        except ImportError as error:
            logger.debug("skipping %s: %s", entry_point.name, error)
            continue
        except Exception:
            logger.warning("could not instrument %s", entry_point.name, exc_info=True)
            continue
        done.append((entry_point.name, instrumentor))
    if wanted is not None:
        found = {alias for name, _ in done for alias in (name, name.removeprefix("groundwire_"))}
        missing = sorted(wanted - found)
        if missing:
            logger.warning("requested integrations not instrumented: %s", missing)
    return done


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
    _instrumentors: list[tuple[str, Any]] = field(default_factory=list)
    _prometheus_server: Any = None
    _push_reader: MetricReader | None = None
    _closed: bool = False

    @property
    def prometheus_url(self) -> str | None:
        """The scrape URL of the Prometheus endpoint, when one was asked for."""
        server = self._prometheus_server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def stats(self) -> RunnerStats:
        """Turn counts: submitted, scored, errored, dropped, sampled out, in flight."""
        return self.runner.stats()

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Finish queued evaluations, then flush the providers; False if the deadline passed."""
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        ok = self.runner.force_flush(timeout_s)
        meter_target = self.meter_provider
        if self.owns_meter_provider:
            meter_target = self._push_reader  # never flush the Prometheus pull reader
        for target in (self.tracer_provider, self.logger_provider, meter_target):
            flush = getattr(target, "force_flush", None)
            if flush is not None:
                remaining_ms = max(0.0, deadline - time.monotonic()) * 1000
                ok = bool(flush(int(remaining_ms))) and ok
        return ok

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Drain within `timeout_s` (the rest is counted as dropped) and release what we built."""
        if self._closed:
            return True
        self._closed = True
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        drained = self.runner.shutdown(timeout_s)
        self.processor.close()
        for name, instrumentor in self._instrumentors:
            try:
                instrumentor.uninstrument()
            except Exception:
                logger.warning("could not uninstrument %s", name, exc_info=True)
        remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
        if self.owns_tracer_provider:
            self.tracer_provider.shutdown()
        elif hasattr(self.tracer_provider, "force_flush"):
            self.tracer_provider.force_flush(remaining_ms)
        _finish_logs(self, int(max(0.0, deadline - time.monotonic()) * 1000))
        remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
        if self.owns_meter_provider:
            self.meter_provider.shutdown(timeout_millis=max(remaining_ms, 1))
        elif hasattr(self.meter_provider, "force_flush"):
            self.meter_provider.force_flush(remaining_ms)
        if self._prometheus_server is not None:
            self._prometheus_server.shutdown()
            self._prometheus_server.server_close()
        LIVE_CONTENT.enabled = False
        return drained


def _finish_logs(online: OnlineEvaluation, remaining_ms: int) -> None:
    """Shut down the logger provider groundwire built, or flush the app's."""
    provider = online.logger_provider
    if provider is None:
        return
    if online.owns_logger_provider:
        provider.shutdown()
    elif hasattr(provider, "force_flush"):
        provider.force_flush(remaining_ms)


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
    exporter: str | None = None,
    output_path: str | os.PathLike[str] | None = None,
    prometheus_port: int | None = None,
    prometheus_host: str | None = None,
    instrument: bool | Sequence[str] | None = None,
    events: str | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    logger_provider: Any = None,
    shutdown_timeout_s: float = 10.0,
) -> OnlineEvaluation:
    """Score the app's RAG turns as they happen and emit the scores as telemetry.

    Raises RuntimeError when already configured (call `groundwire.shutdown()` first), and
    ValueError/TypeError naming the argument (or variable) for a bad option. docs/online.md
    describes every argument.
    """
    global _current
    with _lock:
        if _current is not None:
            raise RuntimeError("groundwire is already configured; call groundwire.shutdown() first")
        online = _configure(
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
            max_queue_size=_pick(
                max_queue_size, _env_number(semconv.ENV_MAX_QUEUE_SIZE, int), 2048
            ),
            workers=_pick(workers, _env_number(semconv.ENV_WORKERS, int), 2),
            async_concurrency=_pick(
                async_concurrency, _env_number(semconv.ENV_ASYNC_CONCURRENCY, int), 8
            ),
            evaluator_timeout_s=_pick(
                evaluator_timeout_s, _env_number(semconv.ENV_EVALUATOR_TIMEOUT, float), 30.0
            ),
            exporter=_pick(exporter, env_str(semconv.ENV_EXPORTER), "auto"),
            output_path=_pick(output_path, env_str(semconv.ENV_OUTPUT_PATH), None),
            prometheus_port=_pick(
                prometheus_port, _env_number(semconv.ENV_PROMETHEUS_PORT, int), None
            ),
            prometheus_host=_pick(
                prometheus_host, env_str(semconv.ENV_PROMETHEUS_HOST), "127.0.0.1"
            ),
            instrument=_pick(instrument, _env_instrument(semconv.ENV_INSTRUMENT), True),
            events=resolve_events(events),
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
            logger_provider=logger_provider,
            shutdown_timeout_s=shutdown_timeout_s,
        )
        _current = online
    atexit.register(_shutdown_at_exit)
    return online


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
    exporter: str,
    output_path: str | os.PathLike[str] | None,
    prometheus_port: int | None,
    prometheus_host: str,
    instrument: bool | Sequence[str],
    events: str,
    tracer_provider: Any,
    meter_provider: Any,
    logger_provider: Any,
    shutdown_timeout_s: float,
) -> OnlineEvaluation:
    """Build and wire everything from resolved options (the body of `configure`)."""
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
    )
    if prometheus_port is not None and (
        isinstance(prometheus_port, bool) or not 0 <= prometheus_port <= 65535
    ):
        raise ValueError(f"prometheus_port must be a port number (0-65535), got {prometheus_port}")
    choice = choose_exporter(exporter, output_path)
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
    if owns_tracer:
        tracer_provider = build_tracer_provider(resource, choice, file)
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
        meter_provider, push_reader = build_meter_provider(resource, choice, file, readers)
        metrics.set_meter_provider(meter_provider)

    logger_provider = app_logger_provider(logger_provider)
    owns_logger = logger_provider is None and events != semconv.EVENTS_SPAN
    if owns_logger:
        # groundwire's own: not made global (a process may set that only once, and the app's
        # later set_logger_provider would then fail); only the result events use it
        logger_provider = build_logger_provider(resource, choice, file)

    emitter = Emitter(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        events=events,
        evaluators=config.evaluators,
    )
    runner = BackgroundRunner(config, emitter)
    processor = EvaluationSpanProcessor(runner, emitter, shutdown_timeout_s=shutdown_timeout_s)
    tracer_provider.add_span_processor(processor)
    LIVE_CONTENT.enabled = True
    instrumented = _instrument(instrument, tracer_provider, meter_provider)
    if choice.path is not None and (owns_tracer or owns_meter or owns_logger):
        logger.warning(
            "groundwire: no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT); writing "
            "traces, metrics and logs as OTLP/JSON lines to %s",
            choice.path.resolve(),
        )
    return OnlineEvaluation(
        runner=runner,
        processor=processor,
        emitter=emitter,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        owns_tracer_provider=owns_tracer,
        owns_meter_provider=owns_meter,
        output_path=choice.path if (owns_tracer or owns_meter or owns_logger) else None,
        logger_provider=logger_provider,
        owns_logger_provider=owns_logger,
        instrumented=[name for name, _ in instrumented],
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
    """The atexit hook: shut down with the configured deadline."""
    online = _current
    shutdown(online.processor.shutdown_timeout_s if online is not None else 5.0)
