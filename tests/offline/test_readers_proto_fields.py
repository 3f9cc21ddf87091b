"""OTLP protobuf, message by message: spans decode to exact values, each frame is told apart as
traces, logs, metrics or nothing, and bytes that are none of them say why."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData
from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from groundwire.offline.readers import Problems, read_spans, spans_from_message
from groundwire.offline.readers._otlp_proto import Decoded, decode_message

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
SPAN = bytes.fromhex("b7ad6b7169203331")
PARENT = bytes.fromhex("00f067aa0ba902b7")


def _traces(count: int = 1, **fields: object) -> TracesData:
    message = TracesData()
    group = message.resource_spans.add()
    group.resource.attributes.add(key="service.name").value.string_value = "svc"
    scope_spans = group.scope_spans.add()
    scope_spans.scope.name = "lib"
    for index in range(count):
        values = {"trace_id": TRACE, "span_id": bytes([index + 1]) * 8, "name": f"s{index}"}
        scope_spans.spans.add(**{**values, **fields})
    return message


def test_a_protobuf_span_decodes_every_field() -> None:
    """Ids as hex, times, attributes of every kind (arrays as tuples), resource and scope."""
    message = _traces(
        span_id=SPAN,
        parent_span_id=PARENT,
        start_time_unix_nano=5,
        end_time_unix_nano=9,
        flags=0x300,
    )
    span = message.resource_spans[0].scope_spans[0].spans[0]
    span.status.code = 2
    span.attributes.add(key="s").value.string_value = "x"
    span.attributes.add(key="i").value.int_value = 3
    array = span.attributes.add(key="a").value.array_value
    array.values.add().double_value = 0.5
    array.values.add().bool_value = True
    kv = span.attributes.add(key="m").value.kvlist_value.values.add(key="k")
    kv.value.bytes_value = b"\x01"
    span.attributes.add(key="none")
    (record,) = spans_from_message(message)
    assert (record.trace_id, record.span_id) == (TRACE.hex(), SPAN.hex())
    assert record.parent_span_id == PARENT.hex()
    assert (record.start_time_ns, record.end_time_ns) == (5, 9)
    assert dict(record.attributes) == {
        "s": "x",
        "i": 3,
        "a": (0.5, True),
        "m": {"k": b"\x01"},
        "none": None,
    }
    assert record.status_code == "ERROR" and record.parent_is_remote is True
    assert dict(record.resource) == {"service.name": "svc"}
    assert record.instrumentation_scope == "lib" and record.name == "s0"


@pytest.mark.parametrize(("code", "status"), [(0, "UNSET"), (1, "OK"), (2, "ERROR"), (3, "UNSET")])
def test_protobuf_status_codes(code: int, status: str) -> None:
    """Status codes 0-2 map to their names; a code this OTLP version does not know is UNSET."""
    message = _traces()
    message.resource_spans[0].scope_spans[0].spans[0].status.code = code
    (record,) = spans_from_message(message)
    assert record.status_code == status


@pytest.mark.parametrize(("flags", "remote"), [(0x100, False), (0x200, False), (0x300, True)])
def test_protobuf_remote_parent_needs_both_flag_bits(flags: int, remote: bool) -> None:
    """The parent is remote only when `HAS_IS_REMOTE` and `IS_REMOTE` are both set."""
    (record,) = spans_from_message(_traces(flags=flags))
    assert record.parent_is_remote is remote


def test_protobuf_span_defaults() -> None:
    """No parent, no end time, no scope name: None each; no status: UNSET."""
    message = _traces()
    message.resource_spans[0].scope_spans[0].scope.name = ""
    (record,) = spans_from_message(message)
    assert record.parent_span_id is None and record.end_time_ns is None
    assert record.instrumentation_scope is None and record.status_code == "UNSET"
    assert record.parent_is_remote is False


def test_decode_tells_the_signals_apart() -> None:
    """Traces give spans, logs give log records, metrics and an empty message give neither."""
    traces = _traces(2)
    decoded = decode_message(traces.SerializeToString())
    assert decoded == Decoded(spans_from_message(traces), [], "traces")
    logs = LogsData()
    logs.resource_logs.add().scope_logs.add().log_records.add(time_unix_nano=3, body=None)
    decoded = decode_message(logs.SerializeToString())
    assert decoded.spans == [] and decoded.signal == "logs"
    assert [log.time_ns for log in decoded.logs] == [3]
    metrics = MetricsData()
    metric = metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="m")
    metric.gauge.data_points.add(as_int=1)
    assert decode_message(metrics.SerializeToString()) == Decoded([], [], "metrics")
    assert decode_message(b"") == Decoded([], [], None)
    assert decode_message(b"\x0a\x00") == Decoded([], [], None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x0a\xff", "not valid protobuf ("),
        (
            _traces(trace_id=b"\x01" * 3, span_id=SPAN).SerializeToString(),
            "span 0 has a 3-byte trace_id and a 8-byte span_id (expected 16 and 8)",
        ),
        (
            _traces(trace_id=TRACE, span_id=b"\x01" * 4).SerializeToString(),
            "span 0 has a 16-byte trace_id and a 4-byte span_id (expected 16 and 8)",
        ),
        (
            _traces(parent_span_id=b"\x01" * 5).SerializeToString(),
            "span 0 has a 5-byte parent_span_id",
        ),
        (b"\x78\x01", "no spans, and fields this OTLP version does not know (damaged?)"),
        (b"\x0a\x04\x0a\x02\x78\x01", "no spans, and fields this OTLP version does not know"),
    ],
)
def test_bytes_that_are_no_signal_say_why(body: bytes, message: str) -> None:
    """Invalid protobuf, wrong id sizes and unknown fields (at the top or nested) are errors."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        decode_message(body)
    assert str(caught.value).startswith(message), str(caught.value)


def test_the_second_span_with_a_bad_id_is_named() -> None:
    """The id check names the offending span's index."""
    message = _traces(2)
    message.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x02"
    with pytest.raises(ValueError, match=r"^span 1 has a 16-byte trace_id and a 1-byte span_id"):
        decode_message(message.SerializeToString())


def _framed(*bodies: bytes) -> bytes:
    return b"".join(len(body).to_bytes(4, "big") + body for body in bodies)


def test_protobuf_batches_counters_and_places(tmp_path: Path) -> None:
    """Each span or log frame is a batch placed `file@offset (message n)`; empty and metrics
    frames are counted as other records; every counter is exact."""
    logs = LogsData()
    logs.resource_logs.add().scope_logs.add().log_records.add(time_unix_nano=3)
    logs.resource_logs[0].scope_logs[0].log_records.add(time_unix_nano=4)
    bodies = [
        _traces(2).SerializeToString(),
        logs.SerializeToString(),
        b"",
        _traces(3).SerializeToString(),
        logs.SerializeToString(),
    ]
    path = tmp_path / "mixed.pb"
    path.write_bytes(_framed(*bodies))
    problems = Problems(stream=io.StringIO())
    batches = iter(read_spans([path], problems))
    first = next(batches)
    assert problems.stats.file_position == path.stat().st_size
    rest = list(batches)
    offsets = [0]
    for body in bodies:
        offsets.append(offsets[-1] + 4 + len(body))
    assert [b.where for b in [first, *rest]] == [
        f"{path}@{offsets[0]} (message 1)",
        f"{path}@{offsets[1]} (message 2)",
        f"{path}@{offsets[3]} (message 4)",
        f"{path}@{offsets[4]} (message 5)",
    ]
    assert [len(b.spans) for b in [first, *rest]] == [2, 0, 3, 0]
    assert [log.time_ns for log in rest[0].logs] == [3, 4]
    stats = problems.stats
    assert (stats.records, stats.spans, stats.other_records, stats.log_records) == (5, 5, 3, 4)
    assert stats.bad_records == 0


def test_a_frame_over_the_record_limit_is_skipped_by_offset(tmp_path: Path) -> None:
    """A frame larger than `max_record_bytes` is reported with its offset; the next one reads."""
    small, big = _traces(1).SerializeToString(), _traces(40).SerializeToString()
    path = tmp_path / "limit.pb"
    path.write_bytes(_framed(small, big, small))
    stream = io.StringIO()
    problems = Problems(stream=stream, max_record_bytes=len(small) + 10)
    batches = list(read_spans([path], problems))
    assert [len(b.spans) for b in batches] == [1, 1]
    offset = 4 + len(small)
    assert stream.getvalue() == (
        f"groundwire: {path}@{offset} (message 2): skipped: {4 + len(big):,} bytes: message size "
        f"{len(big):,} is over the limit of {len(small) + 10:,} bytes\n"
    )
    assert batches[1].where == f"{path}@{offset + 4 + len(big)} (message 3)"


def test_a_cut_last_frame_is_reported_at_its_offset(tmp_path: Path) -> None:
    """A plain file ending inside its last frame: one report with the frame's offset and number."""
    body = _traces(2).SerializeToString()
    path = tmp_path / "cut.pb"
    path.write_bytes(_framed(body, body)[:-5])
    stream = io.StringIO()
    problems = Problems(stream=stream)
    assert [len(b.spans) for b in read_spans([path], problems)] == [2]
    assert stream.getvalue() == (
        f"groundwire: {path}@{4 + len(body)} (message 2): skipped: file ends inside a message "
        f"({len(body) - 5} of {len(body)} bytes)\n"
    )
    assert (problems.stats.records, problems.stats.bad_records) == (2, 1)


def test_gzip_damage_before_the_first_whole_frame_counts_once(tmp_path: Path) -> None:
    """Two gzip protobuf files cut before their first whole frame: each is one damaged file and
    one record, with no messages read."""
    import gzip
    import random

    message = _traces(1)
    span = message.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.add(key="noise").value.bytes_value = random.Random(5).randbytes(200_000)
    packed = gzip.compress(_framed(message.SerializeToString()))
    paths = [tmp_path / "a.pb.gz", tmp_path / "b.pb.gz"]
    for path in paths:
        path.write_bytes(packed[: len(packed) // 2])
    stream = io.StringIO()
    problems = Problems(stream=stream)
    assert list(read_spans(paths, problems)) == []
    lines = stream.getvalue().splitlines()
    assert [line.split(": ", 2)[1] for line in lines] == [str(p) for p in paths]
    assert all(line.endswith("; 0 messages read") for line in lines), lines
    stats = problems.stats
    assert (stats.damaged_files, stats.records, stats.bad_records) == (2, 2, 2)
