"""The Emitter: scores in, telemetry out (span events and attributes, carrier spans, metrics).

One object so the runner, the offline re-scorer and the CLI write scores the same way. It holds a
tracer and the metric instruments; it never raises into its caller for a telemetry problem.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.metrics import MeterProvider
from opentelemetry.trace import Span, SpanContext, TracerProvider

from groundwire import semconv
from groundwire._types import Score
from groundwire._version import __version__
from groundwire.emit._attributes import evaluation_attributes, score_event_attributes
from groundwire.emit._metrics import EvaluationMetrics
from groundwire.emit._spans import SpanTarget, emit_evaluation_span

__all__ = ["Emitter"]

logger = logging.getLogger("groundwire.emit")


class Emitter:
    """Writes scores as OpenTelemetry telemetry on the given (or global) providers."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer(semconv.INSTRUMENTATION_SCOPE, __version__)
        self.metrics = EvaluationMetrics(meter_provider)

    def annotate(self, span: Span, scores: Sequence[Score], start_index: int = 0) -> None:
        """Put scores on a span that is still recording: one event each plus OpenInference attrs."""
        if not scores or not span.is_recording():
            return
        span.set_attributes(evaluation_attributes(scores, start_index))
        for score in scores:
            span.add_event(semconv.GEN_AI_EVALUATION_RESULT_EVENT, score_event_attributes(score))

    def emit_span(
        self,
        target: SpanTarget,
        scores: Sequence[Score],
        *,
        mode: str = "background",
        attributes: Mapping[str, str | bool | int | float] | None = None,
        start_time_ns: int | None = None,
    ) -> SpanContext | None:
        """Record an evaluation carrier span under the (ended) span `target`; None if no scores."""
        if not scores:
            return None
        return emit_evaluation_span(
            self.tracer,
            target,
            scores,
            mode=mode,
            attributes=attributes,
            start_time_ns=start_time_ns,
        )

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
