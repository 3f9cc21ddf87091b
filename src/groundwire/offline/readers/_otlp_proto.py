"""OTLP protobuf files: a stream of `TracesData` / `ExportTraceServiceRequest` messages.

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
from groundwire.offline.readers._common import Problems, SpanBatch
from groundwire.offline.readers._source import SourceFile

__all__ = ["read_otlp_proto", "spans_from_message"]

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
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

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
            stats.records += 1
            problems.report(where, f"{error}; the rest of the file cannot be framed")
            return
        offset += header + size
        stats.records += 1
        stats.file_position = source.position
        try:
            message = TracesData.FromString(body)
            records = spans_from_message(message)
        except (DecodeError, ValueError) as error:
            problems.report(where, f"not a valid OTLP TracesData message: {error}")
            continue
        if not records and body:
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
