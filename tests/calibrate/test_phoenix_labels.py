"""`--labels phoenix://...`: human span annotations made in a real Phoenix (its own venv, as the
Phoenix tests run it) are read back over its REST API and joined with the scores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.phoenix import PhoenixClient
from tests.phoenix._app import stored_spans
from tests.phoenix._server import phoenix_server
from tests.phoenix.conftest import new_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
"""The first Phoenix test may build the cached Phoenix venv (minutes on a busy machine)."""

HUMAN_LABELS = {
    "What is the capital of France?": "pass",
    "What is the capital of Spain?": "pass",
    "What is the longest river in France?": "fail",
}
"""What a person decided about each turn's quotes (the third answer invents its quote)."""


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a real Phoenix server for this module."""
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as base_url:
        yield base_url


def _note(span_id: str, kind: str, label: str, identifier: str = "ana") -> dict[str, object]:
    """One span annotation as Phoenix's REST API takes it."""
    return {
        "span_id": span_id,
        "name": "quoted_spans",
        "annotator_kind": kind,
        "result": {"label": label},
        "identifier": identifier,
    }


def test_human_annotations_are_read_and_joined(phoenix: str, tmp_path: Path) -> None:
    """Label three turns in Phoenix, run calibrate: the HUMAN annotations on the turns' root
    spans are joined; an LLM one is ignored; one on a child span is listed as unmatched."""
    project, _ = new_project(phoenix)
    url = f"phoenix://{phoenix.removeprefix('http://')}/{project}"
    spans = stored_spans(phoenix, project)
    roots = {}
    for span in spans:
        if span["parent_span_id"] is None:
            attributes = {a["key"]: a["value"]["string_value"] for a in span["attributes"]}
            roots[attributes["input.value"]] = span["span_id"]
    child = next(span["span_id"] for span in spans if span["parent_span_id"] is not None)
    notes = [_note(roots[q], "HUMAN", label) for q, label in HUMAN_LABELS.items()]
    notes += [_note(roots["What is the capital of Spain?"], "LLM", "fail", "groundwire-llm")]
    notes += [_note(child, "HUMAN", "pass")]
    with PhoenixClient(phoenix) as client:
        assert client.post_span_annotations(notes) == len(notes)

    scores = tmp_path / "scores.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["rescore", url, "-e", "quoted_spans", "-o", str(scores), "-q"])
    assert result.exit_code == ExitCode.OK, result.output
    out = tmp_path / "calibration.json"
    args = ["calibrate", "--labels", url, "--scores", str(scores), "--out", str(out)]
    result = runner.invoke(app, [*args, "--resamples", "200"])
    assert result.exit_code == ExitCode.OK, result.output + result.stderr
    report = json.loads(out.read_text())
    (row,) = report["agreements"]
    assert row["n"] == 3 and row["annotator"] == "ana" and row["scale"] == "binary"
    assert row["accuracy"]["value"] == 1.0
    assert report["matched_labels"] == 3
    (unmatched,) = report["unmatched_labels"]
    assert unmatched["span_id"] == child and "no scored turn has span_id" in unmatched["reason"]


def test_no_human_annotation_is_one_line_exit_2(phoenix: str, tmp_path: Path) -> None:
    """A project nobody labelled: one line saying so, exit 2."""
    project, _ = new_project(phoenix, {"What is the capital of Spain?": "Madrid."})
    url = f"phoenix://{phoenix.removeprefix('http://')}/{project}"
    scores = tmp_path / "scores.jsonl"
    scores.write_text(
        json.dumps({"trace_id": "a", "span_id": "b", "query": "q", "scores": {"quoted_spans": 1}})
        + "\n"
    )
    result = CliRunner().invoke(app, ["calibrate", "--labels", url, "--scores", str(scores)])
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "no human (annotator kind HUMAN) span annotations" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
