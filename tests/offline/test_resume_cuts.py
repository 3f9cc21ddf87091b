"""`resume_state` on outputs cut at every byte: only whole records count, never a partial row."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire._types import RagTurn, Score
from groundwire.offline._results import TurnResult
from groundwire.offline._resume import resume_state
from groundwire.offline.writers import CsvWriter, JsonLinesWriter

NASTY = [
    "plain",
    "line one\nline two",
    'a "quoted" word, and a comma',
    '"\n"\n""',
    "=1+1\r\nCR and LF",
    "ünïcödé ✓",
]


def _results() -> list[TurnResult]:
    """One result per nasty query, with ids that say which row they are."""
    return [
        TurnResult(
            RagTurn(
                query=query, contexts=[], answer="a", trace_id=f"{i:032x}", span_id=f"{i:016x}"
            ),
            {"quoted_spans": Score(name="quoted_spans", value=0.5, label='x"y\nz')},
        )
        for i, query in enumerate(NASTY)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("writer_class", [JsonLinesWriter, CsvWriter])
def test_every_cut_keeps_exactly_the_whole_records(writer_class: type, tmp_path: Path) -> None:
    """Cut after each byte: the keys are those of the records wholly before the cut."""
    full = tmp_path / f"full{'.csv' if writer_class is CsvWriter else '.jsonl'}"
    writer = writer_class(full, ["quoted_spans"])
    ends: list[int] = []
    for result in _results():
        writer.write(result)
        writer.flush()
        ends.append(full.stat().st_size)
    writer.close()
    data = full.read_bytes()
    boundaries = {0, *ends}
    if writer_class is CsvWriter:
        boundaries.add(data.index(b"\r\n") + 2)  # after the header
    cut = tmp_path / f"cut{full.suffix}"
    for offset in range(len(data) + 1):
        cut.write_bytes(data[:offset])
        state = resume_state(cut, ["quoted_spans"])
        whole = sum(1 for end in ends if end <= offset)
        assert state.keys == {(f"{i:032x}", f"{i:016x}") for i in range(whole)}, offset
        assert state.rows == whole
        assert bool(state.notes) == (offset not in boundaries), offset
        assert cut.read_bytes() == data[: max(b for b in boundaries if b <= offset)]
