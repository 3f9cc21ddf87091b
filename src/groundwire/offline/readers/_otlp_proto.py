"""OTLP protobuf files: a stream of `TracesData` / `ExportTraceServiceRequest` messages.

The three signals share one wire layout up to the records (field 1 of every `*Data` message is
its `resource_*` list), so a frame is told apart by what decodes cleanly: spans with ids of the
right length are traces; else log records without unknown fields are logs (`SpanBatch.logs`);
anything else that decodes (metrics, an empty message) is counted and skipped.

Two framings are read (see `_frames`): the Collector file exporter's 4-byte big-endian size
prefix and the varint prefix of protobuf's delimited convention. The framing is found from the
first whole messages, and found again after damage, so a first message cut by log rotation or a
corrupt stretch costs only the bytes it spans, each reported with its byte offset.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Any, Final, Literal, NamedTuple

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from groundwire._otlp_any import proto_attributes, scoped_records
from groundwire.assembly import LogRecordData, SpanRecord
from groundwire.offline.readers._common import Problems, SpanBatch
from groundwire.offline.readers._frames import Cut, Gap, frames
from groundwire.offline.readers._otlp_logs import logs_from_message
from groundwire.offline.readers._source import SourceFile

__all__ = ["Decoded", "decode_message", "read_otlp_proto", "spans_from_message"]

_STATUS: Final = ("UNSET", "OK", "ERROR")
_HAS_IS_REMOTE: Final = 0x100
_IS_REMOTE: Final = 0x200


def spans_from_message(message: Any) -> list[SpanRecord]:
    """The spans of one decoded `TracesData` / `ExportTraceServiceRequest`."""
    records: list[SpanRecord] = []
    for resource, scope, span in scoped_records(message.resource_spans, "scope_spans", "spans"):
        code = span.status.code
        flags = span.flags
        records.append(
            SpanRecord(
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex() or None,
                name=span.name,
                start_time_ns=span.start_time_unix_nano,
                end_time_ns=span.end_time_unix_nano or None,
                attributes=MappingProxyType(proto_attributes(span.attributes)),
                status_code=_STATUS[code] if 0 <= code < len(_STATUS) else "UNSET",
                resource=resource,
                parent_is_remote=bool(flags & _HAS_IS_REMOTE and flags & _IS_REMOTE),
                instrumentation_scope=scope,
            )
        )
    return records


def _check_ids(message: Any) -> str | None:
    """Why the spans of a decoded `TracesData` are not real spans (wrong id sizes), or None."""
    for group in message.resource_spans:
        for scope_spans in group.scope_spans:
            for index, span in enumerate(scope_spans.spans):
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    return (
                        f"span {index} has a {len(span.trace_id)}-byte trace_id and a "
                        f"{len(span.span_id)}-byte span_id (expected 16 and 8)"
                    )
                if len(span.parent_span_id) not in (0, 8):
                    return f"span {index} has a {len(span.parent_span_id)}-byte parent_span_id"
    return None


def _clean_message(message: Any) -> bool:
    """True when `message` decoded without unknown fields, nested messages included."""
    from google.protobuf.unknown_fields import UnknownFieldSet  # type: ignore[import-untyped]

    if len(UnknownFieldSet(message)):
        return False
    for field, value in message.ListFields():
        nested = value if field.is_repeated else (value,)
        if field.message_type is not None and not all(map(_clean_message, nested)):
            return False
    return True


def _clean(records: Iterator[Any]) -> bool:
    """True when there are records and every one decoded without unknown fields.

    The signals' wire layouts overlap, so a metrics message decodes as `LogsData` too, but its
    metrics leave unknown fields in the "log records" (a metric's name is field 1, a log's time
    is a fixed64 there); a real record of the right signal leaves none.
    """
    found = False
    for record in records:
        found = True
        if not _clean_message(record):
            return False
    return found


def _log_records(message: Any) -> Iterator[Any]:
    """Every log record of a decoded `LogsData`."""
    for group in message.resource_logs:
        for scope_logs in group.scope_logs:
            yield from scope_logs.log_records


def _metrics(message: Any) -> Iterator[Any]:
    """Every metric of a decoded `MetricsData`."""
    for group in message.resource_metrics:
        for scope_metrics in group.scope_metrics:
            yield from scope_metrics.metrics


class Decoded(NamedTuple):
    """What one framed message holds."""

    spans: list[SpanRecord]
    logs: list[LogRecordData]
    signal: Literal["traces", "logs", "metrics"] | None
    """None for a message with no records at all."""


def decode_message(body: bytes) -> Decoded:
    """The spans or log records of one framed message (none for metrics or an empty message).

    Raises ValueError when the bytes are none of the three signals.
    """
    from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    try:
        traces = TracesData.FromString(body)
    except DecodeError as error:
        problem: str | None = f"not valid protobuf ({error})"
    else:
        problem = _check_ids(traces)
        if problem is None:
            spans = spans_from_message(traces)
            if spans:
                return Decoded(spans, [], "traces")
            if _clean_message(traces):
                return Decoded([], [], None)
            problem = "no spans, and fields this OTLP version does not know (damaged?)"
    logs_message = _parsed(LogsData, body)
    if logs_message is not None and _clean(_log_records(logs_message)):
        return Decoded([], logs_from_message(logs_message), "logs")
    metrics_message = _parsed(MetricsData, body)
    if metrics_message is not None and _clean(_metrics(metrics_message)):
        return Decoded([], [], "metrics")
    raise ValueError(problem)


def _parsed(message_type: Any, body: bytes) -> Any:
    """`body` parsed as `message_type` (a generated protobuf class), or None when it is not one."""
    try:
        return message_type.FromString(body)
    except DecodeError:
        return None


def _has_records(decoded: Decoded) -> bool:
    """True when a decoded message holds spans, log records or metrics (not an empty one)."""
    return decoded.signal is not None


def read_otlp_proto(source: SourceFile, problems: Problems) -> Iterator[SpanBatch]:
    """Yield the spans (or log records) of each message in an OTLP protobuf file.

    A message that does not decode, bytes skipped to find the framing again (a first message cut
    by log rotation, garbage) and a cut last message are each reported with their byte offset.
    """
    stats = problems.stats
    items = frames(source.stream, decode_message, _has_records, problems.max_record_bytes)
    for item in items:
        stats.records += 1
        stats.file_position = source.position
        where = f"{source.path}@{item.offset} (message {item.number})"
        if isinstance(item, Cut):
            if source.damage is None:  # else the damage is reported once by `read_file`
                problems.report(where, item.reason)
            else:
                stats.records -= 1
            return
        if isinstance(item, Gap):
            if source.damage is not None and item.to_end:
                stats.records -= 1  # the stretch cut by the damage, reported once by `read_file`
                return
            problems.report(where, f"{item.size:,} bytes: {item.reason}")
            continue
        decoded = item.value
        if decoded.logs:
            stats.other_records += 1
            stats.log_records += len(decoded.logs)
            yield SpanBatch([], where, decoded.logs)
            continue
        if not decoded.spans:
            stats.other_records += 1
            continue
        stats.spans += len(decoded.spans)
        yield SpanBatch(decoded.spans, where)
