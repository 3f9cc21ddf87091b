"""Jaeger JSON read as a stream: every layout, files over many read chunks, bad traces reported
with their exact line and index, counters and progress exact."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline.readers import Problems, SpanBatch, read_file, read_spans


def _trace(number: int, *, pad: int = 0) -> dict[str, Any]:
    """A small Jaeger trace (two spans, one child of the other); `pad` adds a long tag."""
    trace_id = f"{number + 1:032x}"
    root, child = f"{2 * number + 1:016x}", f"{2 * number + 2:016x}"
    tags = [{"key": "n", "type": "int64", "value": number}]
    if pad:
        tags.append({"key": "pad", "type": "string", "value": "x" * pad})
    return {
        "traceID": trace_id,
        "spans": [
            {
                "traceID": trace_id,
                "spanID": root,
                "operationName": "rag",
                "references": [],
                "startTime": 1000 + number,
                "duration": 5,
                "tags": tags,
                "processID": "p1",
            },
            {
                "traceID": trace_id,
                "spanID": child,
                "operationName": "retrieve",
                "references": [{"refType": "CHILD_OF", "traceID": trace_id, "spanID": root}],
                "startTime": 1001 + number,
                "duration": 1,
                "tags": [],
                "processID": "p1",
            },
        ],
        "processes": {"p1": {"serviceName": "svc", "tags": []}},
    }


def _read(path: Path, **problems_args: Any) -> tuple[list[SpanBatch], Problems, list[str]]:
    stream = io.StringIO()
    problems = Problems(stream=stream, **problems_args)
    batches = list(read_spans([path], problems))
    return batches, problems, stream.getvalue().splitlines()


def _numbers(batches: list[SpanBatch]) -> list[int]:
    """The `n` tag of each trace's root span, in reading order."""
    return [s.attributes["n"] for b in batches for s in b.spans if s.name == "rag"]


def test_api_response_batches_say_line_and_index(tmp_path: Path) -> None:
    """In a `data` array each batch is one trace, placed as `file:line (data[i])`; counters and
    spans exact (parents, times, resource)."""
    path = tmp_path / "api.json"
    path.write_text(json.dumps({"data": [_trace(0), _trace(1)]}, indent=1))
    lines = path.read_text().splitlines()
    starts = [i + 1 for i, line in enumerate(lines) if line == "  {"]
    batches, problems, messages = _read(path)
    assert messages == []
    assert [b.where for b in batches] == [
        f"{path}:{starts[0]} (data[0])",
        f"{path}:{starts[1]} (data[1])",
    ]
    assert (problems.stats.records, problems.stats.spans, problems.stats.files) == (2, 4, 1)
    root, child = batches[1].spans
    assert child.parent_span_id == root.span_id and root.parent_span_id is None
    assert (root.start_time_ns, root.end_time_ns) == (1_001_000, 1_006_000)
    assert dict(root.resource) == {"service.name": "svc"}
    assert problems.stats.bytes_read == path.stat().st_size


def test_traces_one_per_line_are_placed_by_line_only(tmp_path: Path) -> None:
    """Bare traces, one per line (no wrapper), are `file:line` each; a top-level list is an
    array (`data[i]`)."""
    path = tmp_path / "lines.json"
    path.write_text("\n".join(json.dumps(_trace(n)) for n in range(3)) + "\n")
    batches, problems, _ = _read(path)
    assert [b.where for b in batches] == [f"{path}:{n}" for n in (1, 2, 3)]
    assert _numbers(batches) == [0, 1, 2] and problems.stats.records == 3
    listed = tmp_path / "list.json"
    listed.write_text("\n[" + ",\n".join(json.dumps(_trace(n)) for n in range(3)) + "]\n")
    batches, problems, messages = _read(listed)
    assert messages == [] and _numbers(batches) == [0, 1, 2]
    assert [b.where for b in batches] == [f"{listed}:{n} (data[{n - 2}])" for n in (2, 3, 4)]


def test_progress_is_the_raw_position_while_reading(tmp_path: Path) -> None:
    """While traces stream, `file_position` is the bytes consumed; after the file, `bytes_done`."""
    path = tmp_path / "api.json"
    path.write_text(json.dumps({"data": [_trace(0), _trace(1)]}))
    problems = Problems()
    batches = read_file(path, problems)
    next(batches)
    assert problems.stats.file_position == path.stat().st_size
    list(batches)
    assert (problems.stats.file_position, problems.stats.bytes_done) == (0, path.stat().st_size)


def test_a_file_of_many_chunks_reads_every_trace_and_places_damage_by_line(tmp_path: Path) -> None:
    """Over 3 MB (several read chunks, traces crossing chunk ends): every trace reads, and one
    damaged trace near the end is reported with its exact line and index."""
    traces = [_trace(n, pad=7_000 + 13 * n) for n in range(450)]
    text = json.dumps({"data": traces}, indent=1)
    marker = '"value": 440\n'
    assert text.count(marker) == 1
    broken = text.replace(marker, marker.replace("440", "44#"))
    path = tmp_path / "big.json"
    path.write_text(broken)
    assert path.stat().st_size > 3 << 20
    batches, problems, messages = _read(path)
    assert _numbers(batches) == [n for n in range(450) if n != 440]
    start = broken.index('"traceID": "000000000000000000000000000001b9"')
    trace_line = broken[:start].count("\n")  # the trace's `{` is on the line before
    (message,) = messages
    error_line = broken[: broken.index("44#")].count("\n") + 1
    assert message.startswith(f"groundwire: {path}:{error_line} (data[440]): skipped: not valid")
    assert error_line > trace_line
    assert problems.stats.records == 450 and problems.stats.bad_records == 1
    assert problems.stats.spans == 898


def test_an_unclosed_data_array_is_reported_after_the_last_trace(tmp_path: Path) -> None:
    """A `data` array whose file ends after a whole trace: the traces read, then one report."""
    path = tmp_path / "open.json"
    path.write_text('{"data": [' + json.dumps(_trace(0)) + ",\n" + json.dumps(_trace(1)) + "\n")
    batches, problems, messages = _read(path)
    assert _numbers(batches) == [0, 1]
    assert messages == [f"groundwire: {path}:3 (data[2]): skipped: the 'data' array is not closed"]
    assert problems.stats.records == 3


def test_a_cut_last_trace_is_reported_and_earlier_ones_read(tmp_path: Path) -> None:
    """A file ending inside a trace (inside a string, too): one report, the rest read."""
    full = json.dumps({"data": [_trace(0), _trace(1)]})
    for cut_at in (full.index('"retrieve"', full.index(f"{3:016x}")) + 4, len(full) - 3):
        path = tmp_path / f"cut{cut_at}.json"
        path.write_text(full[:cut_at])
        batches, problems, messages = _read(path)
        assert _numbers(batches) == [0]
        (message,) = messages
        assert message.startswith(f"groundwire: {path}:1 (data[1]): skipped: not valid JSON (")
        assert problems.stats.records == 2 and problems.stats.bad_records == 1


def test_valid_json_that_is_no_trace_is_reported_by_place(tmp_path: Path) -> None:
    """An array element that is JSON but not a trace is one bad record naming why and where."""
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"data": [_trace(0), {"traceID": "x", "spans": 3}, _trace(2)]}))
    batches, problems, messages = _read(path)
    assert _numbers(batches) == [0, 2]
    assert messages == [
        f"groundwire: {path}:1 (data[1]): skipped: not a valid Jaeger trace: "
        "a trace must have a 'spans' list"
    ]
    assert (problems.stats.records, problems.stats.bad_records, problems.stats.spans) == (3, 1, 4)


@pytest.mark.parametrize("cut", [False, True])
def test_a_trace_over_the_record_limit_is_skipped(tmp_path: Path, cut: bool) -> None:
    """A trace longer than `max_record_bytes` is reported (whole or cut), the others read."""
    big = json.dumps(_trace(1, pad=5_000))
    body = json.dumps(_trace(0)) + ",\n" + (big[:-40] + "#" if cut else big)
    path = tmp_path / "limit.json"
    path.write_text('{"data": [' + body + ",\n" + json.dumps(_trace(2)) + "]}")
    batches, problems, messages = _read(path, max_record_bytes=3_000)
    assert _numbers(batches) == [0, 2]
    assert messages == [
        f"groundwire: {path}:2 (data[1]): skipped: trace longer than 3,000 characters "
        "(the record limit)"
    ]
    assert problems.stats.records == 3


def test_a_trace_exactly_at_the_record_limit_reads(tmp_path: Path) -> None:
    """The limit is inclusive: a trace of exactly `max_record_bytes` characters is read."""
    one = json.dumps(_trace(0))
    path = tmp_path / "exact.json"
    path.write_text("[" + one + "]")
    batches, _, messages = _read(path, max_record_bytes=len(one))
    assert messages == [] and _numbers(batches) == [0]
    _, _, messages = _read(path, max_record_bytes=len(one) - 1)
    assert len(messages) == 1 and "trace longer than" in messages[0]


def test_too_deeply_nested_json_is_reported_not_raised(tmp_path: Path) -> None:
    """A trace nested past the recursion limit is one bad record; reading goes on after it."""
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.json"
    path.write_text(
        '{"data": [' + json.dumps(_trace(0)) + ",\n" + deep + ",\n" + json.dumps(_trace(2)) + "]}"
    )
    batches, problems, messages = _read(path)
    assert _numbers(batches) == [0, 2]
    assert messages == [f"groundwire: {path}:2 (data[1]): skipped: JSON nested too deeply"]
    assert problems.stats.records == 3


def test_bom_and_invalid_utf8_are_read(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark is skipped; bytes that are not UTF-8 become U+FFFD, not errors."""
    trace = _trace(0)
    trace["spans"][0]["tags"].append({"key": "s", "type": "string", "value": "aZb"})
    raw = json.dumps({"data": [trace]}).encode().replace(b"aZb", b"a\xffb")
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + raw)
    batches, _, messages = _read(path)
    assert messages == []
    assert batches[0].spans[0].attributes["s"] == "a\ufffdb"


def test_a_cut_start_is_reported_with_the_line_read_on_from(tmp_path: Path) -> None:
    """A file starting inside a trace: one report naming the line where reading goes on."""
    text = json.dumps({"data": [_trace(n) for n in range(3)]}, indent=1)
    second = text.index("{", text.index("{", text.index("[") + 1) + 1)
    rotated = text[text.index('"rag"') :]
    path = tmp_path / "rotated.json"
    path.write_text(rotated)
    start = rotated.index('{\n   "traceID": "00000000000000000000000000000002"')
    line = rotated[:start].count("\n") + 1
    batches, problems, messages = _read(path)
    assert _numbers(batches) == [1, 2] and second > 0
    assert messages == [
        f"groundwire: {path}:1: skipped: not a whole trace (the start of the file is cut or "
        f"damaged); read on from line {line}"
    ]
    assert batches[0].where == f"{path}:{line}"
    assert problems.stats.records == 3


def test_a_json_object_with_neither_data_nor_traces_is_one_report(tmp_path: Path) -> None:
    """Read as Jaeger, an object with no `data` array and no whole trace is one bad record."""
    path = tmp_path / "other.json"
    path.write_text('{"hello": [1, 2], "world": {"a": "b"}}\n')
    stream = io.StringIO()
    problems = Problems(stream=stream)
    assert list(read_spans([path], problems, fmt="jaeger")) == []
    assert stream.getvalue() == (
        f"groundwire: {path}:1: skipped: not Jaeger JSON: no 'data' array and no whole trace\n"
    )
    assert (problems.stats.records, problems.stats.bad_records) == (1, 1)


def test_leading_blank_lines_and_data_after_other_keys(tmp_path: Path) -> None:
    """Blank lines before the object and `data` after other keys still stream every trace."""
    path = tmp_path / "late.json"
    body = {"total": 2, "errors": None, "data": [_trace(0), _trace(1)]}
    path.write_text("\n\n   \n" + json.dumps(body, indent=1))
    batches, problems, messages = _read(path)
    assert messages == [] and _numbers(batches) == [0, 1]
    assert batches[0].where.startswith(f"{path}:") and batches[0].where.endswith("(data[0])")
    assert problems.stats.records == 2
