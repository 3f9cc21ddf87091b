"""Jaeger JSON: the query API's `/api/traces` response and the UI's "Download JSON" file.

Both are `{"data": [trace, ...], ...}`; a bare trace object and a top-level list of traces are
accepted too. Traces are decoded one at a time from the `data` array as the file streams in, so
memory holds one trace, not the file. A Jaeger trace is `{traceID, spans, processes}`; each span
has `spanID`, `operationName`, `references` (`CHILD_OF` gives the parent), `startTime` and
`duration` in microseconds, typed `tags`, and a `processID` whose process gives the service name
and resource tags. OpenTelemetry's Jaeger mapping is reversed: `otel.status_code`/`error` give the
status, `otel.scope.name` (or `otel.library.name`) the instrumentation scope.
"""

from __future__ import annotations

import base64
import codecs
import json
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

from groundwire.assembly import SpanRecord
from groundwire.offline.readers._common import (
    MALFORMED,
    Problems,
    SpanBatch,
    span_id_hex,
    trace_id_hex,
)
from groundwire.offline.readers._source import SourceFile

__all__ = ["read_jaeger", "spans_from_jaeger_trace"]

_CHUNK: Final = 1 << 20
_DATA_ARRAY: Final = re.compile(r'"data"\s*:\s*\[')
_WHITESPACE: Final = re.compile(r"[\s,]*")
_FIRST_KEY: Final = re.compile(r'\s*\{\s*"([^"\\]*)"\s*:\s*')
_TRACE_START: Final = re.compile(
    r'\{\s{0,40}"traceID"\s{0,40}:\s{0,40}"[0-9A-Za-z+/=]{1,64}"\s{0,40},\s{0,40}"spans"\s{0,40}:\s{0,40}\['
)
"""A trace object's start as Jaeger writes it (`traceID`, then `spans`): where to read on after
damage. A span object starts with `traceID` too, but `spanID` follows it."""
_TRACE_START_SPAN: Final = 400
"""Longest text `_TRACE_START` can match (for searching across chunk boundaries)."""
_TRACE_KEYS: Final = frozenset({"traceID", "spans", "processes", "warnings"})
_SCOPE_TAGS: Final = ("otel.scope.name", "otel.library.name")
_DROPPED_TAGS: Final = frozenset(
    {"otel.status_code", "otel.status_description", "span.kind", "error", "internal.span.format"}
    | set(_SCOPE_TAGS)
    | {"otel.scope.version", "otel.library.version"}
)


def _tag_value(tag: Mapping[str, Any]) -> Any:
    """A Jaeger tag's value in its declared type."""
    kind = str(tag.get("type", "string")).lower()
    value = tag.get("value")
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if kind == "int64":
        return int(value)  # type: ignore[arg-type]
    if kind == "float64":
        return float(value)  # type: ignore[arg-type]
    if kind == "binary":
        return base64.b64decode(value) if isinstance(value, str) else value
    return value if isinstance(value, str) else json.dumps(value)


def _tags(tags: Any) -> dict[str, Any]:
    """A Jaeger tag list as a dict."""
    if not tags:
        return {}
    if not isinstance(tags, list):
        raise ValueError(f"tags must be a list, got {type(tags).__name__}")
    return {tag["key"]: _tag_value(tag) for tag in tags}


def _process_resource(process: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Jaeger process as resource attributes (`service.name` plus its tags)."""
    resource = _tags(process.get("tags"))
    name = process.get("serviceName")
    if name:
        resource["service.name"] = name
    return MappingProxyType(resource)


def _parent(span: Mapping[str, Any], trace_id: str) -> str | None:
    """The parent span id: a same-trace CHILD_OF (else FOLLOWS_FROM) reference, or None."""
    references = span.get("references") or []
    for wanted in ("CHILD_OF", "FOLLOWS_FROM"):
        for reference in references:
            if reference.get("refType", "CHILD_OF") != wanted:
                continue
            if trace_id_hex(reference.get("traceID", trace_id), "references.traceID") != trace_id:
                continue
            return span_id_hex(reference.get("spanID"), "references.spanID")
    parent = span.get("parentSpanID")  # the legacy field, before references existed
    return span_id_hex(parent, "parentSpanID") if parent and set(parent) != {"0"} else None


def _status(tags: Mapping[str, Any]) -> str:
    """The OTel status code from OpenTelemetry's Jaeger status tags."""
    code = str(tags.get("otel.status_code", "")).upper()
    if code in ("OK", "ERROR"):
        return code
    return "ERROR" if tags.get("error") is True else "UNSET"


def spans_from_jaeger_trace(trace: Any) -> list[SpanRecord]:
    """The spans of one Jaeger JSON trace; ValueError names the offending span."""
    if not isinstance(trace, Mapping):
        raise ValueError(f"a trace must be a JSON object, got {type(trace).__name__}")
    spans = trace.get("spans")
    if not isinstance(spans, list):
        raise ValueError("a trace must have a 'spans' list")
    processes = trace.get("processes") or {}
    resources = {key: _process_resource(value) for key, value in processes.items()}
    empty: Mapping[str, Any] = MappingProxyType({})
    records: list[SpanRecord] = []
    for index, span in enumerate(spans):
        try:
            trace_id = trace_id_hex(span.get("traceID", trace.get("traceID")), "traceID")
            tags = _tags(span.get("tags"))
            start_us = int(span.get("startTime", 0))
            duration_us = int(span.get("duration", 0))
            scope = next((str(tags[key]) for key in _SCOPE_TAGS if key in tags), None)
            process = span.get("process")
            resource = (
                _process_resource(process)
                if isinstance(process, Mapping)
                else resources.get(span.get("processID", ""), empty)
            )
            records.append(
                SpanRecord(
                    trace_id=trace_id,
                    span_id=span_id_hex(span.get("spanID"), "spanID"),
                    parent_span_id=_parent(span, trace_id),
                    name=str(span.get("operationName", "")),
                    start_time_ns=start_us * 1000,
                    end_time_ns=(start_us + duration_us) * 1000,
                    attributes=MappingProxyType(
                        {k: v for k, v in tags.items() if k not in _DROPPED_TAGS}
                    ),
                    status_code=_status(tags),
                    resource=resource,
                    instrumentation_scope=scope,
                )
            )
        except MALFORMED as error:
            raise ValueError(f"spans[{index}]: {error}") from None
    return records


class _Text:
    """Decoded text of a stream, read in chunks, with the line number of the consumed prefix."""

    def __init__(self, source: SourceFile) -> None:
        self._source = source
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self.buffer = ""
        self.pos = 0
        self.line = 1
        self.eof = False

    def more(self, at_least: int = _CHUNK) -> bool:
        """Append at least `at_least` more characters (or the rest); False at end of file."""
        if self.eof:
            return False
        if self.pos:
            self.line += self.buffer.count("\n", 0, self.pos)
            self.buffer = self.buffer[self.pos :]
            self.pos = 0
        wanted = max(at_least, _CHUNK)
        pieces = []
        got = 0
        while got < wanted:
            raw = self._source.stream.read(_CHUNK)
            if not raw:
                pieces.append(self._decoder.decode(b"", final=True))
                self.eof = True
                break
            text = self._decoder.decode(raw)
            pieces.append(text)
            got += len(text)
        self.buffer += "".join(pieces)
        return bool(got) or bool(pieces and pieces[-1])

    def line_at(self, index: int) -> int:
        """The 1-based line of buffer position `index`."""
        return self.line + self.buffer.count("\n", 0, index)


def _needs_more(error: json.JSONDecodeError, text: _Text) -> bool:
    """True when the decode failed because the buffer ends inside the value (not bad JSON)."""
    return error.pos >= len(text.buffer) - 1 or error.msg.startswith("Unterminated string")


def _resync(text: _Text, after: int) -> bool:
    """Move `text.pos` to the next trace object's start after `after`; False at end of file."""
    text.pos = after
    while True:
        match = _TRACE_START.search(text.buffer, text.pos)
        if match is not None:
            text.pos = match.start()
            return True
        text.pos = max(text.pos, len(text.buffer) - _TRACE_START_SPAN)
        if not text.more():
            text.pos = len(text.buffer)
            return False


def _items(text: _Text, *, closed: bool, limit: int) -> Iterator[tuple[int, Any, str | None]]:
    """The values of a JSON array (`closed`) or of a run of top-level values, from `text.pos`.

    Yields (line, value, None), or (line, None, why) for a value that is not valid JSON, after
    which decoding resumes at the next trace object, so one damaged trace costs only itself.
    """
    decoder = json.JSONDecoder()
    while True:
        match = _WHITESPACE.match(text.buffer, text.pos)
        text.pos = match.end() if match else text.pos
        if text.pos >= len(text.buffer):
            if not text.more():
                if closed:
                    yield text.line_at(text.pos), None, "the 'data' array is not closed"
                return
            continue
        if text.buffer[text.pos] == "]":  # the data array's end (also when read on into it)
            return
        while True:
            try:
                value, end = decoder.raw_decode(text.buffer, text.pos)
            except json.JSONDecodeError as error:
                if len(text.buffer) - text.pos > limit:
                    line = text.line_at(text.pos)
                    yield line, None, f"trace longer than {limit:,} characters (the record limit)"
                    if not _resync(text, text.pos + 1):
                        return
                    break
                if _needs_more(error, text) and text.more(len(text.buffer)):
                    continue
                line = text.line_at(min(error.pos, len(text.buffer)))
                yield line, None, f"not valid JSON ({error.msg})"
                if not _resync(text, text.pos + 1):
                    return
                break
            except RecursionError:
                yield text.line_at(text.pos), None, "JSON nested too deeply"
                if not _resync(text, text.pos + 1):
                    return
                break
            line = text.line_at(text.pos)
            size = end - text.pos
            text.pos = end
            if size > limit:
                yield line, None, f"trace longer than {limit:,} characters (the record limit)"
            else:
                yield line, value, None
            break


def _top_level(text: _Text) -> tuple[str, str | None]:
    """How the traces are laid out from `text.pos` on, and why the start was skipped if it was.

    `array`: a (`data`) array of traces; `values`: a bare trace or a run of traces (one per line);
    a start that is neither (the first record cut by log rotation, a stray line) is skipped to the
    first whole trace object, and the reason is returned with `values`.
    """
    while not text.buffer.strip() and text.more():
        pass
    head = text.buffer.lstrip()
    if head.startswith("["):
        text.pos = text.buffer.index("[") + 1
        return "array", None
    first = _FIRST_KEY.match(text.buffer)
    if first is not None and first.group(1) in _TRACE_KEYS:
        text.pos = text.buffer.index("{")
        return "values", None
    if first is not None and first.group(1) == "data":
        if text.buffer[first.end() : first.end() + 1] == "[":
            text.pos = first.end() + 1
            return "array", None
        if not _resync(text, first.end()):  # an error response, or a damaged wrapper
            raise ValueError("the 'data' field holds no list of traces")
        return "values", "the 'data' field holds no list of traces (damaged?)"
    if head.startswith("{"):
        while True:
            match = _DATA_ARRAY.search(text.buffer)
            if match:
                text.pos = match.end()
                return "array", None
            if not text.more(len(text.buffer)):
                break
    if not _resync(text, 0):
        raise ValueError("not Jaeger JSON: no 'data' array and no whole trace")
    return "values", "not a whole trace (the start of the file is cut or damaged)"


def read_jaeger(source: SourceFile, problems: Problems) -> Iterator[SpanBatch]:
    """Yield the spans of each trace in a Jaeger JSON file, streaming its `data` array."""
    stats = problems.stats
    where = str(source.path)
    text = _Text(source)
    try:
        layout, skipped = _top_level(text)
    except ValueError as error:
        if source.damage is None:
            stats.records += 1
            problems.report(f"{where}:1", str(error))
        return
    if skipped is not None:
        stats.records += 1
        problems.report(f"{where}:1", f"{skipped}; read on from line {text.line_at(text.pos)}")
    for index, (line, trace, why) in enumerate(
        _items(text, closed=layout == "array", limit=problems.max_record_bytes)
    ):
        item_where = f"{where}:{line} (data[{index}])" if layout == "array" else f"{where}:{line}"
        if why is not None:
            if source.damage is not None and text.eof:
                return  # the trace cut by the damage, reported once by `read_file`
            stats.records += 1
            problems.report(item_where, why)
            continue
        stats.records += 1
        stats.file_position = source.position
        try:
            records = spans_from_jaeger_trace(trace)
        except MALFORMED as error:
            problems.report(item_where, f"not a valid Jaeger trace: {error}")
            continue
        except RecursionError:
            problems.report(item_where, "not a valid Jaeger trace: nested too deeply")
            continue
        stats.spans += len(records)
        yield SpanBatch(records, item_where)
