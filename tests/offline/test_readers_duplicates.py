"""Files to turns: spans exported twice (Collector retries, overlapping files) give one turn."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from groundwire.offline import Problems, TurnCounts, WindowOptions, iter_turns
from tests.offline._traces import record_turns, write_groundwire_jsonl


@pytest.fixture(scope="module")
def one_trace_per_line(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 turns, each trace (3 spans) on its own line."""
    folder = tmp_path_factory.mktemp("dups")
    return write_groundwire_jsonl(record_turns(20), folder / "t.jsonl", batch=3)


def _turns(
    paths: list[Path], window: WindowOptions | None = None
) -> tuple[list[tuple[str | None, str | None]], TurnCounts]:
    counts = TurnCounts()
    turns = iter_turns(paths, Problems(), counts, window=window or WindowOptions())
    return [(turn.trace_id, turn.span_id) for turn in turns], counts


def test_a_retried_batch_in_one_file_gives_one_turn_and_is_counted(
    one_trace_per_line: Path, tmp_path: Path
) -> None:
    """A line written again a few lines later (a Collector retry) adds no turn; its spans are
    counted as duplicates, not as late spans."""
    lines = one_trace_per_line.read_text().splitlines(keepends=True)
    retried = tmp_path / "retried.jsonl"
    retried.write_text("".join([*lines[:5], lines[2], lines[3], *lines[5:], lines[0]]))
    keys, counts = _turns([retried])
    assert len(keys) == len(set(keys)) == 20
    assert counts.duplicate_spans == 9 and counts.duplicate_turns == 0
    assert counts.late_spans == 0 and counts.turns == 20


def test_the_same_spans_in_two_files_give_one_turn_each(
    one_trace_per_line: Path, tmp_path: Path
) -> None:
    """A second file holding the same spans (overlapping exports) adds no turn."""
    copy = tmp_path / "copy.jsonl"
    shutil.copy(one_trace_per_line, copy)
    keys, counts = _turns([one_trace_per_line, copy])
    assert len(keys) == len(set(keys)) == 20
    assert counts.duplicate_spans == 60 and counts.traces == 20


def test_a_duplicate_trace_after_the_span_memory_still_gives_one_turn(
    one_trace_per_line: Path, tmp_path: Path
) -> None:
    """With the span memory and the window's trace memory too small to recognise the copy, the
    reassembled duplicate trace is still recognised by its turn and counted once."""
    copy = tmp_path / "copy.jsonl"
    shutil.copy(one_trace_per_line, copy)
    window = WindowOptions(max_traces=1, remember_spans=3)
    keys, counts = _turns([one_trace_per_line, copy], window)
    assert len(keys) == len(set(keys)) == 20
    assert counts.duplicate_turns == 20 and counts.turns == 20


def test_remembering_nothing_turns_deduplication_off(
    one_trace_per_line: Path, tmp_path: Path
) -> None:
    """`remember_spans=0, remember_turns=0` reads every copy (the documented opt-out)."""
    copy = tmp_path / "copy.jsonl"
    shutil.copy(one_trace_per_line, copy)
    window = WindowOptions(max_traces=1, remember_spans=0, remember_turns=0)
    keys, counts = _turns([one_trace_per_line, copy], window)
    assert len(keys) == 40 and counts.duplicate_spans == counts.duplicate_turns == 0
