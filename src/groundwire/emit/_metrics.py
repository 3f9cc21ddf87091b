"""groundwire's metric instruments, with bucket bounds suited to scores and seconds.

Histograms carry `explicit_bucket_boundaries_advisory`, so the buckets are right on any SDK
meter provider, including one the app built before groundwire was configured; `metric_views()`
states the same bounds as Views for providers groundwire builds itself.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Final

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

from groundwire import semconv
from groundwire._types import Score
from groundwire._version import __version__

__all__ = ["EvaluationMetrics", "is_skipped", "metric_views"]


def is_skipped(score: Score) -> bool:
    """True for a judge evaluator's "no judge configured" score (label `skipped`, no value)."""
    return score.value is None and score.label == semconv.LABEL_SKIPPED


_HISTOGRAMS: Final[dict[str, tuple[str, Sequence[float], str]]] = {
    semconv.METRIC_EVALUATION_SCORE: (
        "1",
        semconv.SCORE_BUCKETS,
        "Evaluation scores in [0, 1], by evaluator and label.",
    ),
    semconv.METRIC_EVALUATION_DURATION: (
        "s",
        semconv.DURATION_BUCKETS_S,
        "Time one evaluator took on one turn.",
    ),
    semconv.METRIC_JUDGE_AGREEMENT: (
        "1",
        semconv.SCORE_BUCKETS,
        "Agreement between the two groundedness judges, in [0, 1].",
    ),
}
"""Each histogram's unit, bucket bounds and description: the bounds are stated once, for the
instrument's advisory and for the View of `metric_views()`."""


def metric_views() -> list[View]:
    """Views pinning explicit buckets: [0, 1] for scores and agreement, seconds for durations."""
    return [
        View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(bounds))
        for name, (_unit, bounds, _description) in _HISTOGRAMS.items()
    ]


class EvaluationMetrics:
    """The five instruments of online evaluation, created once on a meter provider."""

    def __init__(self, meter_provider: MeterProvider | None = None) -> None:
        provider = meter_provider or metrics.get_meter_provider()
        meter = provider.get_meter(semconv.INSTRUMENTATION_SCOPE, __version__)
        histograms = {
            name: meter.create_histogram(
                name, unit=unit, description=text, explicit_bucket_boundaries_advisory=bounds
            )
            for name, (unit, bounds, text) in _HISTOGRAMS.items()
        }
        self._score = histograms[semconv.METRIC_EVALUATION_SCORE]
        self._duration = histograms[semconv.METRIC_EVALUATION_DURATION]
        self._agreement = histograms[semconv.METRIC_JUDGE_AGREEMENT]
        self._evaluations = meter.create_counter(
            semconv.METRIC_EVALUATIONS,
            unit="{evaluation}",
            description="Evaluations by evaluator and outcome (ok, error, dropped, ...).",
        )
        self._tokens = meter.create_counter(
            semconv.METRIC_JUDGE_TOKENS,
            unit="{token}",
            description="Tokens spent by LLM-judge evaluators, by token type.",
        )
        self._gauges: list[Callable[[], int]] = []
        self._lock = threading.Lock()
        meter.create_observable_gauge(
            semconv.METRIC_QUEUE_SIZE,
            callbacks=[self._observe_queue],
            unit="{turn}",
            description="Turns waiting in the background evaluation queue.",
        )

    def watch_queue(self, size: Callable[[], int]) -> None:
        """Report `size()` as the queue-size gauge at each collection."""
        with self._lock:
            self._gauges.append(size)

    def _observe_queue(self, _options: CallbackOptions) -> Iterable[Observation]:
        """The queue-size gauge callback: the sum of every watched queue."""
        with self._lock:
            gauges = list(self._gauges)
        total = 0
        for size in gauges:
            try:
                total += size()
            except Exception:  # a gauge must never break a collection
                continue
        return [Observation(total)]

    def record_score(self, score: Score, duration_s: float | None = None) -> None:
        """Count one finished evaluation with its value, duration, judge tokens and agreement.

        Outcome `ok` or `error`, or `skipped` for a judge that had no judge configured (label
        `skipped`, no value). The judge model, when the score names one, becomes
        `gen_ai.request.model` on every point.
        """
        name: dict[str, str] = {semconv.GEN_AI_EVALUATION_NAME: score.name}
        model = score.details.get(semconv.DETAIL_JUDGE_MODEL)
        if isinstance(model, str) and model:
            name[semconv.GEN_AI_REQUEST_MODEL] = model
        if is_skipped(score):
            outcome = semconv.OUTCOME_SKIPPED
        else:
            outcome = semconv.OUTCOME_OK if score.ok else semconv.OUTCOME_ERROR
        self._evaluations.add(1, {**name, semconv.GROUNDWIRE_OUTCOME: outcome})
        if score.value is not None and not math.isnan(score.value):
            attributes = dict(name)
            if score.label is not None:
                attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL] = score.label
            self._score.record(score.value, attributes)
        if duration_s is not None and outcome != semconv.OUTCOME_SKIPPED:
            self._duration.record(duration_s, name)
        agreement = score.details.get(semconv.DETAIL_JUDGE_AGREEMENT)
        if isinstance(agreement, int | float) and not isinstance(agreement, bool):
            self._record_agreement(float(agreement), name)
        for token_type, count in score.usage.items():
            if count > 0:
                self._tokens.add(count, {**name, semconv.GEN_AI_TOKEN_TYPE: token_type})

    def _record_agreement(self, agreement: float, attributes: dict[str, str]) -> None:
        """Record a judge agreement in [0, 1]; anything else is ignored."""
        if 0.0 <= agreement <= 1.0:
            self._agreement.record(agreement, attributes)

    def record_outcome(self, evaluator: str, outcome: str, count: int = 1) -> None:
        """Count evaluations that did not run: dropped, sampled_out or skipped."""
        if count > 0:
            self._evaluations.add(
                count,
                {semconv.GEN_AI_EVALUATION_NAME: evaluator, semconv.GROUNDWIRE_OUTCOME: outcome},
            )
