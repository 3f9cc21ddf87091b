"""Readers judge each record: a damaged first or last record (log rotation, a stray line) is
reported with its place and skipped; format detection does not hang on the first line."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest

from groundwire.offline.readers import (
    FormatMismatchError,
    Problems,
    detect_format,
    open_source,
    read_spans,
)
from tests.offline._traces import (
    jaeger_traces,
    record_turns,
    write_groundwire_jsonl,
    write_jaeger_api,
    write_protobuf,
)


@pytest.fixture(scope="module")
def spans() -> list:  # type: ignore[type-arg]
    """Twelve recorded turns (36 spans), each trace written whole in one record."""
    return record_turns(12)


def _read(path: Path) -> tuple[list[str], Problems, list[str]]:
    stream = io.StringIO()
    problems = Problems(stream=stream)
    ids = [s.span_id for batch in read_spans([path], problems) for s in batch.spans]
    return ids, problems, stream.getvalue().splitlines()


def _ids(records: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """Span ids of OTLP/JSON lines (hex), in file order."""
    return [
        span["spanId"]
        for record in records
        for group in record["resourceSpans"]
        for scope in group["scopeSpans"]
        for span in scope["spans"]
    ]


@pytest.mark.parametrize("head", ["middle", "digits", "copytruncate"])
def test_otlp_json_rotation_cut_first_and_last_lines(
    spans: list,  # type: ignore[type-arg]
    tmp_path: Path,
    head: str,
) -> None:
    """A first line starting mid-record (any first byte, or NULs from copytruncate), a stray
    garbage line and a cut last line are each reported as file:line; every whole line is read."""
    lines = write_groundwire_jsonl(spans, tmp_path / "full.jsonl", batch=3).read_text()
    lines_list = lines.splitlines(keepends=True)
    first = lines_list[0]
    cut_first = {
        "middle": first[len(first) // 2 :],
        "digits": first[first.index('"startTimeUnixNano":"') + 21 :],
        "copytruncate": "\0" * 300 + first,
    }[head]
    body = [cut_first, *lines_list[1:6], "oops, a stray line\n", *lines_list[6:-1]]
    body.append(lines_list[-1][: len(lines_list[-1]) // 3])
    path = tmp_path / "rotated.jsonl"
    path.write_text("".join(body))
    with open_source(path) as source:
        assert detect_format(source) == "otlp-json"
    ids, problems, messages = _read(path)
    whole = [json.loads(line) for line in lines_list[1:-1]]
    if head == "copytruncate":
        whole.insert(0, json.loads(first))
    assert ids == _ids(whole)
    bad_lines = [1, 7, len(body)] if head != "copytruncate" else [7, len(body)]
    assert [m.split(": skipped")[0] for m in messages] == [
        f"groundwire: {path}:{n}" for n in bad_lines
    ]
    assert problems.stats.bad_records == len(bad_lines)


@pytest.mark.parametrize("framing", ["fixed32", "varint"])
def test_protobuf_rotation_cut_first_message_and_garbage_are_skipped_by_offset(
    spans: list,  # type: ignore[type-arg]
    tmp_path: Path,
    framing: str,
) -> None:
    """A protobuf file starting inside a message, with garbage between two messages and a cut last
    message: the framing is found again and every whole message is read; each damage is one
    report with its byte offset."""
    whole = write_protobuf(spans, tmp_path / "full.pb", framing=framing, batch=3).read_bytes()
    sizes = []
    for start in range(0, len(spans), 3):
        one = write_protobuf(spans[start : start + 3], tmp_path / "1.pb", framing=framing)
        sizes.append(len(one.read_bytes()))
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    garbage = bytes(range(200, 256)) * 3
    cut_head = whole[ends[0] // 2 : ends[4]] + garbage + whole[ends[4] : ends[-2]]
    cut_head += whole[ends[-2] : ends[-2] + sizes[-1] // 2]
    path = tmp_path / f"rotated.{framing}.pb"
    path.write_bytes(cut_head)
    with open_source(path) as source:
        assert detect_format(source) == "otlp-proto"
    ids, problems, messages = _read(path)
    expected = [format(s.context.span_id, "016x") for s in spans[3:-3]]
    assert ids == expected
    head, middle, tail = messages
    assert f"{path}@0 (message 1): skipped: {ends[0] - ends[0] // 2:,} bytes: no whole" in head
    offset = ends[4] - ends[0] // 2
    assert f"{path}@{offset} (message 6): skipped: {len(garbage):,} bytes: " in middle
    assert "file ends inside a message" in tail
    assert problems.stats.bad_records == 3


def test_jaeger_rotation_cut_and_damaged_trace_are_skipped(
    spans: list,  # type: ignore[type-arg]
    tmp_path: Path,
) -> None:
    """A Jaeger file starting inside a trace, with one damaged trace in the middle and a cut last
    trace: every whole trace is read, each damage reported with its line."""
    text = write_jaeger_api(spans, tmp_path / "api.json").read_text()
    starts = [i for i in range(len(text)) if text.startswith('{\n      "traceID"', i)]
    assert len(starts) == 12
    spans_5 = text.index('"spans": [', starts[5]) + 10
    damaged = text[:spans_5] + "#" + text[spans_5:]
    rotated = damaged[starts[0] + 100 : starts[-1] + 200]
    path = tmp_path / "rotated.json"
    path.write_text(rotated)
    with open_source(path) as source:
        assert detect_format(source) == "jaeger"
    ids, problems, messages = _read(path)
    traces = jaeger_traces(spans)
    want = [s["spanID"] for t in traces[1:5] + traces[6:11] for s in t["spans"]]
    assert ids == want
    first, middle, last = messages
    assert first.startswith(f"groundwire: {path}:1: skipped: not a whole trace")
    line_5 = rotated[: rotated.index("[#")].count("\n") + 1
    assert middle.startswith(f"groundwire: {path}:{line_5}")
    assert "not valid JSON" in middle and "not valid JSON" in last
    assert problems.stats.bad_records == 3


def test_jaeger_traces_one_per_line_read(spans: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """Jaeger traces written one per line (no `data` wrapper) are all read."""
    path = tmp_path / "traces.json"
    path.write_text("".join(json.dumps(t) + "\n" for t in jaeger_traces(spans)))
    ids, problems, _ = _read(path)
    assert len(ids) == 36 and problems.stats.bad_records == 0


def test_a_stray_first_line_does_not_decide_the_format(spans: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """A first line of plain text (which used to make the whole file unreadable) is one bad line."""
    good = write_groundwire_jsonl(spans, tmp_path / "good.jsonl", batch=3).read_text()
    path = tmp_path / "stray.jsonl"
    path.write_text("Traceback (most recent call last):\n" + good)
    ids, _, messages = _read(path)
    assert len(ids) == 36
    assert messages == [
        f"groundwire: {path}:1: skipped: not valid JSON (Expecting value at column 1)"
    ]


def test_explicit_format_that_the_file_contradicts_names_the_detected_one(
    spans: list,  # type: ignore[type-arg]
    tmp_path: Path,
) -> None:
    """Asking for Jaeger on an OTLP/JSON file raises FormatMismatchError naming what it is."""
    path = write_groundwire_jsonl(spans, tmp_path / "otlp.jsonl")
    with pytest.raises(FormatMismatchError) as caught:
        list(read_spans([path], Problems(), fmt="jaeger"))
    assert caught.value.detected == "otlp-json" and caught.value.requested == "jaeger"
    assert str(caught.value).startswith(f"{path} is OTLP/JSON (otlp-json), not Jaeger JSON")


def test_random_bytes_are_one_report_naming_the_stretch(tmp_path: Path) -> None:
    """A file of random bytes (looks binary, so protobuf) is scanned for messages and reported
    once with its size; nothing is read from it."""
    path = tmp_path / "noise.bin"
    path.write_bytes(random.Random(7).randbytes(256 * 1024))
    ids, problems, messages = _read(path)
    assert ids == [] and problems.stats.bad_records == 1
    assert messages == [
        f"groundwire: {path}@0 (message 1): skipped: 262,144 bytes: no whole message (cut by "
        "log rotation, or damaged), up to the end of the file"
    ]


def test_a_damaged_jaeger_wrapper_still_reads_the_traces(spans: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """`{"data": Z{...` (one flipped byte, found by the long fuzz run): the wrapper is reported,
    every trace after it is read."""
    text = write_jaeger_api(spans, tmp_path / "api.json").read_text()
    path = tmp_path / "wrapper.json"
    path.write_text(text.replace('"data": [', '"data": Z', 1))
    ids, problems, messages = _read(path)
    assert len(ids) == 36 and problems.stats.bad_records == 1
    assert messages[0].startswith(f"groundwire: {path}:1: skipped: the 'data' field holds no")


def test_binary_garbage_before_json_lines_does_not_make_it_protobuf(
    spans: list,  # type: ignore[type-arg]
    tmp_path: Path,
) -> None:
    """A stretch of binary garbage (control bytes) before OTLP/JSON lines: the lines that parse
    decide the format, so the garbage is one bad line and every record after it is read."""
    good = write_groundwire_jsonl(spans, tmp_path / "good.jsonl", batch=3).read_bytes()
    noise = bytes(b for b in random.Random(3).randbytes(20_000) if b != 0x0A)
    path = tmp_path / "noisy.jsonl"
    path.write_bytes(noise + b"\n" + good)
    with open_source(path) as source:
        assert detect_format(source) == "otlp-json"
    ids, problems, _ = _read(path)
    assert len(ids) == 36 and problems.stats.bad_records == 1
