"""`groundwire inspect` and the explanation `groundwire rescore` prints when no turn is found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.offline import rescore
from tests.dialects._apps import TRACES

runner = CliRunner(env={"COLUMNS": "300"})
NO_CONTENT = TRACES / "openllmetry_langchain_no_content.jsonl"
REASON = (
    "2 traces from service hidden-rag (genai, openllmetry): "
    "content not recorded (TRACELOOP_TRACE_CONTENT=false)"
)


def test_inspect_shows_each_turn_and_where_its_parts_were_read() -> None:
    """Rich output: turn root, query/contexts/answer with dialect and attribute; exit 0."""
    result = runner.invoke(app, ["inspect", str(TRACES / "openllmetry_langchain.jsonl")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "turn root RunnableSequence.workflow" in out
    assert "← openllmetry: traceloop.entity.input on RunnableSequence.workflow" in out
    assert (
        "2 from openllmetry: traceloop.entity.output on vector_db_retrieve KeywordRetriever" in out
    )
    assert "2 traces, 18 spans, 2 turns" in out


def test_inspect_json_says_where_contexts_came_from() -> None:
    """`--json`: one document; a GenAI turn's contexts name the chat span's input messages."""
    result = runner.invoke(app, ["inspect", str(TRACES / "genai_openai_v2.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert (payload["turns"], payload["spans"], payload["no_turn"]) == (2, 6, [])
    turn = payload["traces"][0]["turns"][0]
    assert turn["contexts"] == [
        {
            "span_id": turn["contexts"][0]["span_id"],
            "span": "chat small-model",
            "read_from": "genai: gen_ai.input.messages",
            "documents": 2,
        }
    ]
    assert turn["turn"]["contexts"][0]["metadata"] == {
        "groundwire.context.source": "genai: gen_ai.input.messages"
    }


def test_inspect_reads_content_from_events_beside_the_spans() -> None:
    """Log records in the file put the model call's content back: contexts and their origin."""
    result = runner.invoke(app, ["inspect", str(TRACES / "genai_events.jsonl"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["turns"] == 2
    (origin,) = payload["traces"][0]["turns"][0]["contexts"]
    assert origin["read_from"] == (
        "genai: gen_ai.input.messages (event gen_ai.client.inference.operation.details)"
    )


def test_inspect_explains_a_trace_without_turns_and_exits_no_turns() -> None:
    """Content capture off: each trace says why, the family line sums up; exit 5 (NO_TURNS)."""
    result = runner.invoke(app, ["inspect", str(NO_CONTENT)])
    assert result.exit_code == 5
    out = " ".join(result.output.split())
    assert "no turn: content not recorded (TRACELOOP_TRACE_CONTENT=false)" in out
    assert f"no turn: {REASON}" in out


def test_inspect_one_trace_and_bad_trace_ids() -> None:
    """`--trace ID` shows that trace only; a malformed or absent id is a bad argument (2)."""
    path = TRACES / "mlflow_langchain.jsonl"
    first = json.loads(runner.invoke(app, ["inspect", str(path), "--json"]).output)["traces"][0]
    one = runner.invoke(app, ["inspect", str(path), "--trace", first["trace_id"], "--json"])
    assert [t["trace_id"] for t in json.loads(one.output)["traces"]] == [first["trace_id"]]
    assert runner.invoke(app, ["inspect", str(path), "--trace", "xyz"]).exit_code == 2
    absent = runner.invoke(app, ["inspect", str(path), "--trace", "0" * 31 + "1"])
    assert absent.exit_code == 2
    assert "no span of trace" in absent.output


def test_inspect_reports_bad_lines_and_unreadable_files(tmp_path: Path) -> None:
    """A bad line is named with its place and counted (exit 3); no span at all exits 4."""
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        (TRACES / "openllmetry_langchain.jsonl").read_text(encoding="utf-8") + "{not json\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["inspect", str(mixed)])
    assert result.exit_code == 3
    assert "mixed.jsonl:3" in result.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert runner.invoke(app, ["inspect", str(empty)]).exit_code == 4
    assert runner.invoke(app, ["inspect", str(tmp_path / "missing.jsonl")]).exit_code == 2


def test_rescore_summary_explains_an_empty_result(tmp_path: Path) -> None:
    """`rescore` of traces without content: no turn, and the summary says why per family."""
    summary = rescore(NO_CONTENT, ["quoted_spans"], tmp_path / "out.jsonl")
    assert (summary.read.spans, summary.turns_read) == (18, 0)
    assert summary.no_turn_reasons == [REASON]
    copy = tmp_path / "hidden.jsonl"
    shutil.copy(NO_CONTENT, copy)
    result = runner.invoke(
        app, ["rescore", str(copy), "-e", "quoted_spans", "-o", str(tmp_path / "o.jsonl"), "-q"]
    )
    assert f"no turn found: {REASON}" in " ".join(result.output.split())
