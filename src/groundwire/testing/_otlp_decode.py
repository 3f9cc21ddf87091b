"""OTLP export requests decoded into plain frozen records (hex ids, Python attribute values).

What the test receivers (`_otlp_http`, `_otlp_grpc`) keep of each request: `decode_spans`,
`decode_metric_points` and `decode_log_records` turn an `Export*ServiceRequest` into
`ReceivedSpan`, `ReceivedMetricPoint` and `ReceivedLogRecord` records to assert on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from groundwire._otlp_any import proto_attributes, proto_value

__all__ = [
    "ReceivedEvent",
    "ReceivedLink",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedSpan",
    "decode_log_records",
    "decode_metric_points",
    "decode_spans",
]


def _hex(raw: bytes) -> str | None:
    """Bytes as hex, or None when empty."""
    return raw.hex() if raw else None


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """A span event as received."""

    name: str
    attributes: Mapping[str, Any]
    time_unix_nano: int


@dataclass(frozen=True, slots=True)
class ReceivedLink:
    """A span link as received (hex ids)."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """A span as received: hex ids, decoded attributes, its resource and scope."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: Mapping[str, Any]
    events: tuple[ReceivedEvent, ...]
    links: tuple[ReceivedLink, ...]
    status_code: int
    resource: Mapping[str, Any]
    scope: str


@dataclass(frozen=True, slots=True)
class ReceivedMetricPoint:
    """One data point of a received metric; histogram fields are empty for sums and gauges."""

    name: str
    unit: str
    kind: str
    """`sum`, `gauge` or `histogram`."""
    attributes: Mapping[str, Any]
    value: float | None
    count: int | None
    sum: float | None
    bucket_counts: tuple[int, ...]
    explicit_bounds: tuple[float, ...]
    resource: Mapping[str, Any]
    scope: str


@dataclass(frozen=True, slots=True)
class ReceivedLogRecord:
    """A log record (a log-based event when `event_name` is set) as received: hex ids."""

    event_name: str
    """OTLP `event_name`; empty for a plain log."""
    trace_id: str | None
    span_id: str | None
    severity_number: int
    severity_text: str
    attributes: Mapping[str, Any]
    body: Any
    """The decoded AnyValue (None when absent)."""
    time_unix_nano: int
    resource: Mapping[str, Any]
    scope: str


def _link(link: Any) -> ReceivedLink:
    """A decoded span link."""
    return ReceivedLink(link.trace_id.hex(), link.span_id.hex(), proto_attributes(link.attributes))


def _scoped(groups: Iterable[Any], scopes: str, items: str) -> Iterator[tuple[Any, str, Any]]:
    """(resource attributes, scope name, item) of each item in a request's resource groups
    (`resource_spans`, ...), through their scope groups; one resource dict per group."""
    for group in groups:
        resource = proto_attributes(group.resource.attributes)
        for scoped in getattr(group, scopes):
            for item in getattr(scoped, items):
                yield resource, scoped.scope.name, item


def decode_spans(request: Any) -> list[ReceivedSpan]:
    """The spans of an `ExportTraceServiceRequest`."""
    return [
        ReceivedSpan(
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_span_id=_hex(span.parent_span_id),
            name=span.name,
            kind=span.kind,
            start_time_unix_nano=span.start_time_unix_nano,
            end_time_unix_nano=span.end_time_unix_nano,
            attributes=proto_attributes(span.attributes),
            events=tuple(
                ReceivedEvent(e.name, proto_attributes(e.attributes), e.time_unix_nano)
                for e in span.events
            ),
            links=tuple(_link(link) for link in span.links),
            status_code=span.status.code,
            resource=resource,
            scope=scope,
        )
        for resource, scope, span in _scoped(request.resource_spans, "scope_spans", "spans")
    ]


def decode_log_records(request: Any) -> list[ReceivedLogRecord]:
    """The log records of an `ExportLogsServiceRequest`."""
    return [
        ReceivedLogRecord(
            event_name=record.event_name,
            trace_id=_hex(record.trace_id),
            span_id=_hex(record.span_id),
            severity_number=record.severity_number,
            severity_text=record.severity_text,
            attributes=proto_attributes(record.attributes),
            body=proto_value(record.body) if record.HasField("body") else None,
            time_unix_nano=record.time_unix_nano,
            resource=resource,
            scope=scope,
        )
        for resource, scope, record in _scoped(request.resource_logs, "scope_logs", "log_records")
    ]


def _number(point: Any) -> float | None:
    """A number data point's value, int or double."""
    kind = point.WhichOneof("value")
    return None if kind is None else float(getattr(point, kind))


def decode_metric_points(request: Any) -> list[ReceivedMetricPoint]:
    """The data points of an `ExportMetricsServiceRequest`."""
    points: list[ReceivedMetricPoint] = []
    for resource, scope, metric in _scoped(request.resource_metrics, "scope_metrics", "metrics"):
        kind = metric.WhichOneof("data")
        common = {"name": metric.name, "unit": metric.unit, "resource": resource, "scope": scope}
        if kind in ("sum", "gauge"):
            for point in getattr(metric, kind).data_points:
                points.append(
                    ReceivedMetricPoint(
                        kind=kind,
                        attributes=proto_attributes(point.attributes),
                        value=_number(point),
                        count=None,
                        sum=None,
                        bucket_counts=(),
                        explicit_bounds=(),
                        **common,
                    )
                )
        elif kind == "histogram":
            for point in metric.histogram.data_points:
                points.append(
                    ReceivedMetricPoint(
                        kind=kind,
                        attributes=proto_attributes(point.attributes),
                        value=None,
                        count=point.count,
                        sum=point.sum,
                        bucket_counts=tuple(point.bucket_counts),
                        explicit_bounds=tuple(point.explicit_bounds),
                        **common,
                    )
                )
    return points
