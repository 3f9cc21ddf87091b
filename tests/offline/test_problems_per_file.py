"""`Problems` passes on at most `max_file_messages` bad records of one file, then one line
counting the rest; the counters still count every one, a damaged file's own message is always
passed on, and the limit starts again with each file (the same on the local and Ray engines:
tests/offline/test_ray_problems.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from groundwire.offline.readers import (
    MAX_FILE_MESSAGES,
    BadRecordError,
    Problems,
    read_spans,
)

_GOOD = (
    '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%032x", "spanId": "%016x"}]}]}]}'
)


def _file(path: Path, bad: int, good: int = 2) -> Path:
    """`good` one-span lines, then `bad` lines that are not JSON, then one more good line."""
    lines = [_GOOD % (n + 1, n + 1) for n in range(good)]
    lines += [f"bad {n}" for n in range(bad)] + [_GOOD % (99, 99)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _read(paths: list[Path], **options: object) -> tuple[list[str], Problems, int]:
    seen: list[str] = []
    problems = Problems(on_report=seen.append, **options)  # type: ignore[arg-type]
    spans = sum(len(batch.spans) for batch in read_spans(paths, problems))
    return seen, problems, spans


def test_past_the_limit_bad_records_are_counted_and_said_in_one_line(tmp_path: Path) -> None:
    """8 bad lines, limit 3: the first three messages, then "5 more bad records not shown";
    every bad line counted and every good line read."""
    path = _file(tmp_path / "a.jsonl", bad=8)
    seen, problems, spans = _read([path], max_file_messages=3)
    json_error = "skipped: not valid JSON (Expecting value at column 1)"
    assert seen[:3] == [f"{path}:{line}: {json_error}" for line in (3, 4, 5)]
    assert seen[3:] == [f"{path}: 5 more bad records not shown (only the first 3 of a file are)"]
    assert problems.stats.bad_records == 8 and spans == 3
    assert problems.stats.bad_examples == seen


def test_the_limit_starts_again_with_each_file_and_spares_the_damage(tmp_path: Path) -> None:
    """Two files over the limit each say their own count; a gzip file cut short still says so
    after its limit was reached; a file under the limit adds no counting line."""
    first = _file(tmp_path / "a.jsonl", bad=4)
    plain = _file(tmp_path / "b.jsonl", bad=5, good=40).read_bytes()
    packed = gzip.compress(plain)
    cut = tmp_path / "b.jsonl.gz"
    cut.write_bytes(packed[: len(packed) - 10])
    under = _file(tmp_path / "c.jsonl", bad=2)
    seen, problems, _ = _read([first, cut, under], max_file_messages=2)
    assert [line.split(":")[0] for line in seen] == [str(first)] * 3 + [str(cut)] * 4 + [
        str(under)
    ] * 2
    assert seen[2] == f"{first}: 2 more bad records not shown (only the first 2 of a file are)"
    assert seen[5].startswith(f"{cut}: gzip stream ends early after line 45")
    assert seen[6] == f"{cut}: 3 more bad records not shown (only the first 2 of a file are)"
    assert problems.stats.bad_records == 4 + 5 + 1 + 2 and problems.stats.damaged_files == 1


def test_the_default_limit_and_strict_mode(tmp_path: Path) -> None:
    """The default is `MAX_FILE_MESSAGES` (1,000); strict mode still raises at the first bad
    record, whatever the limit."""
    assert Problems().max_file_messages == MAX_FILE_MESSAGES == 1000
    path = _file(tmp_path / "a.jsonl", bad=3)
    with pytest.raises(BadRecordError, match=r"a\.jsonl:3: not valid JSON"):
        _read([path], strict=True, max_file_messages=0)


def test_a_file_damaged_before_its_first_record_is_counted_as_a_file(tmp_path: Path) -> None:
    """A gzip file cut right after its header (no byte of it to tell its format by) after a
    good file: two files read, one damaged, its message passed on."""
    good = _file(tmp_path / "a.jsonl", bad=0)
    cut = tmp_path / "b.jsonl.gz"
    cut.write_bytes(gzip.compress(_file(tmp_path / "b.jsonl", bad=0).read_bytes())[:10])
    seen, problems, spans = _read([good, cut])
    assert (problems.stats.files, problems.stats.damaged_files, spans) == (2, 1, 3)
    assert len(seen) == 1 and seen[0].startswith(f"{cut}: gzip stream ends early")
