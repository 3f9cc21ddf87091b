"""OpenLLMetry's older attribute forms, still in traces recorded by earlier releases.

Earlier OpenLLMetry releases wrote model messages as indexed attributes (`gen_ai.prompt.{i}.*`,
`gen_ai.completion.{i}.*`, before that `llm.prompts.{i}.*` / `llm.completions.{i}.*`) and marked
model spans with `llm.request.type`. These tests take the recorded 0.62 LangChain trace and
rewrite its chat span into each older form (those releases cannot be installed beside 0.62).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from groundwire.assembly import SpanRecord, explain_traces, turns_from_spans
from tests.dialects._apps import ANSWERS, QUESTIONS, TRACES, expected_langchain
from tests.dialects.test_recorded_files import read

STREAMED = '{"outputs": "<generator object RunnableSequence.transform at 0x7f00>"}'


def first_trace() -> list[SpanRecord]:
    """The first question's spans from the recorded OpenLLMetry LangChain trace."""
    spans = read(TRACES / "openllmetry_langchain.jsonl")
    trace_id = next(s.trace_id for s in spans if s.parent_span_id is None)
    return [s for s in spans if s.trace_id == trace_id]


def legacy(
    spans: list[SpanRecord], prompts: str, completions: str, **changes: Any
) -> list[SpanRecord]:
    """The chat span rewritten into indexed messages under the given prefixes; root streamed."""
    out = []
    for span in spans:
        attributes = dict(span.attributes)
        if span.name.endswith(".chat"):
            inputs = json.loads(attributes.pop("gen_ai.input.messages"))
            outputs = json.loads(attributes.pop("gen_ai.output.messages"))
            attributes.pop("gen_ai.operation.name")
            attributes["llm.request.type"] = "chat"
            for i, message in enumerate(changes.get("inputs", inputs)):
                attributes[f"{prompts}.{i}.role"] = message["role"]
                attributes[f"{prompts}.{i}.content"] = message["parts"][0]["content"]
            for i, message in enumerate(outputs):
                attributes[f"{completions}.{i}.role"] = message["role"]
                attributes[f"{completions}.{i}.content"] = message["parts"][0]["content"]
        if span.parent_span_id is None:
            attributes["traceloop.entity.output"] = STREAMED
            attributes.pop("gen_ai.task.output")
        if changes.get("no_document_text") and span.name.startswith("vector_db_retrieve"):
            for key in ("traceloop.entity.output", "gen_ai.task.output"):
                attributes[key] = json.dumps({"documents": [{"metadata": {}}], "count": 1})
        out.append(dataclasses.replace(span, attributes=attributes))
    return out


@pytest.mark.parametrize(
    ("prompts", "completions"),
    [("gen_ai.prompt", "gen_ai.completion"), ("llm.prompts", "llm.completions")],
)
def test_streamed_answer_is_read_from_indexed_completions(prompts: str, completions: str) -> None:
    """A streamed root's answer comes from the model span's `{completions}.{i}.content`."""
    spans = legacy(first_trace(), prompts, completions)
    (turn,) = turns_from_spans(spans)
    assert (turn.query, turn.context_texts, turn.answer) == expected_langchain(
        QUESTIONS[0], ANSWERS[0]
    )
    (report,) = explain_traces(spans)
    (root,) = report.turns
    assert root.answer is not None
    assert root.answer.origin == f"openllmetry: {completions}.{{i}}.content"
    assert root.answer.span_name == "FakeListChatModel.chat"


def test_contexts_from_an_indexed_system_prompt_when_documents_have_no_text() -> None:
    """No document text: the contexts are the model span's system prompts (`gen_ai.prompt`)."""
    question = QUESTIONS[0]
    documents = expected_langchain(question, "")[1]
    messages = [
        *({"role": "system", "parts": [{"content": text}]} for text in documents),
        {"role": "user", "parts": [{"content": question}]},
    ]
    spans = legacy(
        first_trace(), "gen_ai.prompt", "gen_ai.completion", inputs=messages, no_document_text=True
    )
    (turn,) = turns_from_spans(spans)
    assert turn.context_texts == documents
    assert {c.metadata["groundwire.context.source"] for c in turn.contexts} == {
        "openllmetry: gen_ai.prompt.{i}.content"
    }
