"""What every reader shares: the `SpanBatch` it yields, read counters, and bad-record reporting.

A reader yields one `SpanBatch` per record (an OTLP/JSON line, a protobuf message, a Jaeger
trace). A record that cannot be read is handed to the `Problems` sink with its file and line (or
byte offset); the sink prints it and counts it, or raises `BadRecordError` in strict mode.
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any, Final, TextIO

from groundwire.assembly import LogRecordData, SpanRecord

__all__ = [
    "MALFORMED",
    "MAX_FILE_MESSAGES",
    "BadRecordError",
    "Problems",
    "ReadStats",
    "SpanBatch",
    "checked_span",
    "span_id_hex",
    "trace_id_hex",
]

MALFORMED: Final = (ValueError, TypeError, KeyError, AttributeError, OverflowError)
"""What converting a decoded record raises when the record is malformed (a wrong type, a missing
key, an infinite number where an integer belongs): reported with the record's place, never
raised past the reader. Every reader catches this one tuple, so a record is bad by one rule."""

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_TRACE_HEX: Final = re.compile("[0-9a-f]{32}").fullmatch
_SPAN_HEX: Final = re.compile("[0-9a-f]{16}").fullmatch


class BadRecordError(ValueError):
    """A record in a trace file could not be read; `where` is `file:line` (or `file@byte`)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


@dataclass(frozen=True, slots=True)
class SpanBatch:
    """The spans of one record, with where it came from (for messages)."""

    spans: list[SpanRecord]
    where: str
    logs: list[LogRecordData] = field(default_factory=list)
    """Log records of the same record (OTLP `resourceLogs`): log-based events such as
    `gen_ai.evaluation.result` or GenAI message-content events, correlated to spans by id."""


@dataclass(slots=True)
class ReadStats:
    """Counters kept while reading: records are lines, messages or Jaeger traces."""

    files: int = 0
    records: int = 0
    """Records read (trace, metric and log records alike), bad ones included."""
    spans: int = 0
    bad_records: int = 0
    other_records: int = 0
    """Good records holding metrics or logs, not spans (metrics are skipped without complaint)."""
    log_records: int = 0
    """Log records read (OTLP `resourceLogs`), carried in `SpanBatch.logs`."""
    damaged_files: int = 0
    """Files whose byte stream ended early or broke (a cut or corrupt gzip/zstd stream, an I/O
    error): what came before the damage was read, the rest is lost (also one bad record)."""
    bytes_done: int = 0
    """Size on disk of the files read to the end."""
    file_position: int = 0
    """Bytes of the current file on disk consumed so far (compressed size)."""
    bad_examples: list[str] = field(default_factory=list)
    """The first few bad records' messages."""

    @property
    def bytes_read(self) -> int:
        """Bytes on disk consumed so far over all files, for progress bars."""
        return self.bytes_done + self.file_position


MAX_FILE_MESSAGES: Final = 1000
"""Bad-record messages passed on per file (`Problems.max_file_messages`' default)."""


@dataclass(slots=True)
class Problems:
    """Where bad records go: printed to `stream` and counted, or raised when `strict`."""

    strict: bool = False
    stream: TextIO | None = None
    """Defaults to sys.stderr at report time."""
    stats: ReadStats = field(default_factory=ReadStats)
    on_report: Callable[[str], None] | None = None
    """Called with each message instead of writing to `stream` (the CLI routes it via rich)."""
    max_record_bytes: int = 256 << 20
    """A record (line, protobuf message, Jaeger trace) larger than this is reported and skipped,
    so one runaway line cannot exhaust memory."""
    max_file_messages: int = MAX_FILE_MESSAGES
    """Bad records of one file (`within`) passed on; the rest are counted, not printed, and one
    line at the file's end says how many: a file of a million bad lines prints a thousand lines
    and that one, on every engine. A damaged file's own message is always passed on."""
    _file: str | None = field(default=None, init=False, repr=False)
    _shown: int = field(default=0, init=False, repr=False)
    _hidden: int = field(default=0, init=False, repr=False)

    def report(self, where: str, message: str, *, skipped: bool = True) -> None:
        """Record one bad record; raises BadRecordError in strict mode."""
        self._count(where, message)
        if self._file is not None:
            if self._shown >= self.max_file_messages:
                self._hidden += 1
                return
            self._shown += 1
        self.relay(f"{where}: skipped: {message}" if skipped else f"{where}: {message}")

    def relay(self, text: str) -> None:
        """Pass on one message `report` made elsewhere (a Ray read task's, already counted
        there): kept among the first examples and printed or handed to `on_report` as
        `report` does, but not counted again."""
        if len(self.stats.bad_examples) < 20:
            self.stats.bad_examples.append(text)
        if self.on_report is not None:
            self.on_report(text)
        else:
            print(f"groundwire: {text}", file=self.stream or sys.stderr)

    def damaged(self, where: str, message: str) -> None:
        """Record a file whose stream ended early or broke: once, as one bad record, passed on
        whatever the file's other bad records were."""
        self.stats.damaged_files += 1
        self.stats.records += 1
        self._count(where, message)
        self.relay(f"{where}: {message}")

    @contextmanager
    def within(self, path: str) -> Iterator[None]:
        """The reading of one file (`read_file`): its bad records past `max_file_messages` are
        counted only, then said in one line when it ends."""
        self._file, self._shown, self._hidden = path, 0, 0
        try:
            yield
        finally:
            hidden, self._file = self._hidden, None
            if hidden:
                self.relay(
                    f"{path}: {hidden} more bad records not shown "
                    f"(only the first {self.max_file_messages} of a file are)"
                )

    def _count(self, where: str, message: str) -> None:
        """Count one bad record, or raise it when strict."""
        self.stats.bad_records += 1
        if self.strict:
            raise BadRecordError(where, message)


def _from_b64(value: str, size: int, what: str) -> str:
    """Base64 of exactly `size` bytes as hex; ValueError naming the field otherwise."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != size:
        raise ValueError(
            f"{what} {value!r} is neither {size * 2} hex digits nor base64 of {size} bytes"
        )
    return raw.hex()


def trace_id_hex(value: object, what: str = "traceId") -> str:
    """A trace id as 32 lower-case hex digits, from hex (any case, 16 or 32 digits) or base64."""
    if type(value) is str and _TRACE_HEX(value):  # already as wanted: most ids, checked at once
        return value
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} is missing or not a string: {value!r}")
    if len(value) in (16, 32) and _HEX.issuperset(value):
        return value.lower().rjust(32, "0")
    return _from_b64(value, 16, what)


def span_id_hex(value: object, what: str = "spanId") -> str:
    """A span id as 16 lower-case hex digits, from hex (any case) or base64."""
    if type(value) is str and _SPAN_HEX(value):
        return value
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} is missing or not a string: {value!r}")
    if len(value) == 16 and _HEX.issuperset(value):
        return value.lower()
    return _from_b64(value, 8, what)


_SETTERS: Final = {
    field.name: getattr(SpanRecord, field.name).__set__ for field in fields(SpanRecord)
}
if list(_SETTERS) != [
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_time_ns",
    "end_time_ns",
    "attributes",
    "status_code",
    "resource",
    "parent_is_remote",
    "instrumentation_scope",
]:  # a field added to SpanRecord must be set below too
    raise RuntimeError(f"checked_span does not know SpanRecord's fields {list(_SETTERS)}")
_set_trace_id = _SETTERS["trace_id"]
_set_span_id = _SETTERS["span_id"]
_set_parent = _SETTERS["parent_span_id"]
_set_name = _SETTERS["name"]
_set_start = _SETTERS["start_time_ns"]
_set_end = _SETTERS["end_time_ns"]
_set_attributes = _SETTERS["attributes"]
_set_status = _SETTERS["status_code"]
_set_resource = _SETTERS["resource"]
_set_remote = _SETTERS["parent_is_remote"]
_set_scope = _SETTERS["instrumentation_scope"]
_new: Final = object.__new__


def checked_span(
    trace_id: str,
    span_id: str,
    parent_span_id: str | None,
    name: str,
    start_time_ns: int,
    end_time_ns: int | None,
    attributes: Mapping[str, Any],
    status_code: str,
    resource: Mapping[str, Any],
    parent_is_remote: bool,
    instrumentation_scope: str | None,
) -> SpanRecord:
    """A `SpanRecord` of fields a reader has already checked one by one, without
    `SpanRecord.__post_init__` (as `SpanRecord.from_readable` skips it for SDK spans).

    The caller guarantees every check `__post_init__` makes: ids from `trace_id_hex` /
    `span_id_hex`, a status among `STATUS_CODES`, int times, read-only attribute mappings. One
    statement per field through its slot: a loop over the field names cost 2 µs a span more
    (a fifth of parsing one on the offline read path), the validation more still.
    """
    record = _new(SpanRecord)
    _set_trace_id(record, trace_id)
    _set_span_id(record, span_id)
    _set_parent(record, parent_span_id)
    _set_name(record, name)
    _set_start(record, start_time_ns)
    _set_end(record, end_time_ns)
    _set_attributes(record, attributes)
    _set_status(record, status_code)
    _set_resource(record, resource)
    _set_remote(record, parent_is_remote)
    _set_scope(record, instrumentation_scope)
    return record
