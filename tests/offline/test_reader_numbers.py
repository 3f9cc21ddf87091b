"""Numbers in trace files: one rule for times, and a bad number keeps its record's place.

Span and log times are read by one function (`nanos`), the rule of protobuf JSON for a 64-bit
integer; an infinite or huge number (`1e400` parses as `inf`) is a malformed record like any other,
reported with the span it sits in, not only the file line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline.readers import (
    Problems,
    read_spans,
    spans_from_jaeger_trace,
    spans_from_request,
)
from groundwire.offline.readers._otlp_logs import logs_from_request

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
INFINITE = float("inf")


def _span_request(**fields: Any) -> dict[str, Any]:
    span = {"traceId": TRACE, "spanId": SPAN, "name": "s", **fields}
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def _log_request(**fields: Any) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": [fields]}]}]}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1700000000000000000", 1700000000000000000), (17, 17), (1.7e18, 1700000000000000000)],
)
def test_span_and_log_times_take_strings_integers_and_whole_floats(
    value: object, expected: int
) -> None:
    """Protobuf JSON's int64: a decimal string or a whole number, the same for spans and logs."""
    (span,) = spans_from_request(_span_request(startTimeUnixNano=value)) or []
    (log,) = logs_from_request(_log_request(timeUnixNano=value)) or []
    assert span.start_time_ns == log.time_ns == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "must be an integer (nanoseconds), got 1.5"),
        (INFINITE, "must be an integer (nanoseconds), got inf"),
        (True, "must be an integer (nanoseconds), got True"),
        ("-5", "must not be negative, got -5"),
        (-5, "must not be negative, got -5"),
    ],
)
def test_span_and_log_times_reject_the_same_values(value: object, message: str) -> None:
    """A fraction is not truncated, nor an infinite number let through to a later crash."""
    with pytest.raises(ValueError, match=re.escape(message)) as span_error:
        spans_from_request(_span_request(startTimeUnixNano=value))
    with pytest.raises(ValueError, match=re.escape(message)) as log_error:
        logs_from_request(_log_request(timeUnixNano=value))
    assert str(span_error.value).startswith("resourceSpans[0].scopeSpans[0].spans[0]: start ")
    assert str(log_error.value).startswith("resourceLogs[0].scopeLogs[0].logRecords[0]: time")


def test_an_infinite_flags_value_names_its_span() -> None:
    """`int(inf)` raises OverflowError: caught as a malformed span, with the span's place."""
    with pytest.raises(ValueError, match=re.escape("scopeSpans[0].spans[0]: cannot convert")):
        spans_from_request(_span_request(flags=INFINITE))


def test_an_infinite_jaeger_time_names_its_span() -> None:
    """The second span's bad start time is reported as `spans[1]`, like any other bad field."""
    good = {"traceID": TRACE, "spanID": SPAN, "operationName": "a", "startTime": 1}
    bad = {**good, "spanID": "b7ad6b7169203332", "startTime": INFINITE}
    with pytest.raises(ValueError, match=re.escape("spans[1]: cannot convert float infinity")):
        spans_from_jaeger_trace({"traceID": TRACE, "spans": [good, bad]})


def test_a_file_with_an_infinite_number_reports_the_span_and_reads_on(tmp_path: Path) -> None:
    """Through `read_spans`: the bad line is reported with its span's place, the next line read."""
    bad = json.dumps(_span_request(startTimeUnixNano=INFINITE)).replace("Infinity", "1e400")
    good = json.dumps(_span_request(startTimeUnixNano="5"))
    path = tmp_path / "t.jsonl"
    path.write_text(f"{bad}\n{good}\n")
    seen: list[str] = []
    problems = Problems(on_report=seen.append)
    batches = list(read_spans([path], problems))
    assert [span.start_time_ns for batch in batches for span in batch.spans] == [5]
    assert seen == [
        f"{path}:1: skipped: not a valid OTLP/JSON traces request: "
        "resourceSpans[0].scopeSpans[0].spans[0]: start must be an integer (nanoseconds), got inf"
    ]
