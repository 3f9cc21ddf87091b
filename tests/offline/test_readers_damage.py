"""Readers: cut or corrupt gzip/zstd streams lose only what the damage destroyed, said once."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.offline.readers import BadRecordError, Problems, read_spans
from tests.offline._traces import record_turns, write_groundwire_jsonl, write_protobuf

DAMAGE = re.compile(
    r"^groundwire: (?P<file>\S+): (?P<codec>gzip|zstd) stream ends early after line "
    r"(?P<line>[\d,]+) \(byte (?P<byte>[\d,]+)\); (?P<read>[\d,]+) lines read$"
)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 turns, one span per line (120 lines)."""
    folder = tmp_path_factory.mktemp("damage")
    return write_groundwire_jsonl(record_turns(40), folder / "t.jsonl", batch=1)


def _zstd_streamed(data: bytes) -> bytes:
    """zstd as a streaming writer makes it: one block flushed per line (like a live exporter)."""
    out = io.BytesIO()
    writer = zstandard.ZstdCompressor().stream_writer(out, closefd=False)
    for line in data.splitlines(keepends=True):
        writer.write(line)
        writer.flush(zstandard.FLUSH_BLOCK)
    writer.close()
    return out.getvalue()


def _read(path: Path) -> tuple[list[str], Problems, str]:
    stream = io.StringIO()
    problems = Problems(stream=stream)
    ids = [span.span_id for batch in read_spans([path], problems) for span in batch.spans]
    return ids, problems, stream.getvalue()


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_cut_stream_reads_every_line_before_the_cut_and_says_so_once(
    plain: Path, tmp_path: Path, codec: str
) -> None:
    """A stream cut at two thirds: every complete line before the cut is read, the damage is one
    message with file, line count and byte offset, counted in `damaged_files`."""
    data = plain.read_bytes()
    packed = gzip.compress(data) if codec == "gzip" else _zstd_streamed(data)
    cut = tmp_path / f"cut.jsonl.{codec}"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    ids, problems, out = _read(cut)
    (message,) = out.splitlines()
    match = DAMAGE.match(message)
    assert match, message
    lines = int(match["line"].replace(",", ""))
    assert match["file"] == str(cut) and match["codec"] == codec and match["read"] == match["line"]
    assert int(match["byte"].replace(",", "")) == len(b"".join(data.splitlines(True)[:lines]))
    assert lines > 40
    full, _, _ = _read(plain)
    assert ids == full[:lines]
    assert problems.stats.damaged_files == 1 and problems.stats.bad_records == 1


def test_corrupt_gzip_trailer_keeps_every_line_and_names_the_crc(
    plain: Path, tmp_path: Path
) -> None:
    """A flipped CRC in the gzip trailer: all lines read; the damage in the decoder's words."""
    packed = bytearray(gzip.compress(plain.read_bytes()))
    packed[-8] ^= 0xFF
    bad = tmp_path / "crc.jsonl.gz"
    bad.write_bytes(bytes(packed))
    ids, problems, out = _read(bad)
    assert len(ids) == 120
    assert out.strip() == (
        f"groundwire: {bad}: gzip stream is damaged (CRC check failed "
        + out.split("CRC check failed ")[1].split(")")[0]
        + ") after line 120 (byte "
        + f"{len(plain.read_bytes()):,}); 120 lines read"
    )
    assert problems.stats.damaged_files == 1


def test_corrupt_zstd_block_is_reported_not_raised(plain: Path, tmp_path: Path) -> None:
    """Garbage inside a zstd frame is a decoder error: reported as damage, lines before it read."""
    packed = bytearray(_zstd_streamed(plain.read_bytes()))
    middle = len(packed) // 2
    packed[middle : middle + 16] = b"\xff" * 16
    bad = tmp_path / "bad.jsonl.zst"
    bad.write_bytes(bytes(packed))
    ids, problems, out = _read(bad)
    assert problems.stats.damaged_files == 1
    assert f"{bad}: zstd stream is damaged (" in out
    assert 0 < len(ids) < 120


def test_cut_gzip_protobuf_counts_messages(tmp_path: Path) -> None:
    """A cut gzip protobuf file: whole messages before the cut read; damage counted in messages."""
    spans = record_turns(30)
    body = write_protobuf(spans, tmp_path / "t.pb", framing="fixed32", batch=1).read_bytes()
    cut = tmp_path / "cut.pb.gz"
    packed = gzip.compress(body)
    cut.write_bytes(packed[: len(packed) // 2])
    ids, problems, out = _read(cut)
    assert re.fullmatch(
        rf"groundwire: {re.escape(str(cut))}: gzip stream ends early at byte [\d,]+; "
        rf"{len(ids)} messages read\n",
        out,
    )
    assert 0 < len(ids) < 90 and problems.stats.damaged_files == 1


def test_strict_turns_damage_into_bad_record_error_not_eof(plain: Path, tmp_path: Path) -> None:
    """In strict mode the damage raises the documented BadRecordError, never EOFError."""
    packed = gzip.compress(plain.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[:-100])
    with pytest.raises(BadRecordError) as caught:
        list(read_spans([cut], Problems(strict=True)))
    assert caught.value.where == str(cut) and "gzip stream ends early" in caught.value.message


def test_rescore_of_a_cut_gzip_scores_what_was_read_without_aborted(
    plain: Path, tmp_path: Path
) -> None:
    """`groundwire rescore cut.jsonl.gz` no longer prints a bare "Aborted.": it writes the turns
    read before the cut and names the damage (issue 16)."""
    packed = gzip.compress(plain.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    out = tmp_path / "s.jsonl"
    result = CliRunner().invoke(
        app, ["rescore", str(cut), "-e", "quoted_spans", "-o", str(out), "-q"]
    )
    assert "Aborted" not in result.output
    assert f"{cut}: gzip stream ends early after line" in result.stderr
    assert len(out.read_text().splitlines()) >= 20
