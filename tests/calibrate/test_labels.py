"""Labels files: every accepted form is read, every bad one is a `LabelsError` naming where."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from groundwire.calibrate import LabelsError, read_labels
from tests.calibrate._files import trace_id, write_jsonl, write_labels_csv

COLUMNS = ("trace_id", "evaluator", "label")


def _csv(tmp_path: Path, labels: Sequence[object], evaluator: str = "groundedness") -> Path:
    """A labels CSV with one label per turn 0..n-1."""
    rows = [
        {"trace_id": trace_id(i), "evaluator": evaluator, "label": label}
        for i, label in enumerate(labels)
    ]
    return write_labels_csv(tmp_path / "labels.csv", rows, COLUMNS)


@pytest.mark.parametrize(
    ("labels", "scale", "values"),
    [
        (["pass", "FAIL", "true", "false"], "binary", [1, 0, 1, 0]),
        (["0", "1", "1"], "binary", [0, 1, 1]),
        (["0", "1", "2"], "ordinal", [0, 1, 2]),
        (["0.25", "1", "0.5"], "continuous", [0.25, 1, 0.5]),
    ],
)
def test_scales(tmp_path: Path, labels: list[str], scale: str, values: list[float]) -> None:
    """pass/fail and 0/1 are binary, a 2 makes 0/1/2 ordinal, a fraction makes it continuous."""
    read = read_labels(_csv(tmp_path, labels))
    assert read.scales == {"groundedness": scale}
    assert [label.value for label in read.labels] == values


def test_jsonl_with_booleans_and_annotators(tmp_path: Path) -> None:
    """JSON lines take JSON booleans; annotators and span ids are kept, ids lowercased."""
    path = write_jsonl(
        tmp_path / "labels.jsonl",
        [
            {"span_id": "ABCD", "evaluator": "quoted_spans", "label": True, "annotator": "ann"},
            {"span_id": "abce", "evaluator": "quoted_spans", "label": False, "annotator": "bo"},
        ],
    )
    read = read_labels(path)
    assert [(lab.span_id, lab.value, lab.annotator) for lab in read.labels] == [
        ("abcd", 1.0, "ann"),
        ("abce", 0.0, "bo"),
    ]
    assert read.annotators == ["ann", "bo"]


def test_parquet(tmp_path: Path) -> None:
    """A parquet labels file is read row by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "labels.parquet"
    pq.write_table(
        pa.table({"trace_id": ["a", "b"], "evaluator": ["e", "e"], "label": [2, 0]}), path
    )
    read = read_labels(path)
    assert read.scales == {"e": "ordinal"} and len(read.labels) == 2


def _error(path: Path, **kwargs: object) -> str:
    """The message of the LabelsError reading `path` raises."""
    with pytest.raises(LabelsError) as caught:
        read_labels(path, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def test_missing_columns(tmp_path: Path) -> None:
    """A file without `label` (or without any id column) names the missing columns."""
    path = write_labels_csv(
        tmp_path / "l.csv", [{"trace_id": "a", "evaluator": "e"}], ("trace_id", "evaluator")
    )
    assert _error(path) == (
        f"{path}: missing column(s) label; found: trace_id, evaluator (a labels file has "
        "trace_id, span_id, evaluator, label, annotator; docs/calibrate.md)"
    )
    path = write_labels_csv(
        tmp_path / "m.csv",
        [{"id": "a", "evaluator": "e", "label": 1}],
        ("id", "evaluator", "label"),
    )
    assert "missing column(s) trace_id (or span_id)" in _error(path)


def test_bad_label_names_line_and_field(tmp_path: Path) -> None:
    """A label that is no label names the file's line (header is line 1) and the field."""
    path = _csv(tmp_path, ["1", "maybe"])
    assert _error(path) == (
        f"{path}:3: label: 'maybe' is not a label; expected 0/1/2, pass/fail, true/false, "
        "or a number in [0, 1]"
    )


@pytest.mark.parametrize("label", ["3", "-1", "1.5", "nan"])
def test_label_outside_every_scale(tmp_path: Path, label: str) -> None:
    """Numbers outside 0/1/2 and [0, 1] are refused."""
    assert f"{tmp_path / 'labels.csv'}:2: label: {label!r} is not a label" in _error(
        _csv(tmp_path, [label])
    )


def test_label_outside_its_evaluators_scale(tmp_path: Path) -> None:
    """A 2 beside a fraction, or beside pass/fail, does not fit one scale: both lines named."""
    path = _csv(tmp_path, ["2", "0.5"])
    assert _error(path) == (
        f"{path}:3: label: 0.5 is outside the 0/1/2 scale of evaluator 'groundedness' "
        f"({path}:2 is 2); use whole numbers 0, 1, 2 or numbers in [0, 1]"
    )
    path = _csv(tmp_path, ["pass", "2"])
    assert "label: 2 is outside the pass/fail scale" in _error(path)


def test_unknown_evaluator(tmp_path: Path) -> None:
    """An evaluator the scores do not have is named with the ones they do."""
    path = _csv(tmp_path, ["1"], evaluator="groundednes")
    assert _error(path, evaluators=["groundedness", "quoted_spans"]) == (
        f"{path}:2: evaluator: 'groundednes' is not among the scored evaluators "
        "(groundedness, quoted_spans)"
    )


def test_duplicate_label(tmp_path: Path) -> None:
    """The same turn labelled twice for one evaluator by one annotator names both lines."""
    rows = [{"trace_id": "a", "evaluator": "e", "label": 1}] * 2
    path = write_labels_csv(tmp_path / "l.csv", rows, COLUMNS)
    assert _error(path) == (
        f"{path}:3: duplicate label for this turn and evaluator 'e' (first at {path}:2)"
    )


def test_empty_and_missing_file(tmp_path: Path) -> None:
    """No labels, a missing file, an unknown format, a JSON line that is not an object."""
    assert _error(write_labels_csv(tmp_path / "e.csv", [], COLUMNS)).endswith(
        "no labels in the file"
    )
    assert _error(tmp_path / "none.csv").endswith("labels file not found")
    other = tmp_path / "l.txt"
    other.write_text("x")
    assert "unknown labels format '.txt'" in _error(other)
    bad = tmp_path / "l.jsonl"
    bad.write_text('{"trace_id": "a", "evaluator": "e", "label": 1}\n[1]\n')
    assert _error(bad) == f"{bad}:2: expected a JSON object, got list"


def test_empty_cells(tmp_path: Path) -> None:
    """An empty id or evaluator cell names the field."""
    path = write_labels_csv(
        tmp_path / "l.csv", [{"trace_id": "", "evaluator": "e", "label": 1}], COLUMNS
    )
    assert _error(path).startswith(f"{path}:2: trace_id: empty")
    path = write_labels_csv(
        tmp_path / "l.csv", [{"trace_id": "a", "evaluator": " ", "label": 1}], COLUMNS
    )
    assert _error(path).startswith(f"{path}:2: evaluator: empty")
