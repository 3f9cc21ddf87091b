"""Gold answers: every accepted file shape, joining rules, and errors that name the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundwire import RagTurn
from groundwire.offline import ExpectedAnswers

TRACE = "5b8efff798038103d269b633813fc60c"


def _turn(query: str, trace_id: str | None = None) -> RagTurn:
    return RagTurn(query=query, answer="a", contexts=["c"], trace_id=trace_id)


def test_csv_with_pipe_separated_answers_joins_by_query(tmp_path: Path) -> None:
    """CSV rows give gold answers split on `|`, matched by normalised query."""
    path = tmp_path / "gold.csv"
    path.write_text("query,expected\nWho wrote  Hamlet?,Shakespeare | William Shakespeare\n")
    gold = ExpectedAnswers.load(path)
    turn = gold.attach(_turn("who wrote hamlet?"))
    assert turn.expected == ("Shakespeare", "William Shakespeare")
    assert gold.attach(_turn("something else")).expected is None
    assert gold.matched == 1


def test_trace_id_wins_over_query_and_json_array_works(tmp_path: Path) -> None:
    """An entry for the turn's trace id is preferred to one for its query."""
    path = tmp_path / "gold.json"
    entries = [{"query": "q", "answers": ["by query"]}, {"trace_id": TRACE, "gold": "by trace"}]
    path.write_text(json.dumps(entries))
    gold = ExpectedAnswers.load(path)
    assert gold.attach(_turn("q", TRACE)).expected == ("by trace",)
    assert gold.attach(_turn("q")).expected == ("by query",)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"query": "q"}', r"gold.jsonl:2: no gold answer"),
        ('{"expected": "x"}', r"gold.jsonl:2: needs 'trace_id' or 'query'"),
        ('{"query": "q", "expected": [1]}', r"gold.jsonl:2: 'expected' must be a string"),
        ("{oops", r"gold.jsonl:2: not valid JSON"),
    ],
)
def test_bad_entries_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    """Each kind of bad entry raises ValueError naming the file and line."""
    path = tmp_path / "gold.jsonl"
    path.write_text('{"query": "ok", "expected": "fine"}\n' + line + "\n")
    with pytest.raises(ValueError, match=message):
        ExpectedAnswers.load(path)
