"""Every scores file `rescore` writes (.jsonl, .csv, .parquet) reads back as the same turns,
and `--traces` exits as `rescore` would when there is nothing to calibrate."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.calibrate import read_scores, read_turns
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import rescore
from tests.calibrate._files import write_labels_csv
from tests.offline._cli_files import write_spans_without_turns, write_turns


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_scores_files_read_back(tmp_path: Path, suffix: str) -> None:
    """Ids, query, value, label and details of each turn survive every output format."""
    traces = write_turns(["q0", "q1", "q2"], tmp_path / "t.jsonl")
    out = tmp_path / f"scores{suffix}"
    rescore([traces], ["quoted_spans"], out)
    turns = {turn.span_id: turn for turn in read_scores(out)}
    expected = {turn.span_id: turn for turn in read_turns([traces]).turns}
    assert set(turns) == set(expected) and len(turns) == 3
    for span_id, turn in turns.items():
        score = turn.scores["quoted_spans"]
        assert turn.trace_id == expected[span_id].trace_id and turn.query == expected[span_id].query
        assert score.value in (0.0, 1.0) and score.details["total"] == 1


def test_traces_without_turns_exit_5(tmp_path: Path) -> None:
    """`--traces` holding no RAG turn: NO_TURNS (5), as `rescore` exits, with the reason."""
    traces = write_spans_without_turns(tmp_path / "http.jsonl")
    rows = [{"trace_id": "a" * 32, "evaluator": "quoted_spans", "label": 1}]
    labels = write_labels_csv(tmp_path / "l.csv", rows, ("trace_id", "evaluator", "label"))
    args = ["calibrate", "--labels", str(labels), "--traces", str(traces), "-e", "quoted_spans"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == ExitCode.NO_TURNS, result.output
    assert "nothing to calibrate: --traces held no RAG turn (exit 5)" in result.stderr
