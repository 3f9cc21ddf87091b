"""Inline evaluation: scores written onto a turn's root span in the moment it ends.

The hook is the SDK's `SpanProcessor._on_ending(span)` (OpenTelemetry Python >= 1.36, the spec's
experimental `OnEnding`): it runs on the thread that ends the span, after the end time is set and
before any processor's `on_end` or exporter sees the span. The spec says the span is still
mutable there, but the Python SDK (through 1.45, opentelemetry-python#5614) marks it ended first,
so its public setters refuse. `write_scores` therefore uses the public setters when the span is
still recording (a fixed SDK) and otherwise appends to the span's own attribute and event
containers under the span's lock; if neither shape is present it returns False and the caller
sends the scores on an evaluation carrier span instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, Span
from opentelemetry.sdk.util import BoundedList

from groundwire import semconv
from groundwire._types import Score
from groundwire.emit import evaluation_attributes, score_event_attributes

__all__ = ["inline_supported", "next_evaluation_index", "write_scores"]

logger = logging.getLogger("groundwire.runner")

_INDEX = re.compile(rf"^{semconv.EVALUATIONS_PREFIX}\.(\d+)\.")


def inline_supported() -> bool:
    """True when this SDK calls `SpanProcessor._on_ending` (opentelemetry-sdk >= 1.36)."""
    from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor

    return callable(getattr(SynchronousMultiSpanProcessor, "_on_ending", None))


def next_evaluation_index(attributes: Any) -> int:
    """The first free `evaluations.{i}` index on a span that may already carry some."""
    highest = -1
    for key in attributes or ():
        match = _INDEX.match(key)
        if match:
            highest = max(highest, int(match.group(1)))
    return highest + 1


def write_scores(span: Span, scores: Sequence[Score], *, events: bool = True) -> bool:
    """Add `evaluations.{i}.*` attributes (and, when `events`, result span events) to an ending
    span; True if written."""
    if not scores:
        return True
    start = next_evaluation_index(span.attributes)
    attributes = evaluation_attributes(scores, start)
    if span.is_recording():
        span.set_attributes(attributes)
        for score in scores if events else ():
            span.add_event(semconv.GEN_AI_EVALUATION_RESULT_EVENT, score_event_attributes(score))
        return True
    return _write_ended(span, scores if events else (), attributes)


def _write_ended(span: Span, scores: Sequence[Score], attributes: dict[str, Any]) -> bool:
    """Append scores to an ended SDK span's own containers, under its lock."""
    lock = getattr(span, "_lock", None)
    span_attributes = getattr(span, "_attributes", None)
    events = getattr(span, "_events", None)
    limits = getattr(span, "_limits", None)
    if (
        lock is None
        or not isinstance(span_attributes, BoundedAttributes)
        or not isinstance(events, BoundedList)
    ):
        return False
    max_event_attributes = getattr(limits, "max_event_attributes", None)
    max_length = getattr(limits, "max_attribute_length", None)
    timestamp = span.end_time
    with lock:
        frozen = span_attributes._immutable
        span_attributes._immutable = False
        try:
            for key, value in attributes.items():
                span_attributes[key] = value
        finally:
            span_attributes._immutable = frozen
        for score in scores:
            event_attributes = BoundedAttributes(
                max_event_attributes,
                score_event_attributes(score),
                immutable=True,
                max_value_len=max_length,
            )
            events.append(
                Event(
                    semconv.GEN_AI_EVALUATION_RESULT_EVENT,
                    event_attributes,
                    timestamp=timestamp,
                )
            )
    return True
