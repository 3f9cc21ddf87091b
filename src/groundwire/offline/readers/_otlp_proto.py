"""OTLP protobuf files: a stream of `TracesData` / `ExportTraceServiceRequest` messages.

The three signals share one wire layout up to the records (field 1 of every `*Data` message is
its `resource_*` list), so a frame is told apart by what decodes cleanly: spans with ids of the
right length are traces; else log records without unknown fields are logs (`SpanBatch.logs`);
anything else that decodes (metrics, an empty message) is counted and skipped.

Two framings are read, told apart from the first bytes: the Collector file exporter's
(`format: proto`: each message preceded by its size as a 4-byte big-endian integer) and the
varint size prefix of protobuf's "delimited" streaming convention (what the OTLP file-exporter
specification asks for, and Java's `writeDelimitedTo`). Both messages share one wire layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import IO, Any, Final

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from groundwire.assembly import SpanRecord
from groundwire.assembly._log_record import LogRecordData
from groundwire.offline.readers._common import Problems, SpanBatch
from groundwire.offline.readers._otlp_logs import logs_from_message
from groundwire.offline.readers._source import SourceFile

__all__ = ["decode_message", "read_otlp_proto", "spans_from_message"]

_STATUS: Final = ("UNSET", "OK", "ERROR")
_HAS_IS_REMOTE: Final = 0x100
_IS_REMOTE: Final = 0x200
_MAX_MESSAGE: Final = 1 << 30
"""Larger sizes mean a corrupt prefix, not a real message."""
_RESOURCE_SPANS_TAG: Final = 0x0A


def _value(value: Any) -> Any:
    """A protobuf `AnyValue` as a Python value."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(pairs: Any) -> dict[str, Any]:
    """Protobuf `KeyValue`s as a dict."""
    return {pair.key: _value(pair.value) for pair in pairs}


def spans_from_message(message: Any) -> list[SpanRecord]:
    """The spans of one decoded `TracesData` / `ExportTraceServiceRequest`."""
    records: list[SpanRecord] = []
    for group in message.resource_spans:
        resource = MappingProxyType(_attributes(group.resource.attributes))
        for scope_spans in group.scope_spans:
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
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
                        attributes=MappingProxyType(_attributes(span.attributes)),
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


def _clean(records: Iterator[Any]) -> bool:
    """True when every record decoded without unknown fields (nested messages included).

    The signals' wire layouts overlap, so a metrics message decodes as `LogsData` too, but its
    metrics leave unknown fields in the "log records" (a metric's name is field 1, a log's time
    is a fixed64 there); a real record of the right signal leaves none.
    """
    from google.protobuf.unknown_fields import UnknownFieldSet  # type: ignore[import-untyped]

    def clean(message: Any) -> bool:
        if len(UnknownFieldSet(message)):
            return False
        for field, value in message.ListFields():
            nested = value if field.is_repeated else (value,)
            if field.message_type is not None and not all(map(clean, nested)):
                return False
        return True

    found = False
    for record in records:
        found = True
        if not clean(record):
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


def decode_message(body: bytes) -> tuple[list[SpanRecord], list[LogRecordData]]:
    """The spans or log records of one framed message: ([], []) for metrics or an empty one.

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
                return spans, []
            return [], []
    for message_type, records in ((LogsData, _log_records), (MetricsData, _metrics)):
        try:
            message = message_type.FromString(body)
        except DecodeError:
            continue
        if _clean(records(message)):
            return ([], logs_from_message(message)) if message_type is LogsData else ([], [])
    raise ValueError(problem)


def _read_varint(stream: IO[bytes]) -> int | None:
    """A base-128 varint, None at a clean end of file; ValueError when cut short."""
    result = shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            if shift == 0:
                return None
            raise ValueError("file ends inside a size prefix")
        result |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return result
        shift += 7
        if shift > 63:
            raise ValueError("size prefix is not a valid varint")


def _framing(head: bytes) -> str:
    """`fixed32` (Collector) or `varint` (delimited), guessed from the first bytes."""
    # A 4-byte size below 16 MiB starts with a zero byte; a varint size of an empty message is
    # the only varint that does, and nobody writes those.
    if len(head) >= 5 and head[0] == 0 and head[4] == _RESOURCE_SPANS_TAG:
        return "fixed32"
    return "varint"


def read_otlp_proto(source: SourceFile, problems: Problems) -> Iterator[SpanBatch]:
    """Yield the spans of each message in an OTLP protobuf file; a bad message is reported."""
    stats = problems.stats
    stream = source.stream
    head = stream.peek(5)[:5] if hasattr(stream, "peek") else b""
    framing = _framing(head)
    offset = 0
    number = 0
    while True:
        number += 1
        where = f"{source.path}@{offset} (message {number})"
        try:
            if framing == "fixed32":
                prefix = stream.read(4)
                if not prefix:
                    return
                if len(prefix) < 4:
                    raise ValueError("file ends inside a size prefix")
                size: int | None = int.from_bytes(prefix, "big")
                header = 4
            else:
                size = _read_varint(stream)
                if size is None:
                    return
                header = len(_encode_varint(size))
            if size is None or size > _MAX_MESSAGE:
                raise ValueError(f"message size {size} is not plausible: the file is corrupt")
            body = stream.read(size)
            if len(body) < size:
                raise ValueError(f"file ends inside a message ({len(body)} of {size} bytes)")
        except ValueError as error:
            if source.damage is not None:
                return  # a message cut by the damage, reported once by `read_file`
            stats.records += 1
            problems.report(where, f"{error}; the rest of the file cannot be framed")
            return
        offset += header + size
        stats.records += 1
        stats.file_position = source.position
        try:
            records, logs = decode_message(body)
        except ValueError as error:
            problems.report(where, f"not a valid OTLP traces, logs or metrics message: {error}")
            continue
        if logs:
            stats.other_records += 1
            stats.log_records += len(logs)
            yield SpanBatch([], where, logs)
            continue
        if not records:
            stats.other_records += 1
            continue
        stats.spans += len(records)
        yield SpanBatch(records, where)


def _encode_varint(value: int) -> bytes:
    """`value` as a base-128 varint (to know how many bytes its prefix took)."""
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
