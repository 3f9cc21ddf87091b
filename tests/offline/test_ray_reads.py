"""The Ray engine's reads and key ranges, run in this process (no Ray needed): a trace whole in
its range whatever file its spans came from, ranges in key order, each in `order_key` order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundwire.offline import rescore
from groundwire.offline._grouping import order_key
from groundwire.offline._ray_reads import READ_COUNTERS, key_range, range_count, read_ranges
from groundwire.offline._ray_scoring import assemble_range
from tests.offline._traces import record_turns, write_groundwire_jsonl

pytest.importorskip("pyarrow", reason="the ray extra (pyarrow) is not installed")


def test_key_ranges_are_in_key_order_and_cover_every_key() -> None:
    """Range numbers never go down as keys go up, and every key falls in 0 .. ranges - 1."""
    keys = sorted(order_key(f"{n:032x}") for n in range(2000))
    keys += ["00000000a", "ffffffffz"]
    keys.sort()
    for ranges in (1, 3, 16, 256):
        found = [key_range(key, ranges) for key in keys]
        assert found == sorted(found)
        assert found[0] == 0 and found[-1] == ranges - 1
    assert len({key_range(key, 16) for key in keys}) == 16, "CRC-32 keys fill every range"


def test_a_small_input_is_one_range_and_a_larger_one_many(tmp_path: Path) -> None:
    """A file of a few KB is one range (a task each would cost more than the work); 16 at
    least once there is 1 MB a range, more as the input grows (about 32 MB a range)."""
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"x" * 4096)
    assert range_count([str(small)]) == 1
    big = tmp_path / "big.jsonl"
    with big.open("wb") as file:
        file.truncate(20 * 2**20)
    assert range_count([str(big)]) == 16
    with big.open("wb") as file:
        file.truncate(1024 * 2**20)
    assert range_count([str(big)]) == 32


def test_reads_cut_into_ranges_assemble_into_the_local_engines_rows(tmp_path: Path) -> None:
    """Three files, a trace's spans spread over them (and a file listed twice: every span read
    twice; one read flushing its ranges every 2 KB), cut into 5 ranges: the assembled ranges, in
    range order, hold the local engine's turns in its order (`order_key`), each trace once, and
    the files' read counters."""
    spans = record_turns(24)
    files = [
        write_groundwire_jsonl(spans[:30], tmp_path / "a.jsonl", batch=4),
        write_groundwire_jsonl(spans[30:55], tmp_path / "b.jsonl", batch=3),
        write_groundwire_jsonl(spans[55:], tmp_path / "c.jsonl", batch=5),
    ]
    paths = [str(files[2]), str(files[0]), str(files[1]), str(files[0])]
    ranges = 5
    pieces: list[list[list[tuple[str, bytes]]]] = [[] for _ in range(ranges)]
    counters = []
    for number, path in enumerate(paths):
        out = list(read_ranges(path, None, False, ranges, 2048 if number == 1 else 2**25))
        assert len(out) % ranges == 1 and (len(out) > ranges + 1) == (number == 1)
        counters.append(json.loads(out[-1]))
        for index, piece in enumerate(out[:-1]):
            pieces[index % ranges].append(piece)
    assert [c["files"] for c in counters] == [1, 1, 1, 1]
    assert set(counters[0]) == set(READ_COUNTERS)
    assert sum(c["spans"] for c in counters) == len(spans) + 30
    turns: list[tuple[str, str]] = []
    for index in range(ranges):
        table, count = assemble_range((None, set()), *pieces[index])
        assert table.num_rows == count
        for row in table.column("turns").to_pylist():
            turns += [(turn["trace_id"], turn["span_id"]) for turn in json.loads(row)]
    local = tmp_path / "local.jsonl"
    rescore(files, ["quoted_spans"], local)
    rows = [json.loads(line) for line in local.read_text().splitlines()]
    assert turns == [(row["trace_id"], row["span_id"]) for row in rows]
    assert len(set(turns)) == 24
