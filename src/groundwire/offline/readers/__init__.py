"""Streaming readers for recorded traces: OTLP/JSON lines, OTLP protobuf and Jaeger JSON.

```python
from groundwire.offline.readers import Problems, read_spans

for batch in read_spans(["traces.jsonl.gz", "jaeger.json"], Problems()):
    ...  # batch.spans: list[SpanRecord], batch.logs: list[LogRecordData], batch.where
```

Formats are detected from the first records that parse, not the first line alone (gzip and zstd
are decompressed transparently); a bad record, a damaged first or last line included, is reported
with its file and line and skipped (`Problems(strict=True)` raises instead).
Log records (OTLP `resourceLogs` lines, `LogsData` protobuf frames) come as `SpanBatch.logs`,
counted in `ReadStats.log_records`. Each reader holds one record at a time, so memory does not
grow with the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from groundwire.offline.readers._common import (
    MALFORMED,
    MAX_FILE_MESSAGES,
    BadRecordError,
    Problems,
    ReadStats,
    SpanBatch,
    span_id_hex,
    trace_id_hex,
)
from groundwire.offline.readers._detect import (
    FORMAT_NAMES,
    FORMATS,
    FormatMismatchError,
    TraceFormat,
    detect_format,
    sniff_format,
)
from groundwire.offline.readers._jaeger import read_jaeger, spans_from_jaeger_trace
from groundwire.offline.readers._otlp_json import read_otlp_json, spans_from_request
from groundwire.offline.readers._otlp_proto import read_otlp_proto, spans_from_message
from groundwire.offline.readers._otlp_values import any_value
from groundwire.offline.readers._source import SourceFile, open_source

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "MALFORMED",
    "MAX_FILE_MESSAGES",
    "BadRecordError",
    "FormatMismatchError",
    "Problems",
    "ReadStats",
    "SourceFile",
    "SpanBatch",
    "TraceFormat",
    "any_value",
    "detect_format",
    "open_source",
    "read_file",
    "read_spans",
    "report_unreadable",
    "sniff_format",
    "span_id_hex",
    "spans_from_jaeger_trace",
    "spans_from_message",
    "spans_from_request",
    "trace_id_hex",
]

_READERS: dict[str, Callable[[SourceFile, Problems], Iterator[SpanBatch]]] = {
    "otlp-json": read_otlp_json,
    "otlp-proto": read_otlp_proto,
    "jaeger": read_jaeger,
}


def read_file(
    path: str | os.PathLike[str], problems: Problems, *, fmt: TraceFormat | None = None
) -> Iterator[SpanBatch]:
    """Yield the span batches of one file, in the given format or the detected one."""
    if fmt is not None and fmt not in _READERS:
        raise ValueError(f"unknown trace format {fmt!r}; expected one of {list(FORMATS)}")
    with open_source(path) as source, problems.within(str(source.path)):
        stats = problems.stats
        try:
            chosen = fmt or detect_format(source)
            if fmt is not None:
                shown = sniff_format(source)
                if shown is not None and shown != fmt:
                    raise FormatMismatchError(source.path, fmt, shown)
        except FormatMismatchError:
            raise
        except ValueError:
            if source.damage is None:
                raise
            stats.files += 1
            problems.damaged(str(source.path), source.damage.describe())
            return
        stats.files += 1
        records_before = stats.records
        try:
            yield from _READERS[chosen](source, problems)
            damage = source.damage
            if damage is not None:
                read = stats.records - records_before
                message = (
                    damage.describe(unit="messages", count=read)
                    if chosen == "otlp-proto"
                    else damage.describe()
                )
                problems.damaged(str(source.path), message)
        finally:
            stats.bytes_done += source.size
            stats.file_position = 0


def read_spans(
    paths: Iterable[str | os.PathLike[str]],
    problems: Problems,
    *,
    fmt: TraceFormat | None = None,
) -> Iterator[SpanBatch]:
    """Yield the span batches of every file in order; an unreadable file is a bad record.

    A file whose records show another format than `fmt` raises FormatMismatchError (naming both):
    the format was the caller's mistake, not the file's.
    """
    for path in paths:
        try:
            yield from read_file(path, problems, fmt=fmt)
        except (OSError, ValueError) as error:
            report_unreadable(path, problems, error)


def report_unreadable(
    path: str | os.PathLike[str], problems: Problems, error: OSError | ValueError
) -> None:
    """Report a file that could not be read as a bad record of that file, so that reading goes
    on with the next: an `OSError` (missing, a directory, no permission) or a `ValueError`
    (such as an unknown format or a broken compressed stream). `BadRecordError`
    (`Problems(strict=True)`) and `FormatMismatchError` (the caller's `fmt` was wrong, not the
    file) are raised again. Every engine reads a file under this one policy (`read_spans`, the
    Ray reads)."""
    if isinstance(error, BadRecordError | FormatMismatchError):
        raise error
    if isinstance(error, OSError):
        problems.report(str(path), f"cannot read the file: {error.strerror or error}")
    else:
        problems.report(str(path), str(error))
