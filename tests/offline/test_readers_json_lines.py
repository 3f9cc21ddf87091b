"""OTLP/JSON lines read one by one: the record limit is exact, oversized and deeply nested lines
are one report each, and counters and places are exact."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from groundwire.offline.readers import Problems, SpanBatch, read_file, read_spans

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _line(span_ids: list[str], pad: int = 0) -> str:
    spans = [{"traceId": TRACE, "spanId": s, "name": "x" * pad} for s in span_ids]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def _read(path: Path, **args: Any) -> tuple[list[SpanBatch], Problems, list[str]]:
    stream = io.StringIO()
    problems = Problems(stream=stream, **args)
    batches = list(read_spans([path], problems))
    return batches, problems, stream.getvalue().splitlines()


def test_the_record_limit_counts_the_line_without_its_newline(tmp_path: Path) -> None:
    """A line of exactly `max_record_bytes` reads; one byte more is one report with its line
    number, however long it is, and the lines after it read."""
    exact = _line(["1" * 16])
    over = _line(["2" * 16], pad=1)
    huge = _line(["3" * 16], pad=3_000_000)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([exact, over, huge, _line(["4" * 16]), exact]) + "\n")
    limit = len(exact)
    batches, problems, messages = _read(path, max_record_bytes=limit)
    assert [b.where for b in batches] == [f"{path}:1", f"{path}:4", f"{path}:5"]
    assert messages == [
        f"groundwire: {path}:{n}: skipped: line longer than {limit:,} bytes (the record limit)"
        for n in (2, 3)
    ]
    assert (problems.stats.records, problems.stats.bad_records, problems.stats.spans) == (5, 2, 3)


def test_a_too_long_last_line_without_newline_is_one_report(tmp_path: Path) -> None:
    """The oversized line at the end of the file (no newline) is still one report."""
    path = tmp_path / "t.jsonl"
    path.write_text(_line(["1" * 16]) + "\n" + "x" * 5000)
    batches, problems, messages = _read(path, max_record_bytes=1000)
    assert len(batches) == 1 and len(messages) == 1
    assert messages[0].startswith(f"groundwire: {path}:2: skipped: line longer than 1,000 bytes")
    assert problems.stats.records == 2


def test_deeply_nested_json_is_one_report(tmp_path: Path) -> None:
    """A line nested past the recursion limit is reported, not raised."""
    path = tmp_path / "t.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n" + _line(["1" * 16]) + "\n")
    batches, problems, messages = _read(path)
    assert messages == [f"groundwire: {path}:1: skipped: JSON nested too deeply"]
    assert len(batches) == 1 and problems.stats.records == 2


def test_nul_padding_is_stripped_but_what_follows_it_is_judged(tmp_path: Path) -> None:
    """NULs before a record (copytruncate) are dropped; text after them is still a bad line."""
    path = tmp_path / "t.jsonl"
    path.write_text("\0\0XX\n\0" + _line(["1" * 16]) + "\n\0\0\n")
    batches, problems, messages = _read(path)
    assert [b.where for b in batches] == [f"{path}:2"]
    assert messages == [
        f"groundwire: {path}:1: skipped: not valid JSON (Expecting value at column 1)"
    ]
    assert problems.stats.records == 2


def test_counters_places_and_progress(tmp_path: Path) -> None:
    """Spans add up over lines, metrics lines count as other records, each batch is `file:line`,
    and progress is the bytes consumed while reading."""
    metrics = json.dumps({"resourceMetrics": []})
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join([_line(["1" * 16, "2" * 16]), metrics, "", _line(["3" * 16]), metrics]) + "\n"
    )
    problems = Problems(stream=io.StringIO())
    batches = read_file(path, problems)
    first = next(batches)
    assert problems.stats.file_position == path.stat().st_size
    rest = list(batches)
    assert [b.where for b in [first, *rest]] == [f"{path}:1", f"{path}:4"]
    stats = problems.stats
    assert (stats.records, stats.spans, stats.other_records, stats.bad_records) == (4, 3, 2, 0)
    assert (stats.file_position, stats.bytes_done) == (0, path.stat().st_size)


def test_a_traces_line_is_not_judged_as_logs(tmp_path: Path) -> None:
    """A traces line carrying a stray `resourceLogs` key reads as traces (unknown keys beside
    spans are ignored, as the protobuf JSON mapping says)."""
    data = json.loads(_line(["1" * 16]))
    data["resourceLogs"] = 3
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(data) + "\n")
    batches, problems, messages = _read(path)
    assert messages == [] and [len(b.spans) for b in batches] == [1]
    assert problems.stats.log_records == 0


def test_a_logs_line_with_no_records_yields_nothing(tmp_path: Path) -> None:
    """A logs request with no log records is counted as another record and yields no batch."""
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"resourceLogs": []}) + "\n")
    batches, problems, messages = _read(path)
    assert batches == [] and messages == []
    assert (problems.stats.records, problems.stats.other_records) == (1, 1)
