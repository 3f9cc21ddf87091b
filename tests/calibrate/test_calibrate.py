"""`calibrate`: labels joined with scores, every series measured, nothing dropped silently."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from groundwire.calibrate import (
    CalibrationReport,
    LabelsError,
    calibrate,
    read_labels,
    read_scores,
    report_dict,
    write_report,
)
from tests.calibrate._files import scores_record, span_id, trace_id, write_jsonl, write_labels_csv

COLUMNS = ("trace_id", "span_id", "evaluator", "label", "annotator")

# Ratings of the dual judge (support, added_content) and the human label, per turn.
RATINGS = [(2, 2, 2), (2, 1, 2), (0, 0, 0), (1, 1, 1), (0, 2, 1), (2, 2, 0), (1, 0, 0), (2, 0, 2)]


def _scores(tmp_path: Path) -> Path:
    """A scores file as `rescore` writes it for `groundedness` over the turns of RATINGS."""
    records = [
        scores_record(
            i,
            {"groundedness": (a / 2 + b / 2) / 2},
            {"groundedness": {"ratings": {"support": a, "added_content": b}}},
        )
        for i, (a, b, _) in enumerate(RATINGS)
    ]
    return write_jsonl(tmp_path / "scores.jsonl", records)


def _labels(tmp_path: Path, extra: Sequence[Mapping[str, object]] = ()) -> Path:
    """A labels CSV with the human labels of RATINGS, and `extra` rows."""
    rows = [
        {"trace_id": trace_id(i), "evaluator": "groundedness", "label": human}
        for i, (_, _, human) in enumerate(RATINGS)
    ]
    return write_labels_csv(tmp_path / "labels.csv", [*rows, *extra], COLUMNS)


def _run(labels: Path, scores: Path, resamples: int) -> CalibrationReport:
    """Calibrate one scores file against one labels file."""
    return calibrate(read_labels(labels), {None: read_scores(scores)}, resamples=resamples)


def test_dual_judge_prompts_and_mean(tmp_path: Path) -> None:
    """Each prompt alone and their mean get quadratic kappa equal to scikit-learn's."""
    report = _run(_labels(tmp_path), _scores(tmp_path), 200)
    rows = {row.prompt: row for row in report.agreements}
    assert list(rows) == ["mean", "support", "added_content"]
    humans = [h for _, _, h in RATINGS]
    for prompt, judged in (
        ("support", [a for a, _, _ in RATINGS]),
        ("added_content", [b for _, b, _ in RATINGS]),
        ("mean", [int((a / 2 + b / 2) / 2 * 2 + 0.5) for a, b, _ in RATINGS]),
    ):
        row = rows[prompt]
        assert row.n == 8 and row.scale == "ordinal" and row.weighting == "quadratic"
        expected = cohen_kappa_score(humans, judged, weights="quadratic", labels=[0, 1, 2])
        assert row.kappa is not None and row.kappa.value == pytest.approx(expected)
        assert row.kappa.contains(expected)
    assert rows["mean"].confusion == [[1, 1, 1], [0, 2, 0], [0, 1, 2]]


def test_disagreements_worst_first(tmp_path: Path) -> None:
    """Disagreements are sorted by the gap between judge and human, with the turn's text."""
    report = _run(_labels(tmp_path), _scores(tmp_path), 50)
    mean = report.agreements[0]
    gaps = [d.gap for d in mean.disagreements]
    assert gaps == sorted(gaps, reverse=True) and gaps[0] == 1.0
    worst = mean.disagreements[0]
    assert worst.pair.trace_id == trace_id(5) and worst.judged == "2" and worst.pair.label == 0
    assert worst.pair.query == "question 5" and worst.pair.explanation == "why 5"


def test_unmatched_labels_are_listed(tmp_path: Path) -> None:
    """Labels naming no scored turn are counted and listed with the reason, not dropped."""
    extra = [
        {"trace_id": "f" * 32, "evaluator": "groundedness", "label": 1},
        {"span_id": "e" * 16, "evaluator": "groundedness", "label": 1},
    ]
    report = _run(_labels(tmp_path, extra), _scores(tmp_path), 50)
    assert report.matched == 8
    assert [(m.label.where.rsplit(":", 1)[1], m.reason) for m in report.unmatched] == [
        ("10", f"no scored turn in trace {'f' * 32}"),
        ("11", f"no scored turn has span_id {'e' * 16}"),
    ]
    data = report_dict(report)
    assert len(data["unmatched_labels"]) == 2 and data["matched_labels"] == 8


def test_no_overlap_is_an_error(tmp_path: Path) -> None:
    """Labels that match no scored turn at all: a LabelsError, nothing to measure."""
    rows = [{"trace_id": "a" * 32, "evaluator": "groundedness", "label": 1}]
    labels = read_labels(write_labels_csv(tmp_path / "l.csv", rows, COLUMNS))
    with pytest.raises(LabelsError, match="no label matches a scored turn"):
        calibrate(labels, {None: read_scores(_scores(tmp_path))})


def test_annotator_ceiling(tmp_path: Path) -> None:
    """Two annotators on the same turns: a row per annotator and their own kappa as ceiling."""
    rows = []
    second = [2, 2, 0, 1, 1, 1, 0, 2]
    for i, (_, _, human) in enumerate(RATINGS):
        for annotator, label in (("ann", human), ("bo", second[i])):
            rows.append(
                {
                    "span_id": span_id(i),
                    "evaluator": "groundedness",
                    "label": label,
                    "annotator": annotator,
                }
            )
    labels = read_labels(write_labels_csv(tmp_path / "l.csv", rows, COLUMNS))
    report = calibrate(labels, {None: read_scores(_scores(tmp_path))}, resamples=100)
    assert {(r.annotator, r.prompt) for r in report.agreements} >= {("ann", "mean"), ("bo", "mean")}
    (ceiling,) = report.ceilings
    humans = [h for _, _, h in RATINGS]
    assert ceiling.annotators == ("ann", "bo") and ceiling.n == 8
    assert ceiling.kappa.value == pytest.approx(
        cohen_kappa_score(humans, second, weights="quadratic")
    )


def test_binary_threshold_and_report_files(tmp_path: Path) -> None:
    """Pass/fail labels get the best threshold; the report is written as JSON and HTML."""
    values = [0.1, 0.2, 0.35, 0.4, 0.6, 0.7, 0.9, 0.95]
    humans = ["fail", "fail", "fail", "pass", "pass", "pass", "pass", "pass"]
    records = [scores_record(i, {"quoted_spans": v}) for i, v in enumerate(values)]
    scores = write_jsonl(tmp_path / "s.jsonl", records)
    rows = [
        {"trace_id": trace_id(i), "evaluator": "quoted_spans", "label": h}
        for i, h in enumerate(humans)
    ]
    labels = read_labels(write_labels_csv(tmp_path / "l.csv", rows, COLUMNS))
    report = calibrate(labels, {None: read_scores(scores)}, resamples=300)
    (row,) = report.agreements
    assert row.scale == "binary" and row.threshold is not None
    assert row.threshold.value == 0.4 and row.threshold.accuracy == 1.0
    assert row.accuracy is not None and row.accuracy.value == 7 / 8  # 0.4 < 0.5 is judged fail
    assert row.threshold.low is not None and row.threshold.high is not None
    assert row.threshold.low <= 0.4 <= row.threshold.high
    write_report(report, tmp_path / "r.json")
    write_report(report, tmp_path / "r.html")
    assert '"threshold"' in (tmp_path / "r.json").read_text()
    assert "quoted_spans" in (tmp_path / "r.html").read_text()
    with pytest.raises(ValueError, match=r"a report is \.json or \.html"):
        write_report(report, tmp_path / "r.txt")


def test_a_bad_line_of_a_scores_file_is_named_by_file_and_line(tmp_path: Path) -> None:
    """The scores file is read by the labels' own JSON lines reader: same `file:line` errors."""
    scores = tmp_path / "scores.jsonl"
    scores.write_text('{"trace_id": "a"}\n\n[1, 2]\n')
    with pytest.raises(LabelsError) as caught:
        read_scores(scores)
    assert str(caught.value) == f"{scores}:3: expected a JSON object, got list"
    scores.write_text("{not json\n")
    with pytest.raises(LabelsError, match=rf"^{re.escape(str(scores))}:1: not valid JSON \("):
        read_scores(scores)
