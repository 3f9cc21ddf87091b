"""Re-score traces stored in a real Phoenix and read the annotations back over its REST API."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from groundwire import RagTurn
from groundwire.assembly import turns_from_spans
from groundwire.cli import app
from groundwire.phoenix import PhoenixQuery, rescore_phoenix
from groundwire.testing import OpenAIServer
from tests.phoenix._app import read_annotations, stored_spans
from tests.phoenix._proxy import PhoenixProxy
from tests.phoenix.conftest import new_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
"""The first test may build the cached Phoenix venv (minutes on a busy machine)."""


def _url(base_url: str, project: str) -> str:
    """`phoenix://HOST:PORT/PROJECT` for a base URL."""
    return f"phoenix://{base_url.removeprefix('http://')}/{project}"


def _rows(path: Path) -> list[dict[str, Any]]:
    """The records of a .jsonl output."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def _roots(base_url: str, project: str) -> dict[str, str]:
    """Root span id -> the question asked, from what Phoenix stored."""
    roots: dict[str, str] = {}
    for span in stored_spans(base_url, project):
        if span["parent_span_id"] is None:
            attributes = {a["key"]: a["value"]["string_value"] for a in span["attributes"]}
            roots[span["span_id"]] = attributes["input.value"]
    return roots


def test_rescore_annotates_each_turn_once_per_evaluator(
    phoenix: str, judge: OpenAIServer, tmp_path: Path
) -> None:
    """Scores land on the turns' spans: one annotation per evaluator and span, kind, values, and
    a second run updates them in place instead of adding duplicates."""
    project, _ = new_project(phoenix)
    out = tmp_path / "scores.jsonl"
    args = ["rescore", _url(phoenix, project), "-e", "quoted_spans,groundedness", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--annotate-phoenix"])
    assert result.exit_code == 0, result.output
    assert "Phoenix annotations: 6 written, 0 failed" in " ".join(result.stderr.split())
    rows = _rows(out)
    roots = _roots(phoenix, project)
    assert {row["span_id"]: row["query"] for row in rows} == roots
    quoted = {row["query"]: row["scores"]["quoted_spans"] for row in rows}
    assert quoted["What is the capital of France?"] == 1.0
    assert quoted["What is the capital of Spain?"] == 1.0
    assert quoted["What is the longest river in France?"] < 0.5

    first = read_annotations(phoenix, project, list(roots))
    assert Counter((a["span_id"], a["name"]) for a in first) == {
        (span_id, name): 1 for span_id in roots for name in ("quoted_spans", "groundedness")
    }
    by_row = {row["span_id"]: row for row in rows}
    for note in first:
        row = by_row[note["span_id"]]
        assert note["result"]["score"] == row["scores"][note["name"]]
        assert note["result"]["label"] == row["details"][note["name"]]["label"]
        assert note["result"]["explanation"] == row["details"][note["name"]]["explanation"]
        assert note["annotator_kind"] == ("LLM" if note["name"] == "groundedness" else "CODE")
        assert note["identifier"] == "groundwire"
        assert note["metadata"]["details"] == row["details"][note["name"]]["details"]
    assert {a["result"]["score"] for a in first if a["name"] == "groundedness"} == {1.0}

    again = CliRunner().invoke(app, [*args, "--annotate-phoenix", "-q"])
    assert again.exit_code == 0, again.output
    second = read_annotations(phoenix, project, list(roots))
    assert sorted(a["id"] for a in second) == sorted(a["id"] for a in first)
    assert len(second) == 6


def test_python_function_filters_and_resume(phoenix: str, tmp_path: Path) -> None:
    """`rescore_phoenix` reads the same turns; a root filter and a time range narrow them; a
    resumed run skips what OUT holds."""
    project, spans = new_project(phoenix)
    out = tmp_path / "scores.jsonl"
    run = rescore_phoenix(_url(phoenix, project), ["quoted_spans"], out)
    assert run.summary.turns_scored == 3 and run.summary.read.spans == spans
    assert run.annotations is None
    resumed = rescore_phoenix(_url(phoenix, project), ["quoted_spans"], out, resume=True)
    assert resumed.summary.turns_scored == 0 and resumed.summary.counts.resumed == 3
    assert len(_rows(out)) == 3

    spain = PhoenixQuery(root_attributes=["input.value:What is the capital of Spain?"])
    only = rescore_phoenix(_url(phoenix, project), ["quoted_spans"], query=spain)
    assert [r.turn.query for r in only.summary.results or []] == ["What is the capital of Spain?"]
    future = PhoenixQuery(start_time="2100-01-01T00:00:00Z", page_size=5)
    none = rescore_phoenix(_url(phoenix, project), ["quoted_spans"], query=future)
    assert none.summary.turns_read == 0 and none.summary.read.spans == 0


def test_phoenix_gives_the_turns_the_app_recorded(phoenix: str) -> None:
    """Spans read back from Phoenix assemble into exactly the turns of the spans the app made:
    ids, query, contexts in order, answer."""
    memory = InMemorySpanExporter()
    project, _ = new_project(phoenix, also=memory)
    recorded = turns_from_spans(memory.get_finished_spans())
    run = rescore_phoenix(_url(phoenix, project), ["quoted_spans"])
    read = [result.turn for result in run.summary.results or []]

    def essence(turns: list[RagTurn]) -> list[tuple[Any, ...]]:
        """What a turn is made of."""
        return sorted(
            (t.trace_id, t.span_id, t.query, tuple(t.context_texts), t.answer) for t in turns
        )

    assert len(recorded) == 3
    assert essence(read) == essence(recorded)


def test_failed_annotation_posts_are_counted_and_the_run_completes(
    phoenix: str, tmp_path: Path
) -> None:
    """Annotation posts Phoenix refuses (503 after retries) are counted and reported; the scores
    are still written to OUT."""
    project, _ = new_project(phoenix)
    out = tmp_path / "scores.jsonl"
    with PhoenixProxy(phoenix, fail_annotations=True) as proxy:
        result = CliRunner().invoke(
            app,
            [
                *("rescore", _url(proxy.base_url, project), "-e", "quoted_spans"),
                *("-o", str(out), "--annotate-phoenix"),
            ],
        )
    assert result.exit_code == 0, result.output
    text = " ".join(result.stderr.split())
    assert "Phoenix annotations: 0 written, 3 failed" in text
    assert "3 annotations not written" in text and "HTTP 503" in text
    assert proxy.refused_posts == 4  # the first try and three retries
    assert len(_rows(out)) == 3
    assert read_annotations(phoenix, project, list(_roots(phoenix, project))) == []
