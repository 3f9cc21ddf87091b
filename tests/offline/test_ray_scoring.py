"""The Ray engine's scoring tasks, run in this process (no Ray needed): how a key range is cut
into scoring slices, and what a range's first task (assemble, cut, score the first slice) hands
back for the driver to submit the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire.offline._ray_reads import read_ranges
from groundwire.offline._ray_scoring import (
    assemble_and_score_batches,
    cut,
    score_batches,
    slicing,
)
from tests.offline._traces import record_turns, write_groundwire_jsonl

pytest.importorskip("pyarrow", reason="the ray extra (pyarrow) is not installed")


@pytest.mark.parametrize(
    ("total", "rows", "workers", "sizes"),
    [
        (0, 4, 2, []),  # an empty range: no task
        (40, 4, 1, [4] * 10),
        (40, 4, 2, [4] * 10),
        (876, 256, 2, [219] * 4),  # equal slices, not 256, 256, 256, 108
        (3, 256, 2, [2, 1]),  # a small input still spreads over the workers
        (1, 256, 4, [1]),
        (10, 256, 4, [3, 3, 2, 2]),
        (9, 4, 1, [3, 3, 3]),
    ],
)
def test_a_range_is_cut_into_about_equal_slices_for_every_worker(
    total: int, rows: int, workers: int, sizes: list[int]
) -> None:
    """Slices cover the range in order, hold at most `rows` traces each, about equal, and
    there are at least as many as workers while there are traces for them."""
    slices = cut(total, rows, workers)
    assert [end - start for start, end in slices] == sizes
    assert [start for start, _ in slices] + [total] == [0] + [end for _, end in slices]


def test_a_task_per_whole_range_once_there_are_several_ranges_a_worker() -> None:
    """16 ranges for 2 workers (the benchmark's): a task per range, never cut; 7 for 2, or one
    range of a small input: slices of at most `rows`, at least a slice a worker."""
    assert slicing(16, 2, 256) == (2**62, 1)
    assert slicing(8, 2, 256) == (2**62, 1)
    assert [len(cut(876, *slicing(16, 2, 256)))] == [1]
    assert slicing(7, 2, 256) == (256, 2)
    assert slicing(1, 2, 4) == (4, 2)
    assert slicing(32, 16, 256) == (256, 16)


def _pieces(tmp_path: Path, turns: int) -> list[list[tuple[str, bytes]]]:
    """One file's fragments as one key range (what the assemble task of range 0 gets)."""
    path = write_groundwire_jsonl(record_turns(turns), tmp_path / f"t{turns}.jsonl", batch=3)
    return list(read_ranges(str(path), None, False, 1))[:-1]


def test_a_ranges_first_task_scores_its_first_slice_and_passes_the_table_on(
    tmp_path: Path,
) -> None:
    """The first task assembles the range, cuts it, scores the first slice; the table it
    hands back gives the other slices' rows (`score_batches`); first and other slices hold every
    trace once, in order. A range of one slice hands back no table (nothing to pass on)."""
    args = ("run-1", ["quoted_spans"], 1, None, 2)
    table, slices, first = assemble_and_score_batches(
        (None, set()), (4, 2), *args, *_pieces(tmp_path, 10)
    )
    assert slices == [(0, 4), (4, 7), (7, 10)]
    assert first["kind"] == ["trace"] * 4 and len(first["scores"]) == 4
    rest = [score_batches(table, *args, rows) for rows in slices[1:]]
    turns = [t for part in (first, *rest) for t in part["turns"]]
    assert turns == table.column("turns").to_pylist()
    alone, (only,), rows = assemble_and_score_batches(
        (None, set()), (256, 1), *args, *_pieces(tmp_path, 3)
    )
    assert alone is None and only == (0, 3) and len(rows["turns"]) == 3
