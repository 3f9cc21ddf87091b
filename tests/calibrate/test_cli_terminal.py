"""What `groundwire calibrate` prints (`cli/_calibrate.py`): the table's unscored counts, the
annotators' ceiling, which judge made the scores, unmatched labels (the first ten) and the worst
disagreements with the judge's explanation; and `--judge` values read into judge options.

A scores file and a labels file written the way `rescore` and a team would; in-process and fast.
Lines are compared with their whitespace collapsed, since the terminal wraps long ones.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from groundwire.calibrate import calibrate, read_labels, read_scores
from groundwire.cli import app
from groundwire.cli._calibrate import _table, judge_options
from groundwire.cli._exit import ExitCode
from tests.calibrate._files import scores_record, trace_id, write_jsonl, write_labels_csv

VALUES = [0.0, 0.5, 1.0, 1.0, 0.25, 0.75, 0.0, 1.0, None]
HUMAN = [0, 1, 2, 2, 0, 2, 1, 2, 1]
COLUMNS = ("trace_id", "evaluator", "label", "annotator")


def _scores(folder: Path, models: list[str]) -> Path:
    """Nine turns scored by `groundedness` (the last one unscored), each naming its judge
    model (`models[i % len(models)]`) and prompt version."""
    records = [
        scores_record(
            i,
            {"groundedness": value},
            {"groundedness": {"judge_model": models[i % len(models)], "prompt_version": "p1"}},
        )
        for i, value in enumerate(VALUES)
    ]
    return write_jsonl(folder / "scores.jsonl", records)


def _labels(folder: Path, unmatched: int = 12) -> Path:
    """Two annotators' labels of every turn, plus `unmatched` labels of traces never scored."""
    rows: list[dict[str, object]] = []
    for i, human in enumerate(HUMAN):
        rows.append({"trace_id": trace_id(i), "evaluator": "groundedness", "label": human})
        rows[-1]["annotator"] = "ann"
        second = (human + 1) % 3
        rows.append({"trace_id": trace_id(i), "evaluator": "groundedness", "label": second})
        rows[-1]["annotator"] = "bo"
    for j in range(unmatched):
        missing = {"trace_id": trace_id(100 + j), "evaluator": "groundedness", "label": 1}
        rows.append({**missing, "annotator": "ann"})
    return write_labels_csv(folder / "labels.csv", rows, COLUMNS)


def _calibrate(*args: str | Path) -> tuple[int, str]:
    """Run `groundwire calibrate ARGS`: (exit code, stdout with whitespace collapsed)."""
    result = CliRunner().invoke(app, ["calibrate", "--resamples", "50", *map(str, args)])
    return result.exit_code, " ".join(result.stdout.split())


def test_the_report_shows_ceiling_judges_unmatched_and_disagreements(tmp_path: Path) -> None:
    """Every part below the table: the two annotators' ceiling, the judge models and prompt
    behind each series (mixed ones flagged), the first ten of twelve unmatched labels, and
    the two worst disagreements per series with the judge's explanation; the table counts
    the unscored turn."""
    labels = _labels(tmp_path)
    code, out = _calibrate(
        "--labels", labels, "--scores", _scores(tmp_path, ["m1", "m2"]), "--disagreements", "2"
    )
    assert code == ExitCode.OK, out
    assert "8 (1 unscored)" in out and "(quadratic)" in out
    assert "ceiling groundedness: ann vs bo agree with kappa -0.56 [" in out
    assert "] on 9 turns" in out
    for series in ("groundedness (ann)", "groundedness (bo)"):
        made_by = "model m1, m2; prompts p1 (the scores mix configurations)"
        assert f"{series} scored by judge {made_by}" in out
    assert "12 label(s) match no scored turn:" in out
    assert out.count("no scored turn in trace") == 10
    assert f"{labels}:20: no scored turn in trace {trace_id(100)}" in out
    assert f"{labels}:29: no scored turn in trace {trace_id(109)}" in out
    assert f"{labels}:30:" not in out
    assert out.count(") human ") == 4
    worst = f"groundedness (ann) human 1, judge 0 (0.00) · {trace_id(6)}: question 6"
    assert f"{worst} judge: why 6" in out
    assert f"groundedness (bo) human 0, judge 2 (1.00) · {trace_id(2)}: question 2" in out


def test_one_judge_configuration_is_not_flagged_and_no_disagreement_asked(
    tmp_path: Path,
) -> None:
    """Scores all made by one model and prompt: named without the mixed flag; every label
    matched: no unmatched list; `--disagreements 0`: none shown; `--out`: the path is said."""
    report = tmp_path / "report.json"
    code, out = _calibrate(
        "--labels", _labels(tmp_path, unmatched=0), "--scores", _scores(tmp_path, ["m1"]),
        "--disagreements", "0", "--out", report,
    )  # fmt: skip
    assert code == ExitCode.OK, out
    assert "groundedness (ann) scored by judge model m1; prompts p1 groundedness (bo)" in out
    assert "mix configurations" not in out and "match no scored turn" not in out
    assert ") human " not in out and "judge: why" not in out
    assert out.endswith(f"report: {report}") and report.is_file()


def test_a_judge_value_is_read_into_judge_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--judge` KEY=VALUE pairs, spaces around them dropped: the name (the model's unless
    given), the key read from the variable named, the timeout as a number."""
    monkeypatch.setenv("GW_TEST_JUDGE_KEY", "secret")
    value = " model = m1 , base_url=http://h/v1,name=strong, api_key_env=GW_TEST_JUDGE_KEY,"
    name, options = judge_options(value + "timeout_s=2.5, mode=json,cache=off")
    assert name == "strong"
    assert options == {
        "model": "m1",
        "base_url": "http://h/v1",
        "api_key": "secret",
        "timeout_s": 2.5,
        "mode": "json",
        "cache": "off",
    }
    assert judge_options("model=m2") == ("m2", {"model": "m2"})


TABLE = [
    "judge vs human (95% bootstrap intervals)",
    "┏━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━┳━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━┓",
    "┃ series             ┃ scale   ┃              n ┃          accuracy ┃                            kappa ┃             spearman ┃              pearson ┃ threshold ┃ tokens ┃",  # noqa: E501
    "┡━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━╇━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━┩",
    "│ groundedness (ann) │ ordinal │ 8 (1 unscored) │ 0.75 [0.40, 1.00] │    0.82 [0.50, 1.00] (quadratic) │    0.88 [0.58, 0.97] │    0.87 [0.72, 0.98] │           │        │",  # noqa: E501
    "│ groundedness (bo)  │ ordinal │ 8 (1 unscored) │ 0.12 [0.00, 0.38] │ -0.69 [-0.87, -0.14] (quadratic) │ -0.82 [-0.97, -0.54] │ -0.78 [-0.98, -0.60] │           │        │",  # noqa: E501
    "└────────────────────┴─────────┴────────────────┴───────────────────┴──────────────────────────────────┴──────────────────────┴──────────────────────┴───────────┴────────┘",
]
"""The table of `_scores(["m1"])` against `_labels(unmatched=0)` (50 resamples, seed 0)."""


def test_the_table_has_a_row_per_series_numbers_right_aligned(tmp_path: Path) -> None:
    """The table: its title at the left, the columns in order (series and scale left-aligned,
    figures right-aligned), a row per series with its unscored count and kappa weighting."""
    scores = read_scores(_scores(tmp_path, ["m1"]))
    labels = read_labels(_labels(tmp_path, unmatched=0), evaluators=["groundedness"])
    report = calibrate(labels, {None: scores}, resamples=50, seed=0)
    shown = io.StringIO()
    Console(file=shown, width=200, color_system=None).print(_table(report))
    assert [line.rstrip() for line in shown.getvalue().splitlines()] == TABLE


def test_a_disagreement_is_one_line_its_query_and_explanation_cut(tmp_path: Path) -> None:
    """A disagreement stays on one line however long (the terminal does not wrap it), its
    query cut at 100 characters (none shown when the turn has none) and the judge's
    explanation at 200; scores without provenance name no judge."""
    records = [scores_record(i, {"groundedness": 1.0}) for i in range(3)]
    records[0]["query"], records[1]["query"] = "q" * 150, None
    records[0]["details"]["groundedness"]["explanation"] = "e" * 250
    rows = [{"trace_id": trace_id(i), "evaluator": "groundedness", "label": 0} for i in range(3)]
    labels = write_labels_csv(tmp_path / "labels.csv", rows, ("trace_id", "evaluator", "label"))
    scores = write_jsonl(tmp_path / "scores.jsonl", records)
    result = CliRunner().invoke(
        app, ["calibrate", "--labels", str(labels), "--scores", str(scores), "--resamples", "20"]
    )
    assert result.exit_code == ExitCode.OK, result.output
    lines = result.stdout.splitlines()
    shown = f"groundedness human 0, judge pass (1.00) · {trace_id(0)}: {'q' * 100}"
    assert shown in lines and f"  judge: {'e' * 200}" in lines
    assert f"groundedness human 0, judge pass (1.00) · {trace_id(1)}: " in lines
    assert "scored by judge" not in result.stdout


BINARY_TABLE = [
    "judge vs human (95% bootstrap intervals)",
    "┏━━━━━━━━━━━━━━┳━━━━━━━━┳━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┓",
    "┃ series       ┃ scale  ┃ n ┃          accuracy ┃             kappa ┃          spearman ┃           pearson ┃                    threshold ┃ tokens ┃",  # noqa: E501
    "┡━━━━━━━━━━━━━━╇━━━━━━━━╇━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━┩",
    "│ quoted_spans │ binary │ 6 │ 0.83 [0.54, 1.00] │ 0.67 [0.00, 1.00] │ 0.71 [0.34, 1.00] │ 0.71 [0.34, 1.00] │ 1.00 [0.00, 1.00] (acc 0.83) │  7,800 │",  # noqa: E501
    "└──────────────┴────────┴───┴───────────────────┴───────────────────┴───────────────────┴───────────────────┴──────────────────────────────┴────────┘",
]
"""The table of a pass/fail evaluator whose scores report judge tokens (50 resamples, seed 0)."""


def test_a_pass_fail_row_has_its_threshold_and_tokens_and_no_weighting(tmp_path: Path) -> None:
    """A pass/fail evaluator: its row has no kappa weighting and no unscored count, but the
    threshold that best separates pass from fail and the judge tokens, thousands separated."""
    values, human = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], [1, 0, 1, 0, 0, 1]
    records = []
    for i, value in enumerate(values):
        records.append(scores_record(i, {"quoted_spans": value}))
        records[-1]["details"]["quoted_spans"]["usage"] = {"input": 700, "output": 600}
    scores = read_scores(write_jsonl(tmp_path / "scores.jsonl", records))
    rows = [
        {"trace_id": trace_id(i), "evaluator": "quoted_spans", "label": label}
        for i, label in enumerate(human)
    ]
    labels_file = write_labels_csv(
        tmp_path / "labels.csv", rows, ("trace_id", "evaluator", "label")
    )
    labels = read_labels(labels_file, evaluators=["quoted_spans"])
    report = calibrate(labels, {None: scores}, resamples=50, seed=0)
    shown = io.StringIO()
    Console(file=shown, width=200, color_system=None).print(_table(report))
    assert [line.rstrip() for line in shown.getvalue().splitlines()] == BINARY_TABLE


def test_a_judge_value_may_hold_an_equals_sign() -> None:
    """Only the first `=` of a pair splits key from value: a base URL with a query string."""
    name, options = judge_options("model=m,base_url=http://h/v1?api-version=2")
    assert (name, options["base_url"]) == ("m", "http://h/v1?api-version=2")
