"""The Emitter: scores in, telemetry out (log-based events, span events and attributes, carrier
spans, metrics).

One object so the runner, the offline re-scorer and the CLI write scores the same way. It holds a
tracer, a logger and the metric instruments; it never raises into its caller for a telemetry
problem. `events` says where each `gen_ai.evaluation.result` goes: `logs` (log records through the
Logs API, OTEP 4430), `span` (span events) or `both`; the carrier span and the OpenInference
`evaluations.{i}.*` attributes are written in every mode.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanContext, TracerProvider

from groundwire import semconv
from groundwire._types import Score
from groundwire._version import __version__
from groundwire.emit._attributes import evaluation_attributes, score_event_attributes
from groundwire.emit._logs import ResultLogger, evaluator_versions, resolve_events
from groundwire.emit._metrics import EvaluationMetrics
from groundwire.emit._spans import SpanTarget, emit_evaluation_span, target_context

__all__ = ["Emitter"]

logger = logging.getLogger("groundwire.emit")


class Emitter:
    """Writes scores as OpenTelemetry telemetry on the given (or global) providers."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        events: str | None = None,
        capture_content: bool | None = None,
        evaluators: Iterable[object] = (),
    ) -> None:
        """`events` defaults to `GROUNDWIRE_EVENTS`, else `both`; `capture_content` (the details
        as log bodies) to "no `GROUNDWIRE_HIDE_*` switch set"; `evaluators` name the versions."""
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__)
        self.metrics = EvaluationMetrics(meter_provider)
        self.events = resolve_events(events)
        """`logs`, `span` or `both`."""
        self.results = ResultLogger(
            logger_provider,
            capture_content=capture_content,
            versions=evaluator_versions(evaluators),
        )

    def for_service(self, service: str | None) -> Emitter:
        """The emitter for results of a turn of `service` (its `service.name`); this one.

        One app's emitter serves every turn. Where turns of many apps meet (the gateway), a
        subclass returns an emitter whose telemetry carries the app's own resource, so the
        results show under the app in trace views and dashboards.
        """
        return self

    @property
    def span_events(self) -> bool:
        """True when results go out as span events (`span` or `both`)."""
        return self.events != semconv.EVENTS_LOGS

    @property
    def log_events(self) -> bool:
        """True when results go out as log-based events (`logs` or `both`)."""
        return self.events != semconv.EVENTS_SPAN

    def add_evaluators(self, evaluators: Iterable[object]) -> None:
        """Learn the versions of more evaluators (`groundwire.evaluator.version`)."""
        self.results.versions.update(evaluator_versions(evaluators))

    def annotate(self, span: Span, scores: Sequence[Score], start_index: int = 0) -> None:
        """Put scores on a span that is still recording: OpenInference attrs, plus one result
        event each on the span and/or as a log record, as `events` says."""
        if not scores or not span.is_recording():
            return
        span.set_attributes(evaluation_attributes(scores, start_index))
        if self.span_events:
            for score in scores:
                version = self.results.versions.get(score.name)
                span.add_event(
                    semconv.GEN_AI_EVALUATION_RESULT_EVENT, score_event_attributes(score, version)
                )
        context = span.get_span_context()
        target = (format(context.trace_id, "032x"), format(context.span_id, "016x"))
        self.emit_logs(target, scores, mode=semconv.EVALUATION_MODE_INLINE)

    def emit_logs(
        self,
        target: SpanTarget,
        scores: Sequence[Score],
        *,
        mode: str,
        timestamp_ns: int | None = None,
    ) -> int:
        """Log-based result events for `scores` on the evaluated span `target` (none in `span`
        mode); returns how many were emitted. Never raises for a telemetry problem."""
        if not scores or not self.log_events:
            return 0
        target_context(target)  # a bad target is the caller's mistake: ValueError, as emit_span
        try:
            return self.results.emit(target, scores, mode=mode, timestamp_ns=timestamp_ns)
        except Exception:
            logger.warning("could not emit evaluation results as log records", exc_info=True)
            return 0

    def emit_span(
        self,
        target: SpanTarget,
        scores: Sequence[Score],
        *,
        mode: str = semconv.EVALUATION_MODE_BACKGROUND,
        attributes: Mapping[str, str | bool | int | float] | None = None,
        start_time_ns: int | None = None,
    ) -> SpanContext | None:
        """Record an evaluation carrier span under the (ended) span `target` (with result events
        unless `events="logs"`) and, unless `events="span"`, one result log record per score
        correlated to `target`; None if no scores."""
        if not scores:
            return None
        carrier = emit_evaluation_span(
            self.tracer,
            target,
            scores,
            mode=mode,
            attributes=attributes,
            start_time_ns=start_time_ns,
            events=self.span_events,
            versions=self.results.versions,
        )
        self.emit_logs(target, scores, mode=mode)
        return carrier

    def record(self, score: Score, duration_s: float | None = None) -> None:
        """Metric points for one finished evaluation."""
        try:
            self.metrics.record_score(score, duration_s)
        except Exception:
            logger.warning("could not record metrics for %r", score.name, exc_info=True)

    def record_outcome(self, evaluator: str, outcome: str, count: int = 1) -> None:
        """Count evaluations that did not run (dropped, sampled_out, skipped)."""
        try:
            self.metrics.record_outcome(evaluator, outcome, count)
        except Exception:
            logger.warning("could not count %s evaluations", outcome, exc_info=True)
