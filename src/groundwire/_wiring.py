"""Wiring: from `configure()`'s settings to running parts.

`wire` builds (or adopts) the tracer, meter and logger providers (`build_providers`, one call),
then the emitter, the background runner and the span processor, hooks them onto the tracer
provider, instruments the integrations, and returns the `OnlineEvaluation` handle with every
provider's flush and shutdown (`ProviderHandle`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

from groundwire import semconv
from groundwire._instruments import instrument, plan_instruments
from groundwire._online import OnlineEvaluation, ProviderHandle
from groundwire._settings import Settings, runner_config
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.exporters import (
    ExporterChoice,
    ExportGuard,
    JsonLinesFile,
    app_logger_provider,
    build_logger_provider,
    build_meter_provider,
    build_tracer_provider,
    choose_exporter,
    logs_disabled,
    same_server,
    span_destinations,
)
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor

__all__ = ["Providers", "build_providers", "signal_routes", "wire"]

logger = logging.getLogger("groundwire")


@dataclass
class Providers:
    """The tracer, meter and logger providers online evaluation uses, and which are ours."""

    tracer_provider: Any
    owns_tracer: bool
    meter_provider: Any
    owns_meter: bool
    logger_provider: Any
    owns_logger: bool
    push_reader: MetricReader | None = None
    prometheus_server: Any = None
    guards: list[ExportGuard] = field(default_factory=list)
    """The breakers and counts of groundwire's own OTLP exporters."""


def build_providers(settings: Settings, choice: ExporterChoice) -> Providers:
    """The app's SDK providers where it has them, else groundwire's own (OTLP or the JSON-lines
    file, per `choice`), made global; the logger provider is never made global."""
    attributes = {semconv.SERVICE_NAME: settings.service_name} if settings.service_name else {}
    resource = Resource.create(attributes)
    file = JsonLinesFile(choice.path) if choice.path is not None else None

    tracer_provider = settings.tracer_provider or trace.get_tracer_provider()
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
    meter_provider = settings.meter_provider or metrics.get_meter_provider()
    owns_meter = not isinstance(meter_provider, SdkMeterProvider)
    if settings.prometheus_port is not None:
        if owns_meter:
            readers, prometheus_server = _prometheus(
                settings.prometheus_port, settings.prometheus_host
            )
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

    logger_provider = app_logger_provider(settings.logger_provider)
    owns_logger = logger_provider is None and settings.events != semconv.EVENTS_SPAN
    if owns_logger:
        # groundwire's own: not made global (a process may set that only once, and the app's
        # later set_logger_provider would then fail); only the result events use it
        logger_provider = build_logger_provider(resource, choice, file, guards=guards)
    return Providers(
        tracer_provider,
        owns_tracer,
        meter_provider,
        owns_meter,
        logger_provider,
        owns_logger,
        push_reader,
        prometheus_server,
        guards,
    )


def wire(settings: Settings) -> OnlineEvaluation:
    """Validate, then build and wire everything (the body of `configure`)."""
    config = runner_config(settings)
    choice = choose_exporter(settings.exporter, settings.output_path)
    planned = plan_instruments(settings.instrument)
    p = build_providers(settings, choice)
    emitter = Emitter(
        tracer_provider=p.tracer_provider,
        meter_provider=p.meter_provider,
        logger_provider=p.logger_provider,
        events=settings.events,
        evaluators=config.evaluators,
    )
    runner = BackgroundRunner(config, emitter)
    warm_s = runner.warm_up()  # imports and models load now, not on the app's first turns
    logger.debug("groundwire: evaluators warmed up in %.2f s", warm_s)
    processor = EvaluationSpanProcessor(
        runner, emitter, shutdown_timeout_s=settings.shutdown_timeout_s
    )
    p.tracer_provider.add_span_processor(processor)
    annotations = _phoenix_annotations(settings.phoenix_annotations, p.tracer_provider)
    LIVE_CONTENT.enabled = True
    instrumented = instrument(planned, p.tracer_provider, p.meter_provider)
    routes = signal_routes(p, choice, settings.events)
    to_file = [name for name, where in routes.items() if choice.path and where.startswith("file")]
    if to_file and choice.path is not None:
        logger.warning(
            "groundwire: no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT); writing "
            "%s as OTLP/JSON lines to %s",
            _and(to_file),
            choice.path.resolve(),
        )
    described = _describe_exporter(choice, p.owns_tracer or p.owns_meter, p.guards)
    logger.info(
        "groundwire: scoring %s; instrumented: %s; telemetry: %s; exit deadline %g s",
        ", ".join(e.name for e in config.evaluators),
        ", ".join(name for name, _ in instrumented)
        or "none (spans must come from another instrumentation)",
        "; ".join(f"{signal} -> {where}" for signal, where in routes.items()),
        settings.exit_timeout_s,
    )
    return OnlineEvaluation(
        runner=runner,
        processor=processor,
        emitter=emitter,
        tracer_provider=p.tracer_provider,
        meter_provider=p.meter_provider,
        owns_tracer_provider=p.owns_tracer,
        owns_meter_provider=p.owns_meter,
        output_path=choice.path if to_file else None,
        logger_provider=p.logger_provider,
        owns_logger_provider=p.owns_logger,
        instrumented=[name for name, _ in instrumented],
        exit_timeout_s=settings.exit_timeout_s,
        providers=_handles(p) + annotations,
        guards=p.guards,
        exporter=described,
        _instrumentors=instrumented,
        _prometheus_server=p.prometheus_server,
    )


def _handles(p: Providers) -> list[ProviderHandle]:
    """Every provider's flush and shutdown, tracer and meter first, then the logger's."""
    return _providers(
        p.tracer_provider,
        p.owns_tracer,
        p.meter_provider,
        p.owns_meter,
        p.push_reader,
        p.prometheus_server,
    ) + _logger_handles(p.logger_provider, p.owns_logger)


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
    handles = _sdk_handles("tracer", tracer_provider, owns_tracer)
    if owns_meter:
        handles.append(
            ProviderHandle(
                "meter provider",
                (lambda s: push_reader.force_flush(_millis(s))) if push_reader else None,
                lambda s: meter_provider.shutdown(timeout_millis=_millis(s)),
            )
        )
    else:
        handles += _sdk_handles("meter", meter_provider, owns=False)
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
    _warn_unless_spans_reach(url, tracer_provider)
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


def _warn_unless_spans_reach(url: str, tracer_provider: Any) -> None:
    """One WARNING line when none of the provider's span exporters sends to the Phoenix at
    `url`: an annotation attaches only to a span that Phoenix has stored, so without the spans
    every annotation fails (after its not-found retries) and nothing else would say why."""
    destinations = span_destinations(tracer_provider)
    if any(same_server(destination, url) for destination in destinations):
        return
    logger.warning(
        "groundwire: phoenix_annotations=%s, but the spans do not go to that Phoenix (they go "
        "to: %s), so its annotations have no span to attach to; export the spans to "
        "%s/v1/traces too, or through a Collector that forwards them (docs/phoenix.md)",
        url,
        ", ".join(destinations) or "no exporter groundwire can see",
        url.rstrip("/"),
    )


def _logger_handles(logger_provider: Any, owns: bool) -> list[ProviderHandle]:
    """The logger provider's handle: ours is shut (after the processor has emitted the inline
    scores' records), the app's only flushed. `LoggerProvider.shutdown` takes no timeout, so
    like the tracer provider's it runs where the deadline can abandon it."""
    if logger_provider is None:
        return []
    return _sdk_handles("logger", logger_provider, owns)


def _sdk_handles(signal: str, provider: Any, owns: bool) -> list[ProviderHandle]:
    """A provider's handle: ours is flushed, then shut (by the deadline: the SDK's tracer and
    logger `shutdown` take no timeout); the app's is only flushed, when it can be."""

    def flush(seconds: float) -> Any:
        return provider.force_flush(_millis(seconds))

    if owns:
        return [ProviderHandle(f"{signal} provider", flush, lambda s: provider.shutdown())]
    if hasattr(provider, "force_flush"):
        return [ProviderHandle(f"the app's {signal} provider", flush, flush)]
    return []


def signal_routes(p: Providers, choice: ExporterChoice, events: str) -> dict[str, str]:
    """Where each signal goes (`traces`, `metrics`, `logs`): the app's provider, groundwire's
    OTLP endpoint or file, or nowhere. Only the signals groundwire's own providers handle reach
    its file, so an app with its own providers gets no file for them."""

    def ours(signal: str) -> str:
        if choice.kind == "file":
            return _file(choice)
        named = [guard.name for guard in p.guards if guard.name.startswith(f"OTLP {signal} ")]
        return named[0] if named else "none"

    traces = ours("traces") if p.owns_tracer else "the app's tracer provider"
    metrics = ours("metrics") if p.owns_meter else "the app's meter provider"
    if p.prometheus_server is not None:
        metrics += f" and Prometheus port {p.prometheus_server.server_port}"
    if p.logger_provider is None or events == semconv.EVENTS_SPAN:
        logs = "none (results are span events: events='span')"
    elif not p.owns_logger:
        logs = "the app's logger provider"
    else:
        logs = "none (OTEL_LOGS_EXPORTER=none)" if logs_disabled() else ours("logs")
    return {"traces": traces, "metrics": metrics, "logs": logs}


def _file(choice: ExporterChoice) -> str:
    """How a route names the JSON-lines file (absolute), or "" when the choice has none."""
    return f"file {choice.path.resolve()}" if choice.path is not None else ""


def _and(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _describe_exporter(choice: ExporterChoice, owns: bool, guards: list[ExportGuard]) -> str:
    """Where telemetry goes, for stats() and the configure log line."""
    if not owns:
        return "the app's providers"
    if choice.kind == "file":
        return f"file {choice.path}"
    if choice.kind == "otlp":
        return "; ".join(guard.name for guard in guards) or "OTLP"
    return "none"


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
