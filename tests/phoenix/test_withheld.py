"""A skipped or failed evaluation is never written as a Phoenix annotation: since annotations
update in place, it would replace the real score an earlier run stored."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from groundwire import RagTurn, Score
from groundwire.cli import app
from groundwire.emit import evaluation_attributes
from groundwire.judges import skipped_score
from groundwire.offline import TurnResult
from groundwire.phoenix import AnnotationWriter, PhoenixClient
from groundwire.phoenix._online import _annotations
from groundwire.testing import OpenAIServer
from tests.phoenix._app import read_annotations, stored_spans
from tests.phoenix.conftest import new_project

SPAN_ID = "00f067aa0ba902b7"


def _scores() -> dict[str, Score]:
    """One real score, one skipped (no judge configured), one failed, one not applicable."""
    return {
        "quoted_spans": Score(name="quoted_spans", value=0.5, label="some_matched"),
        "groundedness": skipped_score("groundedness"),
        "citation_support": Score.failed("citation_support", "Timeout: judge"),
        "quote_verification": Score.not_applicable("quote_verification", "no_quotes"),
    }


def test_the_writer_posts_only_verdicts_and_counts_the_rest() -> None:
    """Skipped and failed scores are withheld (counted, said in the line); the rest are posted."""
    posted: list[dict[str, object]] = []

    def phoenix(request: httpx.Request) -> httpx.Response:
        posted.extend(json.loads(request.content)["data"])
        return httpx.Response(200, json={"data": [{"id": "x"}] * 2})

    client = PhoenixClient("http://127.0.0.1:6006", transport=httpx.MockTransport(phoenix))
    writer = AnnotationWriter(client)
    turn = RagTurn(query="q", contexts=["c"], answer="a", trace_id="ab" * 16, span_id=SPAN_ID)
    writer.add([TurnResult(turn=turn, scores=_scores())])
    writer.flush()
    assert sorted(str(note["name"]) for note in posted) == ["quote_verification", "quoted_spans"]
    assert writer.stats.sent == 2 and writer.stats.withheld == 2
    assert writer.stats.line() == (
        "Phoenix annotations: 2 written, 0 failed, 2 not written (evaluation skipped or "
        "failed; an earlier annotation stays)"
    )


def test_online_annotations_leave_out_skipped_and_failed_evaluations() -> None:
    """The online processor reads a span's evaluation attributes: a skipped or failed one (no
    score, label skipped/error) gives no annotation; a real or not-applicable one does."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    attributes = evaluation_attributes(list(_scores().values()))  # what online scoring writes
    with provider.get_tracer("t").start_as_current_span("turn", attributes=attributes):
        pass
    (span,) = exporter.get_finished_spans()
    found = _annotations(span, "groundwire")
    assert [(a["name"], a["result"]["score"]) for a in found] == [
        ("quoted_spans", 0.5),
        ("quote_verification", None),
    ]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_judge_less_rerun_keeps_the_judged_annotations(
    phoenix: str, judge: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real Phoenix: a run with a judge writes groundedness 1.0; a re-run without a judge skips
    groundedness, says so, and leaves those annotations as they were."""
    project, _ = new_project(phoenix)
    url = f"phoenix://{phoenix.removeprefix('http://')}/{project}"
    args = ["rescore", url, "-e", "quoted_spans,groundedness", "--annotate-phoenix"]
    judged = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "a.jsonl")])
    assert judged.exit_code == 0, judged.output
    roots = [s["span_id"] for s in stored_spans(phoenix, project) if s["parent_span_id"] is None]
    before = read_annotations(phoenix, project, roots)
    assert {a["result"]["score"] for a in before if a["name"] == "groundedness"} == {1.0}

    for name in ("GROUNDWIRE_JUDGE_BASE_URL", "GROUNDWIRE_JUDGE_MODEL", "GROUNDWIRE_JUDGE_API_KEY"):
        monkeypatch.delenv(name)
    bare = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "b.jsonl")])
    assert "3 written, 0 failed, 3 not written" in " ".join(bare.stderr.split()), bare.output
    after = read_annotations(phoenix, project, roots)
    grounded = [a for a in after if a["name"] == "groundedness"]
    assert len(grounded) == 3 and {a["result"]["score"] for a in grounded} == {1.0}
    assert {a["result"]["label"] for a in grounded} != {"skipped"}
