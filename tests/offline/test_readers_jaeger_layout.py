"""Jaeger JSON details: per-span trace ids and inline processes, parent choice among references,
and counters that add up over several files read with one `Problems`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from groundwire.offline.readers import Problems, read_spans
from groundwire.offline.readers._jaeger import spans_from_jaeger_trace

TRACE = "0" * 31 + "1"
OTHER = "0" * 31 + "2"


def _span(span_id: int, **fields: Any) -> dict[str, Any]:
    return {"spanID": f"{span_id:016x}", "operationName": f"op{span_id}", **fields}


def test_a_span_s_own_trace_id_wins_over_the_trace_s() -> None:
    """A span naming its own `traceID` keeps it; one without takes the trace's."""
    trace = {
        "traceID": TRACE,
        "spans": [_span(1, traceID=OTHER), _span(2)],
        "processes": {},
    }
    assert [s.trace_id for s in spans_from_jaeger_trace(trace)] == [OTHER, TRACE]


def test_an_inline_process_gives_the_resource() -> None:
    """A span with an inline `process` object (older Jaeger files) takes its service and tags
    from it rather than from `processes` by `processID`."""
    trace = {
        "traceID": TRACE,
        "spans": [
            _span(
                1,
                processID="p1",
                process={"serviceName": "inline", "tags": [{"key": "k", "value": "v"}]},
            ),
            _span(2, processID="p1"),
        ],
        "processes": {"p1": {"serviceName": "listed"}},
    }
    first, second = spans_from_jaeger_trace(trace)
    assert dict(first.resource) == {"service.name": "inline", "k": "v"}
    assert dict(second.resource) == {"service.name": "listed"}


def test_a_child_of_reference_after_a_follows_from_one_is_the_parent() -> None:
    """CHILD_OF is the parent wherever it stands among the references; FOLLOWS_FROM only when
    there is no CHILD_OF."""
    references = [
        {"refType": "FOLLOWS_FROM", "traceID": TRACE, "spanID": f"{7:016x}"},
        {"refType": "CHILD_OF", "traceID": TRACE, "spanID": f"{8:016x}"},
    ]
    trace = {
        "traceID": TRACE,
        "spans": [_span(1, references=references), _span(2, references=references[:1])],
    }
    assert [s.parent_span_id for s in spans_from_jaeger_trace(trace)] == [
        f"{8:016x}",
        f"{7:016x}",
    ]


def test_records_count_on_over_files_with_a_bad_start(tmp_path: Path) -> None:
    """With one `Problems` over several files, a file that is not Jaeger JSON and a file whose
    start is cut each add one record to the count of those read before."""
    good = tmp_path / "good.json"
    trace = {"traceID": TRACE, "spans": [_span(1)], "processes": {}}
    good.write_text(json.dumps({"data": [trace, trace]}))
    other = tmp_path / "other.json"
    other.write_text('{"hello": [1, 2]}\n')
    cut = tmp_path / "cut.json"
    cut.write_text('"op1"}]}, ' + json.dumps(trace) + "\n")
    stream = io.StringIO()
    problems = Problems(stream=stream)
    batches = list(read_spans([good, other, good, cut], problems, fmt="jaeger"))
    assert len(batches) == 5
    assert problems.stats.records == 2 + 1 + 2 + 2
    assert problems.stats.bad_records == 2
    assert stream.getvalue().splitlines() == [
        f"groundwire: {other}:1: skipped: not Jaeger JSON: no 'data' array and no whole trace",
        f"groundwire: {cut}:1: skipped: not a whole trace (the start of the file is cut or "
        "damaged); read on from line 1",
    ]
