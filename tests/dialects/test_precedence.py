"""The dialect precedence is fixed: OpenInference, GenAI conventions, OpenLLMetry, MLflow."""

from __future__ import annotations

from typing import Any

import pytest

from groundwire.assembly import SpanRecord, span_kind, turns_from_spans
from groundwire.assembly._dialects import DIALECTS
from groundwire.assembly._reader import SpanReader


def span(
    attributes: dict[str, Any], span_id: str = "1" * 16, parent: str | None = None
) -> SpanRecord:
    """A span with these attributes."""
    return SpanRecord(
        trace_id="a" * 32,
        span_id=span_id,
        parent_span_id=parent,
        name="s",
        start_time_ns=1,
        end_time_ns=2,
        attributes=attributes,
    )


def test_dialect_order() -> None:
    """The order docs/assembly.md documents."""
    assert [d.name for d in DIALECTS] == ["openinference", "genai", "openllmetry", "mlflow"]


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"openinference.span.kind": "CHAIN", "gen_ai.operation.name": "retrieval"}, "other"),
        ({"gen_ai.operation.name": "chat", "mlflow.spanType": '"RETRIEVER"'}, "generation"),
        ({"gen_ai.operation.name": "invoke_agent", "mlflow.spanType": '"RETRIEVER"'}, "retriever"),
        ({"traceloop.span.kind": "task", "mlflow.spanType": '"RETRIEVER"'}, "other"),
        ({"gen_ai.operation.name": "vector_db_retrieve"}, "retriever"),
        ({"mlflow.spanType": '"CHAT_MODEL"'}, "generation"),
        ({}, "other"),
    ],
)
def test_kind_is_named_by_the_first_dialect_that_knows_the_span(
    attributes: dict[str, Any], kind: str
) -> None:
    """A dialect that names a role wins over later ones; an unknown GenAI operation defers."""
    assert span_kind(span(attributes)) == kind


INPUTS = [
    ("input.value", "from openinference", "openinference: input.value"),
    (
        "gen_ai.input.messages",
        '[{"role": "user", "parts": [{"type": "text", "content": "from genai"}]}]',
        "genai: gen_ai.input.messages",
    ),
    (
        "traceloop.entity.input",
        '{"inputs": "from openllmetry"}',
        "openllmetry: traceloop.entity.input",
    ),
    ("gen_ai.task.input", '{"inputs": "from the task copy"}', "openllmetry: gen_ai.task.input"),
    ("mlflow.spanInputs", '"from mlflow"', "mlflow: mlflow.spanInputs"),
]


@pytest.mark.parametrize("first", range(len(INPUTS)))
def test_input_is_read_from_the_highest_precedence_attribute_present(first: int) -> None:
    """With every later dialect's input present too, the first present one is read."""
    attributes = {key: value for key, value, _ in INPUTS[first:]}
    record = span(attributes)
    reader = SpanReader(None)
    query = reader.query(record)
    assert reader.origin(record, "query") == INPUTS[first][2]
    assert query is not None and query.startswith("from")


def test_a_span_written_in_two_dialects_gives_one_turn_read_by_precedence() -> None:
    """OpenLLMetry and MLflow attributes on the same spans: one turn, OpenLLMetry's values."""
    root = span(
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": '{"inputs": "q?"}',
            "traceloop.entity.output": '{"outputs": "a."}',
            "mlflow.spanType": '"CHAIN"',
            "mlflow.spanInputs": '"mlflow q?"',
            "mlflow.spanOutputs": '"mlflow a."',
        }
    )
    retriever = SpanRecord(
        trace_id="a" * 32,
        span_id="2" * 16,
        parent_span_id=root.span_id,
        name="r",
        start_time_ns=1,
        end_time_ns=1,
        attributes={
            "gen_ai.operation.name": "vector_db_retrieve",
            "traceloop.entity.output": '{"documents": [{"page_content": "doc"}]}',
            "mlflow.spanType": '"RETRIEVER"',
            "mlflow.spanOutputs": '[{"page_content": "mlflow doc"}]',
        },
    )
    (turn,) = turns_from_spans([root, retriever])
    assert (turn.query, turn.context_texts, turn.answer) == ("q?", ["doc"], "a.")
