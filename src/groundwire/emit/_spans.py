"""Evaluation carrier spans: results computed after the evaluated span ended.

Ended spans are immutable, so later results travel on a span of kind EVALUATOR that is a child of
the evaluated span (same trace: Jaeger draws it under the request) and carries exactly one link to
it (how OpenInference finds the target). The target is given as hex ids, never a live span, so the
offline re-scorer can attach scores to traces recorded days ago.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence

from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    Tracer,
)

from groundwire import semconv
from groundwire._types import Score
from groundwire.emit._attributes import (
    Attributes,
    evaluation_attributes,
    score_event_attributes,
)

__all__ = ["SpanTarget", "emit_evaluation_span", "target_context"]

SpanTarget = tuple[str, str]
"""(trace_id, span_id) of the evaluated span: 32 and 16 lower-case hex digits."""

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
_SPAN_ID = re.compile(r"^[0-9a-f]{16}$")


def target_context(target: SpanTarget) -> SpanContext:
    """The SpanContext of an evaluated span named by hex ids; errors name the bad id."""
    trace_id, span_id = target
    if not isinstance(trace_id, str) or not _TRACE_ID.match(trace_id) or set(trace_id) == {"0"}:
        raise ValueError(f"target trace_id must be 32 lower-case hex digits, got {trace_id!r}")
    if not isinstance(span_id, str) or not _SPAN_ID.match(span_id) or set(span_id) == {"0"}:
        raise ValueError(f"target span_id must be 16 lower-case hex digits, got {span_id!r}")
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def emit_evaluation_span(
    tracer: Tracer,
    target: SpanTarget,
    scores: Sequence[Score],
    *,
    mode: str = "background",
    attributes: Mapping[str, str | bool | int | float] | None = None,
    start_time_ns: int | None = None,
    events: bool = True,
    versions: Mapping[str, str] | None = None,
) -> SpanContext:
    """Record one EVALUATOR span under `target`, with one result event per score when `events`
    (the `evaluations.{i}.*` attributes are always there; `versions` are the evaluators'
    versions by name); returns its context."""
    parent = target_context(target)
    span_attributes: Attributes = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_EVALUATOR,
        semconv.GROUNDWIRE_EVALUATION_MODE: mode,
    }
    if attributes:
        span_attributes.update(attributes)
    span_attributes.update(evaluation_attributes(scores))
    span = tracer.start_span(
        semconv.EVALUATION_SPAN_NAME,
        context=trace.set_span_in_context(NonRecordingSpan(parent)),
        kind=SpanKind.INTERNAL,
        attributes=span_attributes,
        links=[Link(parent)],
        start_time=start_time_ns,
    )
    now = time.time_ns()
    for score in scores if events else ():
        version = (versions or {}).get(score.name)
        span.add_event(
            semconv.GEN_AI_EVALUATION_RESULT_EVENT,
            score_event_attributes(score, version),
            timestamp=now,
        )
    if any(not score.ok for score in scores):
        span.set_status(trace.StatusCode.ERROR, "an evaluator failed")
    span.end()
    return span.get_span_context()
