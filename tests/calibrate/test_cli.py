"""`groundwire calibrate` on the command line: a report; a bad labels file is one line, exit 2."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from tests.calibrate._files import scores_record, trace_id, write_jsonl, write_labels_csv

COLUMNS = ("trace_id", "evaluator", "label")
VALUES = [0.0, 0.5, 1.0, 1.0, 0.25, 0.75, 0.0, 1.0]
HUMAN = [0, 1, 2, 2, 0, 2, 1, 2]


def _run(*args: str | Path) -> tuple[int, str, str]:
    """Run `groundwire calibrate ARGS` in-process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, ["calibrate", *(str(a) for a in args)])
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    """A `rescore` output with `groundedness` over eight turns."""
    records = [scores_record(i, {"groundedness": v}) for i, v in enumerate(VALUES)]
    return write_jsonl(tmp_path / "scores.jsonl", records)


def _labels(tmp_path: Path, rows: Sequence[Mapping[str, object]] | None = None) -> Path:
    """The human labels of HUMAN (or `rows`) as a CSV."""
    if rows is None:
        rows = [
            {"trace_id": trace_id(i), "evaluator": "groundedness", "label": h}
            for i, h in enumerate(HUMAN)
        ]
    return write_labels_csv(tmp_path / "labels.csv", rows, COLUMNS)


def test_report_table_and_json(tmp_path: Path, scores: Path) -> None:
    """Exit 0, a table on stdout, and the same figures in the JSON report."""
    out = tmp_path / "report.json"
    labels = _labels(tmp_path)
    code, stdout, _ = _run(
        "--labels", labels, "--scores", scores, "--out", out, "--resamples", "99"
    )
    assert code == ExitCode.OK, stdout
    assert "groundedness" in stdout and "(quadratic)" in stdout
    (row,) = json.loads(out.read_text())["agreements"]
    assert row["n"] == 8 and row["weighting"] == "quadratic"
    assert f"{row['kappa']['value']:.2f}" in stdout


def _one_line_exit_2(tmp_path: Path, scores: Path, labels: Path) -> str:
    """Calibrate with a bad labels file: exit 2 and one `error:` line; returns it."""
    code, stdout, stderr = _run("--labels", labels, "--scores", scores)
    assert code == ExitCode.BAD_ARGUMENTS, stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_wrong_columns(tmp_path: Path, scores: Path) -> None:
    """A labels file without a `label` column."""
    labels = write_labels_csv(
        tmp_path / "l.csv", [{"trace_id": "a", "evaluator": "e"}], COLUMNS[:2]
    )
    assert "missing column(s) label" in _one_line_exit_2(tmp_path, scores, labels)


def test_unknown_evaluator(tmp_path: Path, scores: Path) -> None:
    """An evaluator the scores file does not have."""
    labels = _labels(tmp_path, [{"trace_id": trace_id(0), "evaluator": "groundednes", "label": 1}])
    line = _one_line_exit_2(tmp_path, scores, labels)
    assert "evaluator: 'groundednes' is not among the scored evaluators (groundedness)" in line


def test_label_outside_the_scale(tmp_path: Path, scores: Path) -> None:
    """A label of 3."""
    labels = _labels(tmp_path, [{"trace_id": trace_id(0), "evaluator": "groundedness", "label": 3}])
    assert "labels.csv:2: label: '3' is not a label" in _one_line_exit_2(tmp_path, scores, labels)


def test_duplicate_label(tmp_path: Path, scores: Path) -> None:
    """One turn labelled twice."""
    row = {"trace_id": trace_id(0), "evaluator": "groundedness", "label": 1}
    line = _one_line_exit_2(tmp_path, scores, _labels(tmp_path, [row, row]))
    assert "labels.csv:3: duplicate label" in line


def test_no_overlap(tmp_path: Path, scores: Path) -> None:
    """Labels that name no scored turn."""
    labels = _labels(tmp_path, [{"trace_id": "f" * 32, "evaluator": "groundedness", "label": 1}])
    assert "no label matches a scored turn" in _one_line_exit_2(tmp_path, scores, labels)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give either --scores FILE"),
        (("--out", "r.txt"), "--out: r.txt must end in .json or .html"),
        (("-e", "groundedness"), "-e, --options and --judge need --traces"),
    ],
)
def test_bad_arguments(tmp_path: Path, scores: Path, args: tuple[str, ...], message: str) -> None:
    """Neither or both score sources, a report format we do not write, options without traces."""
    source = () if not args else ("--scores", scores)
    code, _, stderr = _run("--labels", _labels(tmp_path), *source, *args)
    assert code == ExitCode.BAD_ARGUMENTS and message in stderr


def test_missing_scores_file(tmp_path: Path) -> None:
    """A scores file that is not there: one line, exit 2."""
    code, _, stderr = _run("--labels", _labels(tmp_path), "--scores", tmp_path / "none.jsonl")
    assert code == ExitCode.BAD_ARGUMENTS and "scores file not found" in stderr


@pytest.mark.parametrize(
    ("judges", "evaluator", "message"),
    [
        (["gpt"], "groundedness", "--judge: 'gpt' is not KEY=VALUE with KEY one of name, model"),
        (["base_url=http://x"], "groundedness", "names no model (model=...)"),
        (["model=a", "model=a"], "groundedness", "two judges share a name; give each one name="),
        (["model=a,api_key_env=GW_TEST_UNSET_KEY"], "groundedness", "that variable is not set"),
        (["model=a,timeout_s=soon"], "groundedness", "timeout_s='soon' is not a number"),
        (["model=a"], "quoted_spans", "--judge: none of quoted_spans uses an LLM judge"),
    ],
)
def test_bad_judges(tmp_path: Path, judges: list[str], evaluator: str, message: str) -> None:
    """Each malformed `--judge` is one line, exit 2, before any trace is read."""
    traces = tmp_path / "traces.jsonl"
    traces.write_text("")
    args = ["--labels", _labels(tmp_path), "--traces", traces, "-e", evaluator]
    for judge in judges:
        args += ["--judge", judge]
    code, _, stderr = _run(*args)
    assert code == ExitCode.BAD_ARGUMENTS and message in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1
