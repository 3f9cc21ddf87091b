"""Readers: every format read back to the same spans and turns; bad records reported by line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import zstandard

from groundwire.assembly import SpanRecord, turns_from_spans
from groundwire.offline.readers import (
    BadRecordError,
    Problems,
    detect_format,
    open_source,
    read_spans,
)
from tests.offline._traces import (
    gzip_copy,
    record_turns,
    write_groundwire_jsonl,
    write_jaeger_api,
    write_jaeger_download,
    write_protobuf,
    write_protobuf_json,
)


def _records(path: Path, problems: Problems | None = None) -> list[SpanRecord]:
    return [span for batch in read_spans([path], problems or Problems()) for span in batch.spans]


def _key(record: SpanRecord) -> tuple[object, ...]:
    """Everything a reader must carry over, attributes and resource as plain dicts."""
    return (
        record.trace_id,
        record.span_id,
        record.parent_span_id,
        record.name,
        record.start_time_ns,
        record.end_time_ns,
        dict(record.attributes),
        record.status_code,
        dict(record.resource),
        record.instrumentation_scope,
    )


@pytest.fixture(scope="module")
def spans() -> list:  # type: ignore[type-arg]
    """Four recorded turns (12 spans)."""
    return record_turns(4)


@pytest.fixture(scope="module")
def expected(spans: list) -> list[tuple[object, ...]]:  # type: ignore[type-arg]
    """The spans as the SDK normalises them."""
    return sorted(_key(SpanRecord.from_readable(span)) for span in spans)


def test_groundwire_jsonl_round_trips_spans_split_across_lines(
    spans: list,
    expected: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """What JsonLinesSpanExporter writes reads back to identical span records, gzip or not."""
    path = write_groundwire_jsonl(spans, tmp_path / "t.jsonl", batch=2)
    assert len(path.read_text().splitlines()) == 6
    assert sorted(map(_key, _records(path))) == expected
    assert sorted(map(_key, _records(gzip_copy(path)))) == expected


def test_protobuf_json_mapping_with_base64_ids_reads_the_same(
    spans: list,
    expected: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """Plain protobuf JSON of real OTLP messages (base64 ids, string int64s) is accepted."""
    path = write_protobuf_json(spans, tmp_path / "b64.jsonl")
    first = json.loads(path.read_text().splitlines()[0])
    trace_id = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    assert len(trace_id) == 24 and trace_id.endswith("==")
    assert sorted(map(_key, _records(path))) == expected


@pytest.mark.parametrize("framing", ["fixed32", "varint"])
def test_protobuf_files_in_both_framings(
    spans: list,
    expected: list,
    tmp_path: Path,
    framing: str,  # type: ignore[type-arg]
) -> None:
    """The Collector's 4-byte size prefix and the delimited varint prefix both read, gzip too."""
    path = write_protobuf(spans, tmp_path / f"t.{framing}.pb", framing=framing)
    with open_source(path) as source:
        assert detect_format(source) == "otlp-proto"
    assert sorted(map(_key, _records(path))) == expected
    assert sorted(map(_key, _records(gzip_copy(path)))) == expected


def test_zstd_compressed_jsonl_reads(spans: list, expected: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """The Collector's `compression: zstd` output is decompressed transparently."""
    plain = write_groundwire_jsonl(spans, tmp_path / "t.jsonl")
    packed = tmp_path / "t.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    assert sorted(map(_key, _records(packed))) == expected


def _turn_view(spans: list[SpanRecord]) -> list[tuple[object, ...]]:
    return sorted(
        (
            t.trace_id,
            t.span_id,
            t.query,
            t.answer,
            tuple(t.context_texts),
            t.attributes.get("service.name"),
        )
        for t in turns_from_spans(spans)
    )


@pytest.mark.parametrize("writer", [write_jaeger_api, write_jaeger_download])
def test_jaeger_json_gives_the_same_turns(
    spans: list,
    tmp_path: Path,
    writer: object,  # type: ignore[type-arg]
) -> None:
    """Jaeger's API response and UI download give the turns the OTLP spans give."""
    path = writer(spans, tmp_path / "jaeger.json")  # type: ignore[operator]
    with open_source(path) as source:
        assert detect_format(source) == "jaeger"
    read = _records(path)
    direct = [SpanRecord.from_readable(span) for span in spans]
    want = _turn_view(direct)
    if writer is write_jaeger_download:
        want = [view for view in want if view[0] == read[0].trace_id]
    assert _turn_view(read) == want
    by_id = {r.span_id: r for r in direct}
    for record in read:
        source = by_id[record.span_id]
        assert record.parent_span_id == source.parent_span_id
        assert record.instrumentation_scope == "tests.offline"
        assert record.resource["service.name"] == "rag-app"
        assert record.start_time_ns == source.start_time_ns // 1000 * 1000


def test_jaeger_bare_trace_object_and_short_ids(tmp_path: Path) -> None:
    """A bare Jaeger trace object reads, and 64-bit trace ids are left-padded to 32 digits."""
    trace = {
        "traceID": "665b3cc06e48f122",
        "spans": [
            {
                "traceID": "665b3cc06e48f122",
                "spanID": "665b3cc06e48f122",
                "operationName": "GET",
                "references": [],
                "startTime": 1555385360015391,
                "duration": 5,
                "tags": [{"key": "error", "type": "bool", "value": True}],
                "processID": "p1",
            }
        ],
        "processes": {"p1": {"serviceName": "svc", "tags": []}},
    }
    path = tmp_path / "one.json"
    path.write_text(json.dumps(trace))
    (record,) = _records(path)
    assert record.trace_id == "0000000000000000665b3cc06e48f122"
    assert record.status_code == "ERROR"
    assert record.end_time_ns == (1555385360015391 + 5) * 1000


def test_collector_file_exporter_line(tmp_path: Path) -> None:
    """A line as the Collector's file exporter writes it (spec example shape) gives its spans."""
    path = Path(__file__).parents[1] / "data" / "traces" / "collector_rag.jsonl"
    problems = Problems()
    records = _records(path, problems)
    assert problems.stats.bad_records == 0
    assert problems.stats.other_records == 1
    assert {r.name for r in records} == {"rag", "retrieve", "llm"}
    (turn,) = turns_from_spans(records)
    assert turn.query == "What colour is the sky?"
    assert turn.context_texts == ["The sky is blue on clear days."]
    assert turn.attributes.get("service.name") == "collector-app"
    root = next(r for r in records if r.name == "rag")
    assert root.status_code == "ERROR" and root.instrumentation_scope == "openinference.x"


def test_bad_lines_are_reported_with_file_and_line_and_skipped(
    spans: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """Invalid JSON and a non-request line are reported as file:line; the rest is read."""
    good = write_groundwire_jsonl(spans, tmp_path / "good.jsonl", batch=3).read_text()
    lines = good.splitlines()
    lines.insert(1, "{not json")
    lines.insert(
        3, json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]})
    )
    lines.insert(4, "")
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    stream = io.StringIO()
    problems = Problems(stream=stream)
    records = _records(path, problems)
    assert len(records) == len(spans)
    assert problems.stats.bad_records == 2
    assert problems.stats.records == len(lines) - 1
    messages = stream.getvalue().splitlines()
    assert messages[0].startswith(f"groundwire: {path}:2: skipped: not valid JSON")
    assert f"{path}:4: skipped: not a valid OTLP/JSON traces request" in messages[1]
    assert "traceId" in messages[1]


def test_strict_makes_the_first_bad_line_fatal(tmp_path: Path) -> None:
    """With strict, a bad line raises BadRecordError naming the file and line."""
    path = tmp_path / "bad.jsonl"
    path.write_text('{"resourceSpans": []}\n[1, 2]\n')
    with pytest.raises(BadRecordError) as caught:
        _records(path, Problems(strict=True))
    assert caught.value.where == f"{path}:2"


def test_truncated_protobuf_and_unreadable_files_are_reported(
    spans: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """A cut-off protobuf message, a missing file and a text file each give one clear report."""
    full = write_protobuf(spans, tmp_path / "t.pb", framing="fixed32").read_bytes()
    cut = tmp_path / "cut.pb"
    cut.write_bytes(full[:-10])
    text = tmp_path / "notes.txt"
    text.write_text("hello, these are not traces\n")
    stream = io.StringIO()
    problems = Problems(stream=stream)
    records = _records(cut, problems)
    assert 0 < len(records) < len(spans)
    list(read_spans([tmp_path / "missing.jsonl", text], problems))
    out = stream.getvalue()
    assert "file ends inside a message" in out
    assert "missing.jsonl: skipped: cannot read the file" in out
    assert "notes.txt: skipped:" in out and "neither OTLP/JSON" in out
    assert problems.stats.bad_records == 3


def test_malformed_jaeger_array_reports_the_line(spans: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """A broken element in a Jaeger data array is reported with its line; earlier traces read."""
    text = write_jaeger_api(spans, tmp_path / "j.json").read_text()
    cut = text.rfind('"traceID"')
    broken = tmp_path / "broken.json"
    broken.write_text(text[:cut] + '"traceID": oops' + text[cut + 9 :])
    stream = io.StringIO()
    problems = Problems(stream=stream)
    records = _records(broken, problems)
    assert len({r.trace_id for r in records}) == 3
    line = text[:cut].count("\n") + 1
    assert f"{broken}:{line} (data[3]): skipped: not valid JSON" in stream.getvalue()


def test_jaeger_key_order_and_error_responses(spans: list, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """`data` after other keys still streams; a bare trace mentioning "data" stays one trace;
    an error response with no data is reported, not crashed on."""
    traces = json.loads(write_jaeger_api(spans, tmp_path / "api.json").read_text())["data"]
    late = tmp_path / "late.json"
    late.write_text(json.dumps({"total": 4, "limit": 0, "errors": None, "data": traces}))
    assert len({r.trace_id for r in _records(late)}) == 4
    bare = dict(traces[0])
    bare["spans"][0]["tags"].append({"key": "note", "type": "string", "value": '"data": [1]'})
    one = tmp_path / "bare.json"
    one.write_text(json.dumps(bare))
    assert len(_records(one)) == 3
    failed = tmp_path / "failed.json"
    failed.write_text(json.dumps({"data": None, "errors": [{"code": 500, "msg": "down"}]}))
    stream = io.StringIO()
    assert _records(failed, Problems(stream=stream)) == []
    assert f"{failed}:1: skipped: the 'data' field holds no list of traces" in stream.getvalue()
