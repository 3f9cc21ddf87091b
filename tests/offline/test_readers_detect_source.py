"""Opening and recognising trace files: formats told from content then name, exact errors for
empty and unknown files, zstd in many frames, and what damage says."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
import zstandard

from groundwire.offline.readers import (
    FormatMismatchError,
    Problems,
    detect_format,
    open_source,
    read_file,
    read_spans,
    sniff_format,
)
from groundwire.offline.readers._source import Damage, _detail

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
OTLP_LINE = json.dumps(
    {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": TRACE, "spanId": SPAN}]}]}]}
)
JAEGER_TRACE = {"traceID": TRACE, "spans": [{"traceID": TRACE, "spanID": SPAN}]}
JAEGER_LINE = json.dumps([JAEGER_TRACE])


def _detect(path: Path) -> str:
    with open_source(path) as source:
        return detect_format(source)


def _sniff(path: Path) -> str | None:
    with open_source(path) as source:
        return sniff_format(source)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("t.jsonl", "otlp-json"),
        ("T.JSONL", "otlp-json"),
        ("t.ndjson.gz", "otlp-json"),
        ("t.jsonl.gzip", "otlp-json"),
        ("t.jsonl.zst", "otlp-json"),
        ("t.jsonl.ZSTD", "otlp-json"),
        ("t.pb", "otlp-proto"),
        ("t.binpb.gz", "otlp-proto"),
        ("t.protobuf", "otlp-proto"),
        ("t.proto", "otlp-proto"),
    ],
)
def test_content_that_shows_no_format_falls_back_to_the_name(
    tmp_path: Path, name: str, fmt: str
) -> None:
    """Text that shows no format is read by its extension (compression suffixes ignored)."""
    path = tmp_path / name
    path.write_text("hello\n")
    assert _sniff(path) is None
    assert _detect(path) == fmt


def test_empty_and_unknown_files_are_named(tmp_path: Path) -> None:
    """An empty (or blank, NUL, BOM-only) file is empty; unknown text says how it starts."""
    for content in (b"", b" \n\t\r\n", b"\x00\x00\n", b"\xef\xbb\xbf\n"):
        path = tmp_path / "e.json"
        path.write_bytes(content)
        with pytest.raises(ValueError, match="is empty") as caught:
            _detect(path)
        assert str(caught.value) == f"{path} is empty"
    path = tmp_path / "notes.txt"
    path.write_text("hello, these are not traces at all\n")
    with pytest.raises(ValueError, match="is neither") as caught:
        _detect(path)
    assert str(caught.value) == (
        f"{path} is neither OTLP/JSON, OTLP protobuf nor Jaeger JSON "
        "(it starts with b'hello, these are not')"
    )


@pytest.mark.parametrize(
    ("content", "fmt"),
    [
        (json.dumps([JAEGER_TRACE]) + "\n", "jaeger"),
        (json.dumps({"data": [JAEGER_TRACE]}) + "\n", "jaeger"),
        ("[]\n[1]\n" + OTLP_LINE + "\n", "otlp-json"),
        (json.dumps({"resourceLogs": []}) + "\n", "otlp-json"),
        (json.dumps({"resource_metrics": []}) + "\n", "otlp-json"),
        ('{"x": 1}\n' + json.dumps({"spans": []}) + "\n", "jaeger"),
        # Two Jaeger lines outvote one OTLP line; the cut last line does not vote.
        (JAEGER_LINE + "\n" + OTLP_LINE + "\n" + JAEGER_LINE, "jaeger"),
        (OTLP_LINE + "\n" + JAEGER_LINE + "\n" + JAEGER_LINE + "\n", "jaeger"),
        (OTLP_LINE, "otlp-json"),
    ],
)
def test_parsed_records_vote_on_the_format(tmp_path: Path, content: str, fmt: str) -> None:
    """Whole lines that parse as JSON records decide, by majority (one line alone counts)."""
    path = tmp_path / "t.json"
    path.write_text(content)
    assert _sniff(path) == fmt


def test_only_the_first_twenty_lines_vote(tmp_path: Path) -> None:
    """Records after the first 20 lines do not vote (a long file is decided by its start)."""
    path = tmp_path / "t.json"
    path.write_text(OTLP_LINE + "\n" + "[]\n" * 19 + (json.dumps([JAEGER_TRACE]) + "\n") * 5)
    assert _sniff(path) == "otlp-json"


@pytest.mark.parametrize(
    ("content", "fmt"),
    [
        (b'{"resourceSpans": [{"x": ', "otlp-json"),
        (b'{"traceID": "a", "spanID": ', "jaeger"),
        (b'{"a": "\\"traceID\\": x", "startTimeUnixNano": ', "otlp-json"),
        (b'{"operationName": "x", "traceId": ', "jaeger"),
        (b'{"trace_id": "x", "traceID": ', "otlp-json"),
    ],
)
def test_keys_decide_when_no_record_parses(tmp_path: Path, content: bytes, fmt: str) -> None:
    """A file whose records are cut: the first key only one format uses decides (escaped quotes
    inside strings are not keys)."""
    path = tmp_path / "t.bin"
    path.write_bytes(content)
    assert _sniff(path) == fmt


def test_control_bytes_mean_protobuf_at_one_in_a_hundred(tmp_path: Path) -> None:
    """With JSON keys seen, control bytes mean protobuf only at 1 per 100 bytes or more."""
    head = b'{"resourceSpans": "\x01'
    for size, fmt in ((100, "otlp-proto"), (101, "otlp-json")):
        path = tmp_path / f"t{size}.bin"
        path.write_bytes(head + b"a" * (size - len(head)))
        assert _sniff(path) == fmt, size
    path = tmp_path / "nokeys.bin"
    path.write_bytes(b"a" * 5000 + b"\x02")
    assert _sniff(path) == "otlp-proto"
    path.write_bytes(b"a" * 5000 + b"\x0a\x0d\x09")
    assert _sniff(path) is None


def test_a_byte_order_mark_does_not_hide_the_records(tmp_path: Path) -> None:
    """A UTF-8 BOM before the first record is ignored by detection."""
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + OTLP_LINE.encode() + b"\n")
    assert _sniff(path) == "otlp-json"


def test_format_mismatch_names_both_formats(tmp_path: Path) -> None:
    """The error carries the path and both formats, and says how to read the file."""
    path = tmp_path / "j.json"
    path.write_text(json.dumps({"data": [JAEGER_TRACE]}))
    with pytest.raises(FormatMismatchError) as caught:
        list(read_file(path, Problems(), fmt="otlp-json"))
    error = caught.value
    assert (error.path, error.requested, error.detected) == (path, "otlp-json", "jaeger")
    assert str(error) == (
        f"{path} is Jaeger JSON (jaeger), not OTLP/JSON (otlp-json); read it as jaeger, or leave "
        "the format out to detect it"
    )


def test_an_explicit_format_reads_what_shows_nothing_and_unknown_formats_fail(
    tmp_path: Path,
) -> None:
    """An explicit format reads a file whose content shows none; an unknown name is an error."""
    path = tmp_path / "t.dat"
    path.write_text("x" * 70_000 + "\n" + OTLP_LINE + "\n")
    with open_source(path) as source:
        assert sniff_format(source) is None
    problems = Problems(stream=io.StringIO())
    batches = list(read_file(path, problems, fmt="otlp-json"))
    assert [len(b.spans) for b in batches] == [1]
    assert problems.stats.files == 1 and problems.stats.bad_records == 1
    with pytest.raises(ValueError, match="unknown trace format") as caught:
        list(read_file(path, Problems(), fmt="zipkin"))  # type: ignore[arg-type]
    assert str(caught.value) == (
        "unknown trace format 'zipkin'; expected one of ['otlp-json', 'otlp-proto', 'jaeger']"
    )


def test_unreadable_paths_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    """A directory and a missing file are bad records naming them; later files still read."""
    good = tmp_path / "g.jsonl"
    good.write_text(OTLP_LINE + "\n")
    stream = io.StringIO()
    problems = Problems(stream=stream)
    folder = tmp_path / "d"
    folder.mkdir()
    batches = list(read_spans([folder, tmp_path / "none.jsonl", good], problems))
    assert [len(b.spans) for b in batches] == [1]
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        f"groundwire: {folder}: skipped: {folder} is a directory; pass the trace files inside it"
    )
    assert lines[1] == (
        f"groundwire: {tmp_path / 'none.jsonl'}: skipped: cannot read the file: "
        "No such file or directory"
    )
    assert problems.stats.bad_records == 2 and problems.stats.files == 1
    assert problems.stats.bytes_done == good.stat().st_size
    list(read_spans([good, good], problems))
    assert problems.stats.bytes_done == 3 * good.stat().st_size
    assert (problems.stats.files, problems.stats.file_position) == (3, 0)


def test_a_cut_gzip_protobuf_after_another_file_counts_its_own_messages(tmp_path: Path) -> None:
    """The damage report of a second file counts only the messages read from that file."""
    import gzip

    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    message = TracesData()
    spans = message.resource_spans.add().scope_spans.add().spans
    spans.add(trace_id=bytes.fromhex(TRACE), span_id=bytes.fromhex(SPAN))
    body = message.SerializeToString()
    framed = (len(body).to_bytes(4, "big") + body) * 3
    whole = tmp_path / "whole.pb"
    whole.write_bytes(framed)
    packed = gzip.compress(framed * 400)
    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    stream = io.StringIO()
    problems = Problems(stream=stream)
    batches = list(read_spans([whole, cut], problems))
    read_from_cut = len(batches) - 3
    assert 0 < read_from_cut < 1200
    assert stream.getvalue().endswith(f"; {read_from_cut:,} messages read\n")


def test_a_gzip_cut_before_any_record_is_one_damaged_file(tmp_path: Path) -> None:
    """A gzip file cut so early that nothing decodes is one damaged file, not a format error."""
    import gzip

    packed = gzip.compress((OTLP_LINE + "\n").encode() * 50)
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(packed[:12])
    stream = io.StringIO()
    problems = Problems(stream=stream)
    assert list(read_spans([path], problems)) == []
    assert stream.getvalue() == (
        f"groundwire: {path}: gzip stream ends early after line 0 (byte 0); 0 lines read\n"
    )
    stats = problems.stats
    assert (stats.files, stats.damaged_files, stats.bad_records, stats.records) == (1, 1, 1, 1)


# --- zstd ----------------------------------------------------------------------------------------


def test_zstd_in_many_frames_and_large_frames_reads_whole(tmp_path: Path) -> None:
    """Concatenated zstd frames (small and over a megabyte each) decode to the original bytes."""
    small = (OTLP_LINE + "\n").encode()
    large = small * 20_000
    compressor = zstandard.ZstdCompressor()
    path = tmp_path / "t.jsonl.zst"
    path.write_bytes(
        compressor.compress(small) + compressor.compress(small) + compressor.compress(large)
    )
    with open_source(path) as source:
        assert source.compression == "zstd"
        assert source.stream.read() == small * 2 + large
        assert source.damage is None
    problems = Problems()
    assert sum(len(b.spans) for b in read_spans([path], problems)) == 20_002


def test_a_cut_zstd_frame_is_damage_after_the_last_whole_line(tmp_path: Path) -> None:
    """A zstd file cut inside its last frame: the bytes before it are delivered and the damage
    says it was cut short, with the line and byte counts."""
    data = (OTLP_LINE + "\n").encode()
    compressor = zstandard.ZstdCompressor()
    path = tmp_path / "cut.jsonl.zst"
    second = compressor.compress(data * 3)
    path.write_bytes(compressor.compress(data) + second[: len(second) // 2])
    with open_source(path) as source:
        assert source.stream.read() == data
        assert source.damage == Damage(
            True, "the last zstd frame is cut short", len(data), 1, len(data), "zstd"
        )
    path.write_bytes(compressor.compress(data * 2) + second[:-3])
    with open_source(path) as source:
        assert source.stream.read() == data * 2
        damage = source.damage
    assert damage == Damage(
        True, "the last zstd frame is cut short", 2 * len(data), 2, 2 * len(data), "zstd"
    )


def test_without_zstandard_a_zstd_file_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where `zstandard` is not installed, a zstd file is one bad record saying what to do."""
    path = tmp_path / "t.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(b"x\n"))
    monkeypatch.setitem(sys.modules, "zstandard", None)
    stream = io.StringIO()
    problems = Problems(stream=stream)
    assert list(read_spans([path], problems)) == []
    assert stream.getvalue() == (
        f"groundwire: {path}: skipped: {path} is zstd-compressed (the Collector's file exporter "
        "`compression: zstd`); install `zstandard` to read it, or decompress it first with "
        "`zstd -d`\n"
    )


# --- damage wording ------------------------------------------------------------------------------


def test_damage_describes_itself_in_lines_or_in_the_readers_unit() -> None:
    """One sentence per kind of damage: cut, corrupt, or an unreadable plain file."""
    cut = Damage(True, "eof", 1234, 5, 1200, "gzip")
    assert cut.describe() == "gzip stream ends early after line 5 (byte 1,200); 5 lines read"
    assert cut.describe(unit="messages", count=7) == (
        "gzip stream ends early at byte 1,234; 7 messages read"
    )
    assert cut.describe(unit="messages") == "gzip stream ends early at byte 1,234; 0 messages read"
    corrupt = Damage(False, "CRC check failed", 10, 1, 9, "zstd")
    assert corrupt.describe() == (
        "zstd stream is damaged (CRC check failed) after line 1 (byte 9); 1 lines read"
    )
    plain = Damage(False, "Input/output error", 5000, 40, 4990, None)
    assert plain.describe() == (
        "file cannot be read further (Input/output error) after line 40 (byte 4,990); 40 lines read"
    )
    assert Damage(True, "x", 1, 0, 0, None).describe() == (
        "file cannot be read further (x) after line 0 (byte 0); 0 lines read"
    )


def test_error_details_are_the_errors_own_words() -> None:
    """An OS error gives its strerror; others their message, else their class name."""
    assert _detail(OSError(5, "Input/output error")) == "Input/output error"
    assert _detail(OSError("plain")) == "plain"
    assert _detail(ValueError("bad block")) == "bad block"
    assert _detail(ValueError()) == "ValueError"


MISLEADING = '{"data": [], "x": {"traceId": 1}}'
"""A record that votes Jaeger (`data`) while its first format key is OTLP's (`traceId`)."""


def test_records_outvote_keys_and_the_cut_last_piece_does_not_vote(tmp_path: Path) -> None:
    """Blank lines do not stop the vote; a BOM does not hide the first record; the piece after
    the last newline (maybe cut) does not vote, so the keys decide there."""
    cases = [
        ("\n" + MISLEADING + "\n", "jaeger"),
        ("\ufeff" + MISLEADING + "\n", "jaeger"),
        ("[]\n" + MISLEADING, "otlp-json"),
    ]
    for content, fmt in cases:
        path = tmp_path / "t.json"
        path.write_text(content, encoding="utf-8")
        assert _sniff(path) == fmt, content
