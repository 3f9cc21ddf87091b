"""MLflow Tracing 3.17 (LangChain autolog) exported over OTLP gives the app's real turns."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwire.assembly import SpanRecord, explain_traces, turns_from_spans
from groundwire.testing import OtlpHttpReceiver
from tests.dialects._apps import (
    ANSWERS,
    QUESTIONS,
    essence,
    expected_langchain,
    received_records,
    record_mlflow_langchain,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mlflow_spans() -> Iterator[list[SpanRecord]]:
    """The LCEL app autologged by MLflow in a child process, its spans received over OTLP."""
    with OtlpHttpReceiver() as receiver:
        record_mlflow_langchain(f"http://127.0.0.1:{receiver.port}/v1/traces")
        assert receiver.wait_for(lambda r: len(r.spans()) >= 18, timeout_s=30)
        yield received_records(receiver.spans())


def test_mlflow_langchain_turns_are_the_apps(mlflow_spans: list[SpanRecord]) -> None:
    """Each question gives one turn: its query, the retriever's documents in order, the answer."""
    turns = turns_from_spans(mlflow_spans)
    assert essence(turns) == [
        expected_langchain(q, a) for q, a in zip(QUESTIONS, ANSWERS, strict=True)
    ]
    assert {t.attributes.get("service.name") for t in turns} == {"mlflow-app"}
    assert [c.metadata for c in turns[0].contexts] == [{"row": 0}, {"row": 1}]


def test_mlflow_origins_are_its_json_encoded_attributes(mlflow_spans: list[SpanRecord]) -> None:
    """Query, contexts and answer are read from `mlflow.spanInputs` / `mlflow.spanOutputs`."""
    for report in explain_traces(mlflow_spans):
        assert report.dialects == ["mlflow"]
        (turn,) = report.turns
        assert turn.root_name == "RunnableSequence"
        assert turn.query is not None and turn.query.origin == "mlflow: mlflow.spanInputs"
        assert turn.answer is not None and turn.answer.origin == "mlflow: mlflow.spanOutputs"
        assert [(c.span_name, c.origin) for c in turn.contexts] == [
            ("KeywordRetriever", "mlflow: mlflow.spanOutputs")
        ]
