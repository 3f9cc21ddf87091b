"""OTLP/JSON lines: one `ExportTraceServiceRequest` (or `TracesData`) per line.

The layout the OpenTelemetry Collector's file exporter and groundwire's own `JsonLinesSpanExporter`
write. Parsed straight from the decoded JSON (no protobuf round trip: several times faster), with
the protobuf JSON mapping's leniencies: lowerCamelCase or snake_case keys, 64-bit integers as
strings or numbers, enums as integers or names, hex ids (OTLP/JSON) or base64 ids (plain protobuf
JSON). Lines holding logs (`resourceLogs`) give `SpanBatch.logs`; lines holding metrics are
counted and skipped; blank lines are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

from groundwire.assembly import SpanRecord
from groundwire.offline.readers._common import (
    MALFORMED,
    Problems,
    SpanBatch,
    checked_span,
    span_id_hex,
    trace_id_hex,
)
from groundwire.offline.readers._json import json_loads
from groundwire.offline.readers._otlp_logs import logs_from_request
from groundwire.offline.readers._otlp_values import any_value, attributes, get, nanos
from groundwire.offline.readers._source import SourceFile

__all__ = ["any_value", "attributes", "read_otlp_json", "spans_from_request"]

_STATUS: Final = {
    0: "UNSET",
    1: "OK",
    2: "ERROR",
    "STATUS_CODE_UNSET": "UNSET",
    "STATUS_CODE_OK": "OK",
    "STATUS_CODE_ERROR": "ERROR",
}
_HAS_IS_REMOTE: Final = 0x100
_IS_REMOTE: Final = 0x200
_OTHER_SIGNALS: Final = ("resourceMetrics", "resource_metrics", "resourceLogs", "resource_logs")


def _span(span: Mapping[str, Any], resource: Mapping[str, Any], scope: str | None) -> SpanRecord:
    """One OTLP/JSON span as a SpanRecord; errors say which field is wrong."""
    # `get(node, camel, snake)` spelled out: this runs for every span read
    parent = span.get("parentSpanId")
    if parent is None:
        parent = span.get("parent_span_id")
    trace_id = span.get("traceId")
    if trace_id is None:
        trace_id = span.get("trace_id")
    span_id = span.get("spanId")
    if span_id is None:
        span_id = span.get("span_id")
    status = span.get("status") or {}
    code = status.get("code", 0)
    status_code = _STATUS.get(code)
    if status_code is None:
        raise ValueError(f"unknown status code {code!r}")
    flags = int(span.get("flags") or 0)
    end = get(span, "endTimeUnixNano", "end_time_unix_nano")
    # Each field is checked (or built) here, so the record skips `SpanRecord`'s own checks.
    return checked_span(
        trace_id_hex(trace_id),
        span_id_hex(span_id),
        span_id_hex(parent, "parentSpanId") if parent else None,
        str(span.get("name", "")),
        nanos(get(span, "startTimeUnixNano", "start_time_unix_nano"), "start"),
        None if end is None else nanos(end, "endTimeUnixNano"),
        MappingProxyType(attributes(span.get("attributes"))),
        status_code,
        resource,
        bool(flags & _HAS_IS_REMOTE and flags & _IS_REMOTE),
        scope,
    )


_GROUP_KEYS: Final = frozenset(
    {
        "resource",
        "scopeSpans",
        "scope_spans",
        "instrumentationLibrarySpans",
        "instrumentation_library_spans",
        "schemaUrl",
        "schema_url",
    }
)
_SCOPE_KEYS: Final = frozenset(
    {"scope", "instrumentationLibrary", "instrumentation_library", "spans", "schemaUrl"}
    | {"schema_url"}
)


def _no_unknown_keys(node: Mapping[str, Any], known: frozenset[str], where: str) -> None:
    """ValueError when a node that holds no spans has keys OTLP does not define (a damaged key
    would otherwise hide its spans silently); unknown keys beside spans are ignored, as the
    protobuf JSON mapping says."""
    unknown = sorted(str(key) for key in node if key not in known)
    if unknown:
        raise ValueError(f"{where} holds no spans but unknown keys {unknown}")


def spans_from_request(data: Any) -> list[SpanRecord] | None:
    """The spans of one decoded OTLP/JSON traces request; None for a metrics or logs request.

    Raises ValueError (naming the offending span) when it is not a valid traces request.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    resource_spans = get(data, "resourceSpans", "resource_spans")
    if resource_spans is None:
        if any(key in data for key in _OTHER_SIGNALS):
            return None
        raise ValueError("not an OTLP traces request: no 'resourceSpans' key")
    if not isinstance(resource_spans, list):
        raise ValueError("'resourceSpans' must be a list")
    records: list[SpanRecord] = []
    for r_index, group in enumerate(resource_spans):
        resource = MappingProxyType(attributes((group.get("resource") or {}).get("attributes")))
        scopes = (
            get(group, "scopeSpans", "scope_spans")
            or get(group, "instrumentationLibrarySpans", "instrumentation_library_spans")
            or []
        )
        if not scopes:
            _no_unknown_keys(group, _GROUP_KEYS, f"resourceSpans[{r_index}]")
        for s_index, scope_spans in enumerate(scopes):
            scope = scope_spans.get("scope") or scope_spans.get("instrumentationLibrary") or {}
            scope_name = scope.get("name") or None
            if not scope_spans.get("spans"):
                where = f"resourceSpans[{r_index}].scopeSpans[{s_index}]"
                _no_unknown_keys(scope_spans, _SCOPE_KEYS, where)
            for index, span in enumerate(scope_spans.get("spans") or ()):
                try:
                    records.append(_span(span, resource, scope_name))
                except MALFORMED as error:
                    raise ValueError(
                        f"resourceSpans[{r_index}].scopeSpans[{s_index}].spans[{index}]: {error}"
                    ) from None
    return records


def _lines(source: SourceFile, limit: int) -> Iterator[bytes | None]:
    """The file's lines; None in place of a line longer than `limit` (read past, never held)."""
    readline = source.stream.readline
    while True:
        line = readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = readline(1 << 20)
            yield None
            continue
        yield line


def read_otlp_json(source: SourceFile, problems: Problems) -> Iterator[SpanBatch]:
    """Yield the spans (or log records) of each line of an OTLP/JSON-lines file.

    Bad lines go to `problems`; metrics lines are counted in `other_records` and skipped.
    """
    stats = problems.stats
    limit = problems.max_record_bytes
    for number, line in enumerate(_lines(source, limit), start=1):
        stats.file_position = source.position
        if line is None:
            stats.records += 1
            problems.report(
                f"{source.path}:{number}", f"line longer than {limit:,} bytes (the record limit)"
            )
            continue
        if line[:1] == b"\0":
            line = line.lstrip(b"\0")  # what `copytruncate` log rotation leaves before a record
        if not line.strip():
            continue
        if source.damage is not None and not line.endswith(b"\n"):
            return  # the cut last line is part of the damage, reported once by `read_file`
        stats.records += 1
        where = f"{source.path}:{number}"
        signal = "traces"
        try:
            data = json_loads(line)
            records = spans_from_request(data)
            signal = "logs"
            logs = logs_from_request(data) if records is None else None
        except json.JSONDecodeError as error:
            problems.report(where, f"not valid JSON ({error.msg} at column {error.colno})")
            continue
        except MALFORMED as error:
            problems.report(where, f"not a valid OTLP/JSON {signal} request: {error}")
            continue
        except RecursionError:
            problems.report(where, "JSON nested too deeply")
            continue
        if records is None:
            stats.other_records += 1
            if logs:
                stats.log_records += len(logs)
                yield SpanBatch([], where, logs)
            continue
        stats.spans += len(records)
        yield SpanBatch(records, where)
