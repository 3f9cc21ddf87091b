"""`SpanRecord`: the one normalised span shape every source converts to before assembly.

The live SDK (`SpanRecord.from_readable`), OTLP/JSON, OTLP protobuf and Jaeger readers all produce
these, so the assembler reads one shape whatever the spans came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["STATUS_CODES", "SpanAttributes", "SpanRecord"]

SpanAttributes = Mapping[str, Any]
"""Span attributes: OTel scalars, homogeneous tuples of scalars, or (newer OTel) structured values
(mappings and sequences), which the assembler accepts wherever it accepts a JSON string."""

STATUS_CODES: Final = frozenset({"UNSET", "OK", "ERROR"})
"""The span status codes, by their OTel names."""

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_EMPTY: Mapping[str, Any] = MappingProxyType({})
_last_resource: tuple[object, Mapping[str, Any]] = (None, _EMPTY)


def _resource_attributes(resource: Any) -> Mapping[str, Any]:
    """A read-only copy of a resource's attributes, reused while spans share one resource."""
    global _last_resource
    cached_for, attributes = _last_resource
    if cached_for is not resource:
        attributes = MappingProxyType(dict(resource.attributes)) if resource is not None else _EMPTY
        _last_resource = (resource, attributes)
    return attributes


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span, normalised: hex ids, nanosecond times, read-only attributes and resource.

    `end_time_ns` is None while the span is still open. Equality compares every field; the hash is
    the `(trace_id, span_id)` pair.
    """

    trace_id: str
    """32 lower-case hex digits."""
    span_id: str
    """16 lower-case hex digits."""
    parent_span_id: str | None
    """The parent's span id, or None for a trace's root."""
    name: str
    start_time_ns: int
    end_time_ns: int | None
    """None while the span is still open."""
    attributes: SpanAttributes = field(default_factory=dict)
    status_code: str = "UNSET"
    """`UNSET`, `OK` or `ERROR`."""
    resource: SpanAttributes = field(default_factory=dict)
    """Resource attributes (`service.name`, ...)."""
    parent_is_remote: bool = False
    """True when the parent span lives in another process: this span is its process's root."""
    instrumentation_scope: str | None = None
    """The name of the tracer that made the span, e.g. `openinference.instrumentation.langchain`."""

    def __post_init__(self) -> None:
        """Validate every field, naming the one that is wrong."""
        if not isinstance(self.trace_id, str) or not _TRACE_ID.fullmatch(self.trace_id):
            raise ValueError(
                f"SpanRecord.trace_id must be 32 lower-case hex digits, got {self.trace_id!r}"
            )
        if not isinstance(self.span_id, str) or not _SPAN_ID.fullmatch(self.span_id):
            raise ValueError(
                f"SpanRecord.span_id must be 16 lower-case hex digits, got {self.span_id!r}"
            )
        parent = self.parent_span_id
        if parent is not None and (not isinstance(parent, str) or not _SPAN_ID.fullmatch(parent)):
            raise ValueError(
                f"SpanRecord.parent_span_id must be 16 lower-case hex digits or None, "
                f"got {parent!r}"
            )
        if self.status_code not in STATUS_CODES:
            raise ValueError(
                f"SpanRecord.status_code must be one of {sorted(STATUS_CODES)}, "
                f"got {self.status_code!r}"
            )
        if isinstance(self.start_time_ns, bool) or not isinstance(self.start_time_ns, int):
            raise TypeError(f"SpanRecord.start_time_ns must be an int, got {self.start_time_ns!r}")
        end = self.end_time_ns
        if end is not None and (isinstance(end, bool) or not isinstance(end, int)):
            raise TypeError(f"SpanRecord.end_time_ns must be an int or None, got {end!r}")
        if not isinstance(self.attributes, Mapping):
            raise TypeError(f"SpanRecord.attributes must be a mapping, got {self.attributes!r}")
        if not isinstance(self.resource, Mapping):
            raise TypeError(f"SpanRecord.resource must be a mapping, got {self.resource!r}")

    def __hash__(self) -> int:
        """Hash by identity in the trace: `(trace_id, span_id)`."""
        return hash((self.trace_id, self.span_id))

    @property
    def key(self) -> tuple[int, int]:
        """`(trace_id, span_id)` as the SDK's integers: the `LiveContentStore` key."""
        return int(self.trace_id, 16), int(self.span_id, 16)

    @property
    def is_open(self) -> bool:
        """True while the span has not ended."""
        return self.end_time_ns is None

    @property
    def is_local_root(self) -> bool:
        """True for the outermost span this process recorded in its trace."""
        return self.parent_span_id is None or self.parent_is_remote

    @classmethod
    def from_readable(cls, span: ReadableSpan) -> SpanRecord:
        """Normalise an SDK span, ended or still open (e.g. inside `SpanProcessor.on_ending`)."""
        context = span.context
        if context is None:
            raise ValueError(f"span {span.name!r} has no span context")
        parent = span.parent
        parent_id = parent.span_id if parent is not None and parent.span_id else None
        scope = span.instrumentation_scope
        # The SDK's values are valid by construction: skip `__post_init__` (this runs for every
        # span of a live app, on its thread).
        record = object.__new__(cls)
        for name, value in (
            ("trace_id", format(context.trace_id, "032x")),
            ("span_id", format(context.span_id, "016x")),
            ("parent_span_id", format(parent_id, "016x") if parent_id else None),
            ("name", span.name),
            ("start_time_ns", span.start_time or 0),
            ("end_time_ns", span.end_time),
            ("attributes", MappingProxyType(dict(span.attributes or {}))),
            ("status_code", span.status.status_code.name),
            ("resource", _resource_attributes(span.resource)),
            ("parent_is_remote", bool(parent is not None and parent_id and parent.is_remote)),
            ("instrumentation_scope", scope.name if scope is not None else None),
        ):
            object.__setattr__(record, name, value)
        return record
