"""The Ray engine's driver with a task per whole key range (`slicing`: 4 ranges a worker or
more): a range's rows are handed on in pieces of at most 4 chunks, as slices were, so the driver
decodes (and holds) one piece at a time whatever a range's size; the rows are those of the
slice plan."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline._ray_reads import ReadRanges
from groundwire.offline._ray_scoring import score_blocks
from tests.offline._ray_local import local_ray as _local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

_CHUNK = 5
"""Traces a chunk: a piece handed on holds at most 4 chunks (20 traces)."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance (2 CPUs) for the module."""
    with _local_ray(ray):
        yield


def _pieces(path: Path, range_count: int) -> list[dict[str, list[Any]]]:
    """What `score_blocks` hands on for `path` on two workers, planned for `range_count`
    ranges (the input itself is one range: `slicing` decides by the count it is given)."""
    reads = ReadRanges(ray, [str(path)], fmt=None, strict=False)
    list(reads.counters())
    assert reads.ranges == 1, "a small input: one key range"
    return list(
        score_blocks(
            ray,
            reads.take(),
            context=(None, frozenset()),
            run=f"whole-{range_count}",
            spec=["quoted_spans"],
            concurrency=4,
            parts=None,
            chunk_size=_CHUNK,
            workers=2,
            range_count=range_count,
        )
    )


def _rows(pieces: list[dict[str, list[Any]]]) -> list[tuple[Any, ...]]:
    """Every row handed on, its scores without their durations (timings differ run to run)."""
    rows = []
    for piece in pieces:
        for kind, payload, turns, scores in zip(*piece.values(), strict=True):
            scored = [{**each, "durations": None} for each in json.loads(scores)]
            rows.append((kind, payload, turns, scored))
    return rows


def test_a_whole_range_is_handed_on_in_pieces_of_four_chunks(
    local_ray: None, tmp_path: Path
) -> None:
    """Planned for 8 ranges on 2 workers (a task per whole range), the range's 50 traces come
    back in pieces of 20, 20 and 10, the same rows in the same order as the slice plan's."""
    path = write_groundwire_jsonl(record_turns(50), tmp_path / "t.jsonl", batch=3)
    whole = _pieces(path, range_count=8)
    sliced = _pieces(path, range_count=1)  # slices of at most 20, at least one a worker
    assert [len(piece["kind"]) for piece in whole] == [20, 20, 10]
    assert _rows(whole) == _rows(sliced)
    assert len(_rows(whole)) == 50
