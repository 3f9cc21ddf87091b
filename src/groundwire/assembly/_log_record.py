"""`LogRecordData`: one OTel log record (a log-based event) read from a trace file or OTLP.

Since OTEP 4430 events travel as log records correlated to a span by trace and span id (e.g.
`gen_ai.evaluation.result`, or GenAI message content when an instrumentation logs it apart from
the span). Readers normalise them to this shape, as they normalise spans to `SpanRecord`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LogRecordData"]


@dataclass(frozen=True, slots=True)
class LogRecordData:
    """One log record: the event name, the span it belongs to, attributes and body."""

    event_name: str | None
    """`eventName` (OTLP 1.5+), else the `event.name` attribute, else None for a plain log."""
    trace_id: str | None
    """32 lower-case hex digits, or None when the record is not correlated to a trace."""
    span_id: str | None
    """16 lower-case hex digits, or None."""
    time_ns: int
    """`timeUnixNano`, else `observedTimeUnixNano`, else 0."""
    severity_number: int = 0
    severity_text: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    """The decoded AnyValue: str, number, bool, list, dict or None."""
    resource: Mapping[str, Any] = field(default_factory=dict)
    instrumentation_scope: str | None = None
