"""`rescore --baseline`: a re-score compared with an earlier scores file of the same traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.offline.writers import BaselineError, load_baseline
from tests.offline._traces import record_turns, write_groundwire_jsonl
from tests.report._dom import parse

TURNS = 8


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A trace file, its scores, and a baseline edited so that two turns got worse, one better,
    one is missing from the baseline and the baseline has one turn this run lacks."""
    folder = tmp_path_factory.mktemp("baseline")
    traces = write_groundwire_jsonl(record_turns(TURNS), folder / "traces.jsonl", batch=2)
    now = folder / "now.jsonl"
    done = CliRunner().invoke(app, ["rescore", str(traces), "-e", "quoted_spans", "-o", str(now)])
    assert done.exit_code == 0, done.output
    records = [json.loads(line) for line in now.read_text(encoding="utf-8").splitlines()]
    values = [r["scores"]["quoted_spans"] for r in records]
    assert values[:4] == [1.0, 0.0, 1.0, 0.0]
    records[1]["scores"]["quoted_spans"] = 1.0  # was 1.0, now 0.0: worse by 1
    records[3]["scores"]["quoted_spans"] = 0.5  # was 0.5, now 0.0: worse by 0.5
    records[2]["scores"]["quoted_spans"] = 0.25  # was 0.25, now 1.0: better
    del records[5]  # only in this run
    records.append({"trace_id": "f" * 32, "span_id": "e" * 16, "query": "gone", "scores": {}})
    baseline = folder / "before.jsonl"
    baseline.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return {"traces": traces, "baseline": baseline, "folder": folder, "records": records}


def _rescore(runs: dict[str, Any], out: Path, *extra: str) -> Any:
    """`groundwire rescore TRACES -e quoted_spans -o OUT --baseline BASELINE EXTRA`."""
    args = ["rescore", str(runs["traces"]), "-e", "quoted_spans", "-o", str(out)]
    return CliRunner().invoke(app, [*args, "--baseline", str(runs["baseline"]), *extra])


def test_terminal_says_what_changed_in_a_few_lines(runs: dict[str, Any]) -> None:
    """Counts of worse/better/one-run turns, the means with their difference, the worst drop."""
    done = _rescore(runs, runs["folder"] / "again.jsonl")
    assert done.exit_code == 0, done.output
    text = " ".join(done.stdout.split())
    assert (
        "7 turns in both runs (2 worse, 1 better), 1 only in this run, 1 only in the baseline"
        in (text)
    )
    # baseline mean over 7 values: 1 + 1 + 0.25 + 0.5 + 1 (turn 4) + 1 (turn 6) + 0 (turn 7)
    assert "quoted_spans: 0.679 -> 0.500 (-0.179)" in text
    first_worse = text.index("worse: quoted_spans 1.000 -> 0.000")
    assert first_worse < text.index("worse: quoted_spans 0.500 -> 0.000")


def test_html_report_puts_both_runs_side_by_side_worsened_first(runs: dict[str, Any]) -> None:
    """The report's comparison: means and difference, paired charts, worse turns before better
    ones, largest drop first, one-run turns counted."""
    out = runs["folder"] / "report.html"
    done = _rescore(runs, out, "-q")
    assert done.exit_code == 0, done.output
    html = out.read_text(encoding="utf-8")
    assert "groundwire:comparison" not in html
    section = html[html.index('id="comparison"') : html.index('id="worst"')]
    assert "<td>0.679</td><td>0.500</td><td>-0.179</td>" in section
    assert "1 only in this run, 1 only in the baseline" in section
    assert section.index('id="worsened"') < section.index('id="improved"')
    deltas = [float(v) for v in section.split('data-delta="')[1:] for v in [v.split('"')[0]]]
    assert deltas == [-1.0, -0.5, 0.75]
    assert parse(html).external == []


def test_a_bad_baseline_is_one_line_and_exit_2(runs: dict[str, Any], tmp_path: Path) -> None:
    """A missing, non-scores or unsupported baseline file is a bad argument, never a traceback."""
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text('{"hello": 1}\n', encoding="utf-8")
    for path, message in (
        (tmp_path / "missing.jsonl", "is not a file"),
        (bogus, "bogus.jsonl:1: not a scores record"),
        (runs["traces"].with_suffix(".parquet"), "is not a file"),
    ):
        args = ["rescore", str(runs["traces"]), "-e", "quoted_spans"]
        done = CliRunner().invoke(
            app, [*args, "-o", str(tmp_path / "o.jsonl"), "--baseline", str(path)]
        )
        assert done.exit_code == 2, done.output
        assert message in " ".join(done.stderr.split())
        assert "Traceback" not in done.output
    with pytest.raises(BaselineError, match=r"must be a \.jsonl or \.csv"):
        load_baseline(runs["traces"].with_suffix(".xlsx"))


def test_a_csv_baseline_reads_like_the_jsonl(runs: dict[str, Any]) -> None:
    """A .csv scores file gives the same baseline values as the .jsonl of the same run."""
    out = runs["folder"] / "now.csv"
    args = ["rescore", str(runs["traces"]), "-e", "quoted_spans", "-o", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    from_csv = load_baseline(out).turns
    from_jsonl = load_baseline(runs["folder"] / "now.jsonl").turns
    assert {k: v[1] for k, v in from_csv.items()} == {k: v[1] for k, v in from_jsonl.items()}


def test_a_baseline_line_that_is_not_json_is_named_like_a_bad_gold_line(tmp_path: Path) -> None:
    """A scores line that is not JSON is a BaselineError naming file and line, in the words a
    bad gold-answers line gets (one JSON lines reader for both)."""
    from groundwire.offline.expected import ExpectedAnswers

    record = {"trace_id": "a" * 32, "span_id": "b" * 16, "query": "q", "scores": {"x": 1.0}}
    record["expected"] = "a gold answer"
    for name, loader, error in (
        ("scores.jsonl", load_baseline, BaselineError),
        ("gold.jsonl", ExpectedAnswers.load, ValueError),
    ):
        path = tmp_path / name
        path.write_text(json.dumps(record) + "\n\n{oops\n", encoding="utf-8")
        with pytest.raises(error) as raised:
            loader(path)
        assert str(raised.value).startswith(f"{path}:3: not valid JSON (")
