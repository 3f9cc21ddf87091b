"""Scores to telemetry: `gen_ai.evaluation.result` events (log records and/or span events),
OpenInference `evaluations.{i}.*` attributes, evaluation carrier spans and metric instruments
(names in `groundwire.semconv`).
"""

from __future__ import annotations

from groundwire.emit._attributes import (
    Attributes,
    error_type,
    evaluation_attributes,
    provenance,
    score_event_attributes,
)
from groundwire.emit._emitter import Emitter
from groundwire.emit._logs import (
    DEFAULT_EVENTS,
    ResultLogger,
    content_capture_enabled,
    evaluator_version,
    evaluator_versions,
    registered_version,
    resolve_events,
)
from groundwire.emit._metrics import EvaluationMetrics, is_skipped, metric_views
from groundwire.emit._spans import SpanTarget, emit_evaluation_span, target_context

__all__ = [
    "DEFAULT_EVENTS",
    "Attributes",
    "Emitter",
    "EvaluationMetrics",
    "ResultLogger",
    "SpanTarget",
    "content_capture_enabled",
    "emit_evaluation_span",
    "error_type",
    "evaluation_attributes",
    "evaluator_version",
    "evaluator_versions",
    "is_skipped",
    "metric_views",
    "provenance",
    "registered_version",
    "resolve_events",
    "score_event_attributes",
    "target_context",
]
