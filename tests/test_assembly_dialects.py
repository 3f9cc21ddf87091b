"""Each dialect's reading rules (docs/assembly.md, "Dialects" and "What is read"), from hand-built
records: the role, input, output, documents and instructions every instrumentor's attributes give.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from groundwire import Context
from groundwire.assembly import SpanRecord, explain_traces, span_kind, turns_from_spans
from groundwire.assembly._dialects import DIALECTS, dialect_rank
from groundwire.assembly._dialects._genai import system_message_parts, text_parts
from groundwire.assembly._kinds import (
    KIND_EMBEDDING,
    KIND_GENERATION,
    KIND_OTHER,
    KIND_RERANKER,
    KIND_RETRIEVER,
)
from tests.assembly_records import KIND, OP, oi, oi_docs, rag_trace, record, sid


def _kind(attributes: dict[str, Any]) -> str:
    return span_kind(record(1, attributes=attributes))


def _one_turn(records: list[SpanRecord]) -> tuple[str, list[str], str]:
    (turn,) = turns_from_spans(records)
    return turn.query, list(turn.context_texts), turn.answer


def _origins(records: list[SpanRecord]) -> tuple[str | None, list[str | None], str | None]:
    (report,) = explain_traces(records)
    (turn,) = report.turns
    assert turn.query is not None and turn.answer is not None
    return turn.query.origin, [c.origin for c in turn.contexts], turn.answer.origin


# --- roles ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({KIND: "RETRIEVER"}, KIND_RETRIEVER),
        ({KIND: "retriever"}, KIND_RETRIEVER),
        ({KIND: "RERANKER"}, KIND_RERANKER),
        ({KIND: "LLM"}, KIND_GENERATION),
        ({KIND: "EMBEDDING"}, KIND_EMBEDDING),
        ({KIND: "CHAIN", OP: "retrieval"}, KIND_OTHER),
        ({KIND: 7, OP: "retrieval"}, KIND_RETRIEVER),
        ({OP: "retrieval"}, KIND_RETRIEVER),
        ({OP: "chat"}, KIND_GENERATION),
        ({OP: "text_completion"}, KIND_GENERATION),
        ({OP: "generate_content"}, KIND_GENERATION),
        ({OP: "embeddings"}, KIND_EMBEDDING),
        ({OP: "invoke_agent"}, KIND_OTHER),
        ({OP: 3}, KIND_OTHER),
        ({OP: ["retrieval"]}, KIND_OTHER),
        ({OP: "vector_db_retrieve"}, KIND_RETRIEVER),
        ({"traceloop.entity.name": "VectorIndexRetriever.task"}, KIND_RETRIEVER),
        ({"traceloop.entity.name": "OpenAI.LLM.task"}, KIND_GENERATION),
        ({"traceloop.entity.name": "x.task", "gen_ai.output.messages": "[]"}, KIND_GENERATION),
        ({"traceloop.entity.name": "x.task"}, KIND_OTHER),
        ({"traceloop.entity.name": 5, "gen_ai.output.messages": "[]"}, KIND_OTHER),
        ({"llm.request.type": "chat"}, KIND_GENERATION),
        ({"llm.request.type": "completion"}, KIND_GENERATION),
        ({"llm.request.type": "rerank"}, KIND_OTHER),
        ({"traceloop.span.kind": "task", "mlflow.spanType": '"RETRIEVER"'}, KIND_OTHER),
        ({"mlflow.spanType": '"RETRIEVER"'}, KIND_RETRIEVER),
        ({"mlflow.spanType": "RETRIEVER"}, KIND_RETRIEVER),
        ({"mlflow.spanType": '"retriever"'}, KIND_RETRIEVER),
        ({"mlflow.spanType": '"RERANKER"'}, KIND_RERANKER),
        ({"mlflow.spanType": '"CHAT_MODEL"'}, KIND_GENERATION),
        ({"mlflow.spanType": '"LLM"'}, KIND_GENERATION),
        ({"mlflow.spanType": '"EMBEDDING"'}, KIND_EMBEDDING),
        ({"mlflow.spanType": '"CHAIN"'}, KIND_OTHER),
        ({"mlflow.spanType": '"'}, KIND_OTHER),
        ({"mlflow.spanType": '"LLM'}, KIND_OTHER),
        ({"mlflow.spanType": 'LLM"'}, KIND_OTHER),
        ({"mlflow.spanType": 1}, KIND_OTHER),
        ({}, KIND_OTHER),
    ],
)
def test_role_is_the_first_dialect_that_names_one(attributes: dict[str, Any], kind: str) -> None:
    """Each dialect's role attribute, case rules and fall-through to the next dialect."""
    assert _kind(attributes) == kind


def test_dialects_rank_in_documented_precedence() -> None:
    """OpenInference, GenAI, OpenLLMetry, MLflow; unknown names rank after all of them."""
    assert [d.name for d in DIALECTS] == ["openinference", "genai", "openllmetry", "mlflow"]
    assert [dialect_rank(d.name) for d in DIALECTS] == [0, 1, 2, 3]
    assert dialect_rank("zipkin") == 4


def test_each_dialect_recognises_its_own_marker_attributes() -> None:
    """`recognises` is true exactly for spans carrying one of the dialect's own attributes."""
    cases = {
        "openinference": {KIND: "CHAIN"},
        "genai": {OP: "chat"},
        "openllmetry": {"traceloop.workflow.name": "w"},
        "mlflow": {"mlflow.traceRequestId": "tr-1"},
    }
    for name, attributes in cases.items():
        assert [d.name for d in DIALECTS if d.recognises(attributes)] == [name]
    assert not any(d.recognises({"input.value": "q"}) for d in DIALECTS)


# --- OpenInference --------------------------------------------------------------------------


def test_openinference_documents_are_regrouped_by_numeric_index() -> None:
    """`retrieval.documents.{i}.document.*` sorted by i as a number; malformed keys skipped."""
    retriever = oi(
        "RETRIEVER",
        **{
            "retrieval.documents.10.document.content": "ten",
            "retrieval.documents.2.document.content": "two",
            "retrieval.documents.2.document.id": "id-2",
            "retrieval.documents.2.document.score": 0.5,
            "retrieval.documents.2.document.metadata": '{"page": 3}',
            "retrieval.documents.x.document.content": "bad index",
            "retrieval.documents.3.content": "no document. part",
            "retrieval.documents.4.document.id": "no text",
            "retrieval.documentsX.5.document.content": "other prefix",
        },
    )
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=retriever,
        model=oi("LLM"),
    )
    (turn,) = turns_from_spans(records)
    assert list(turn.contexts) == [
        Context(text="two", id="id-2", score=0.5, rank=0, metadata={"page": 3}),
        Context(text="ten", rank=1),
    ]


def test_reranker_reads_its_output_documents_and_query() -> None:
    """A reranker's documents are `reranker.output_documents`; its `reranker.query` is a query."""
    records = [
        record(
            1,
            start=0,
            end=100,
            attributes={KIND: "CHAIN", "output.value": "a", "input.value": '{"x": 1, "y": 2}'},
        ),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("r1", "r2"))),
        record(
            3,
            1,
            start=21,
            end=25,
            attributes=oi(
                "RERANKER",
                **{"reranker.query": "the question"},
                **oi_docs("best", prefix="reranker.output_documents"),
                **oi_docs("ignored", prefix="retrieval.documents"),
            ),
        ),
        record(4, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _one_turn(records) == ("the question", ["best"], "a")
    query, contexts, answer = _origins(records)
    assert query == "openinference: reranker.query"
    assert contexts == [
        "openinference: retrieval.documents",
        "openinference: reranker.output_documents",
    ]
    assert answer == "openinference: output.value"


def test_openinference_mime_types_decide_json_or_text() -> None:
    """`input.mime_type`/`output.mime_type` text/plain keep JSON-looking values as text."""
    text = '{"answer": "inner"}'
    records = rag_trace(
        root=oi(
            "CHAIN",
            **{
                "input.value": '{"question": "inner q"}',
                "input.mime_type": "text/plain",
                "output.value": text,
                "output.mime_type": "text/plain",
            },
        ),
        retriever=oi("RETRIEVER", **oi_docs("d")),
        model=oi("LLM"),
    )
    assert _one_turn(records) == ('{"question": "inner q"}', ["d"], text)
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": '{"question": "inner q"}', "output.value": text}),
        retriever=oi("RETRIEVER", **oi_docs("d")),
        model=oi("LLM"),
    )
    assert _one_turn(records) == ("inner q", ["d"], "inner")


# --- GenAI ----------------------------------------------------------------------------------


def _genai_messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def test_genai_turn_reads_messages_query_text_and_documents() -> None:
    """GenAI: input/output messages, `retrieval.query.text` as text, JSON document objects."""
    documents = [
        {"id": "a", "score": 0.9, "content": "alpha"},
        {"id": 7, "score": "0.25", "text": "beta"},
        {"id": "c", "score": 0.1},
    ]
    records = rag_trace(
        root={OP: "invoke_workflow", "gen_ai.output.messages": _genai_messages("assistant", "ans")},
        retriever={
            OP: "retrieval",
            "gen_ai.retrieval.query.text": '{"question": "literal"}',
            "gen_ai.retrieval.documents": json.dumps(documents),
        },
        model={OP: "chat"},
    )
    # the root has no input at all: it is no candidate, but as the trace's outermost span around
    # a retrieval and a model call it is a bare turn root (docs/assembly.md, "Turns")
    (bare,) = turns_from_spans(records)
    assert (bare.query, bare.answer, bare.span_id) == ('{"question": "literal"}', "ans", sid(1))
    records[0] = record(
        1,
        start=0,
        end=100,
        attributes={**records[0].attributes, "gen_ai.input.messages": "[]"},
    )
    (turn,) = turns_from_spans(records)
    assert turn.query == '{"question": "literal"}'
    assert turn.answer == "ans"
    assert list(turn.contexts) == [
        Context(text="alpha", id="a", score=0.9, rank=0),
        Context(text="beta", id="7", score=0.25, rank=1),
    ]
    query, contexts, answer = _origins(records)
    assert query == "genai: gen_ai.retrieval.query.text"
    assert contexts == ["genai: gen_ai.retrieval.documents"]
    assert answer == "genai: gen_ai.output.messages"


def test_genai_structured_documents_and_non_list_documents() -> None:
    """Structured (non-string) document lists are read; a non-list value records no documents."""
    base: dict[str, Any] = {OP: "retrieval", "gen_ai.retrieval.query.text": "q"}
    root = {
        "gen_ai.input.messages": _genai_messages("user", "q"),
        "gen_ai.output.messages": _genai_messages("assistant", "a"),
    }
    structured = rag_trace(
        root=root,
        retriever={**base, "gen_ai.retrieval.documents": ({"content": "x"},)},
        model={OP: "chat"},
    )
    assert _one_turn(structured) == ("q", ["x"], "a")
    not_a_list = rag_trace(
        root=root,
        retriever={**base, "gen_ai.retrieval.documents": '{"content": "x"}'},
        model={OP: "chat", "gen_ai.system_instructions": '["from instructions"]'},
    )
    assert _one_turn(not_a_list) == ("q", ["from instructions"], "a")


def test_genai_documents_only_count_on_retrievers() -> None:
    """`gen_ai.retrieval.documents` on a model call is not a retrieval's output."""
    records = rag_trace(
        root={
            "gen_ai.input.messages": _genai_messages("user", "q"),
            "gen_ai.output.messages": _genai_messages("assistant", "a"),
        },
        retriever={OP: "retrieval", "gen_ai.retrieval.documents": '[{"content": "real"}]'},
        model={OP: "chat", "gen_ai.retrieval.documents": '[{"content": "fake"}]'},
    )
    assert _one_turn(records) == ("q", ["real"], "a")


def test_system_instructions_stand_in_for_missing_document_text() -> None:
    """No document text: the first later model call's instructions are the contexts, tagged."""
    root = {
        "gen_ai.input.messages": _genai_messages("user", "q"),
        "gen_ai.output.messages": _genai_messages("assistant", "a"),
    }
    retriever = {OP: "retrieval", "gen_ai.retrieval.documents": '[{"id": "x"}]'}
    instructions = json.dumps(
        [{"type": "text", "content": "ctx one"}, {"type": "text", "content": "ctx two"}]
    )
    records = [
        record(1, start=0, end=100, attributes=root),
        record(
            2,
            1,
            start=5,
            end=8,
            attributes={OP: "chat", "gen_ai.system_instructions": '["too early"]'},
        ),
        record(3, 1, start=10, end=20, attributes=retriever),
        record(4, 1, start=30, end=40, attributes={OP: "chat"}),
        record(
            5,
            1,
            start=50,
            end=60,
            attributes={OP: "chat", "gen_ai.system_instructions": instructions},
        ),
        record(
            6,
            1,
            start=70,
            end=80,
            attributes={OP: "chat", "gen_ai.system_instructions": '["later"]'},
        ),
    ]
    (turn,) = turns_from_spans(records)
    source = "groundwire.context.source"
    assert list(turn.contexts) == [
        Context(text="ctx one", rank=0, metadata={source: "genai: gen_ai.system_instructions"}),
        Context(text="ctx two", rank=1, metadata={source: "genai: gen_ai.system_instructions"}),
    ]
    (report,) = explain_traces(records)
    assert [(c.span_id, c.origin, c.count) for c in report.turns[0].contexts] == [
        (format(5, "016x"), "genai: gen_ai.system_instructions", 2)
    ]


def test_instructions_fall_back_to_system_messages() -> None:
    """Empty `gen_ai.system_instructions`: the system/developer messages' text parts instead."""
    messages = [
        {"role": "System", "parts": [{"type": "text", "content": "sys"}]},
        {"role": "developer", "content": "dev"},
        {"role": "user", "parts": [{"type": "text", "content": "q"}]},
        "not a message",
        {"role": 3, "content": "numeric role"},
    ]
    records = rag_trace(
        root={
            "gen_ai.input.messages": _genai_messages("user", "q"),
            "gen_ai.output.messages": _genai_messages("assistant", "a"),
        },
        retriever={OP: "retrieval"},
        model={
            OP: "chat",
            "gen_ai.system_instructions": "[]",
            "gen_ai.input.messages": json.dumps(messages),
        },
    )
    (turn,) = turns_from_spans(records)
    assert turn.context_texts == ["sys", "dev"]
    assert turn.contexts[0].metadata == {
        "groundwire.context.source": "genai: gen_ai.input.messages"
    }
    structured = rag_trace(
        root={
            "gen_ai.input.messages": _genai_messages("user", "q"),
            "gen_ai.output.messages": _genai_messages("assistant", "a"),
        },
        retriever={OP: "retrieval"},
        model={OP: "chat", "gen_ai.system_instructions": ("only",)},
    )
    assert _one_turn(structured) == ("q", ["only"], "a")
    none = rag_trace(
        root={
            "gen_ai.input.messages": _genai_messages("user", "q"),
            "gen_ai.output.messages": _genai_messages("assistant", "a"),
        },
        retriever={OP: "retrieval"},
        model={OP: "chat", "gen_ai.input.messages": _genai_messages("user", "q")},
    )
    assert _one_turn(none) == ("q", [], "a")


def test_text_parts_keeps_only_non_blank_text() -> None:
    """Strings and `type: text` parts (`content` or `text`); blanks and other types dropped."""
    assert text_parts("one string") == ["one string"]
    assert text_parts("  ") == []
    assert text_parts(5) == []
    assert text_parts(
        [
            "plain",
            " ",
            {"type": "text", "content": "c"},
            {"text": "t"},
            {"type": "image", "content": "pixels"},
            {"type": "text", "content": " "},
            {"type": "text", "content": 3},
            {"content": "c2", "text": "ignored"},
            4,
        ]
    ) == ["plain", "c", "t", "c2"]


def test_system_message_parts_reads_system_and_developer_messages() -> None:
    """Only messages whose role is system or developer (any case); `parts` before `content`."""
    assert system_message_parts("[]") == []
    assert system_message_parts(None) == []
    assert system_message_parts(
        [
            ["not", "a", "mapping"],
            {"role": "user", "content": "u"},
            {"role": "SYSTEM", "parts": ["p"], "content": "c"},
            {"role": None, "content": "none"},
            {"role": "developer", "content": "d"},
        ]
    ) == ["p", "d"]


# --- OpenLLMetry ----------------------------------------------------------------------------


def _tl(**attributes: Any) -> dict[str, Any]:
    return {"traceloop.span.kind": "task", **attributes}


def test_openllmetry_langchain_wrappers_are_unwrapped() -> None:
    """`{"inputs": ...}` / `{"outputs": ...}` unwrapped; retriever `{"documents": [...]}`."""
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": json.dumps({"inputs": {"question": "q"}}),
                "traceloop.entity.output": json.dumps({"outputs": '{"answer": "json-looking"}'}),
            }
        ),
        retriever={
            OP: "vector_db_retrieve",
            "traceloop.entity.output": json.dumps(
                {
                    "documents": [
                        {"page_content": "p1", "metadata": {"s": 1}},
                        {"page_content": "p2"},
                    ]
                }
            ),
        },
        model=_tl(**{"traceloop.entity.name": "ChatOpenAI.LLM.task"}),
    )
    (turn,) = turns_from_spans(records)
    assert (turn.query, turn.answer) == ("q", '{"answer": "json-looking"}')
    assert list(turn.contexts) == [
        Context(text="p1", rank=0, metadata={"s": 1}),
        Context(text="p2", rank=1),
    ]
    assert _origins(records) == (
        "openllmetry: traceloop.entity.input",
        ["openllmetry: traceloop.entity.output"],
        "openllmetry: traceloop.entity.output",
    )


def test_openllmetry_task_copies_are_read_after_the_entity_values() -> None:
    """`gen_ai.task.input`/`output` serve when the entity values yield no text."""
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": json.dumps({"inputs": {"a": 1, "b": 2}}),
                "gen_ai.task.input": "task q",
                "gen_ai.task.output": {"outputs": "task a"},
            }
        ),
        retriever={
            OP: "vector_db_retrieve",
            "traceloop.entity.output": "7",
            "gen_ai.task.output": json.dumps({"documents": [{"text": "t1"}]}),
        },
        model={"llm.request.type": "chat"},
    )
    assert _one_turn(records) == ("task q", ["t1"], "task a")
    assert _origins(records) == (
        "openllmetry: gen_ai.task.input",
        ["openllmetry: gen_ai.task.output"],
        "openllmetry: gen_ai.task.output",
    )


def test_openllmetry_llamaindex_nodes_are_documents() -> None:
    """A list of JSON `NodeWithScore`s: node text, `id_`, outer score and node metadata."""
    nodes = [
        json.dumps({"node": {"text": "n1", "id_": "i1", "metadata": {"f": "a.txt"}}, "score": 0.7}),
        {"node": {"text": "n2", "id_": "i2"}, "score": None},
        {"text": "plain object"},
        {"node": "not a mapping", "content": "outer content"},
        "not json",
        3,
    ]
    records = rag_trace(
        root=_tl(**{"traceloop.entity.input": '"q"', "traceloop.entity.output": '"a"'}),
        retriever=_tl(
            **{
                "traceloop.entity.name": "VectorIndexRetriever.task",
                "traceloop.entity.output": json.dumps(nodes),
            }
        ),
        model=_tl(**{"traceloop.entity.name": "x.task", "gen_ai.output.messages": "[]"}),
    )
    (turn,) = turns_from_spans(records)
    assert (turn.query, turn.answer) == ("q", "a")
    assert list(turn.contexts) == [
        Context(text="n1", id="i1", score=0.7, rank=0, metadata={"f": "a.txt"}),
        Context(text="n2", id="i2", rank=1),
        Context(text="plain object", rank=2),
        Context(text="outer content", rank=3),
    ]


def test_openllmetry_documents_only_from_retrievers_and_lists() -> None:
    """A non-retriever's output or a scalar output is no document list."""
    records = rag_trace(
        root=_tl(**{"traceloop.entity.input": '"q"', "traceloop.entity.output": '"a"'}),
        retriever={OP: "vector_db_retrieve", "traceloop.entity.output": '"just text"'},
        model={"llm.request.type": "completion", "traceloop.entity.output": '[{"text": "x"}]'},
    )
    (report,) = explain_traces(records)
    assert report.turns[0].turn is not None
    assert list(report.turns[0].turn.contexts) == []
    assert report.turns[0].contexts == []


def test_openllmetry_indexed_messages_of_older_releases() -> None:
    """`gen_ai.prompt.{i}.*` / `gen_ai.completion.{i}.*` regrouped by index on a model call.

    The system prompts stand in for missing document text; the completion is the answer of a
    root that recorded only a stream placeholder.
    """
    model = {
        "llm.request.type": "chat",
        "gen_ai.prompt.1.content": "user question",
        "gen_ai.prompt.0.role": "system",
        "gen_ai.prompt.0.content": "system text",
        "gen_ai.prompt.0.tool_calls": "ignored",
        "gen_ai.completion.0.content": "the answer",
    }
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": '"q"',
                "traceloop.entity.output": '"<generator object stream at 0x7f>"',
            }
        ),
        retriever={OP: "vector_db_retrieve"},
        model=model,
    )
    (turn,) = turns_from_spans(records)
    assert (turn.query, turn.answer) == ("q", "the answer")
    assert list(turn.contexts) == [
        Context(
            text="system text",
            rank=0,
            metadata={"groundwire.context.source": "openllmetry: gen_ai.prompt.{i}.content"},
        )
    ]
    assert _origins(records)[2] == "openllmetry: gen_ai.completion.{i}.content"


def test_openllmetry_llm_prompts_prefix_and_default_roles() -> None:
    """`llm.prompts.{i}` / `llm.completions.{i}`: a message without role is user / assistant."""
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": '"q"',
                "traceloop.entity.output": '"<async_generator object s at 0x1>"',
            }
        ),
        retriever={OP: "vector_db_retrieve"},
        model={
            "llm.request.type": "chat",
            "llm.prompts.0.role": "system",
            "llm.prompts.0.content": "sys",
            "llm.prompts.1.content": "no role",
            "llm.completions.0.content": "done",
            "llm.completions.1.content": "tool says",
            "llm.completions.1.role": "tool",
        },
    )
    (turn,) = turns_from_spans(records)
    assert (turn.query, turn.answer, turn.context_texts) == ("q", "done", ["sys"])
    assert _origins(records) == (
        "openllmetry: traceloop.entity.input",
        ["openllmetry: llm.prompts.{i}.content"],
        "openllmetry: llm.completions.{i}.content",
    )


# --- MLflow ---------------------------------------------------------------------------------


def test_mlflow_turn_reads_json_encoded_values() -> None:
    """`mlflow.spanInputs`/`spanOutputs` are JSON; a decoded string stays text."""
    records = rag_trace(
        root={
            "mlflow.spanType": '"CHAIN"',
            "mlflow.spanInputs": json.dumps({"question": "q"}),
            "mlflow.spanOutputs": json.dumps('{"answer": "x"}'),
        },
        retriever={
            "mlflow.spanType": '"RETRIEVER"',
            "mlflow.spanOutputs": json.dumps(
                [{"page_content": "m1", "metadata": {"k": "v"}, "id": "d1"}, {"page_content": "m2"}]
            ),
        },
        model={"mlflow.spanType": '"CHAT_MODEL"'},
    )
    (turn,) = turns_from_spans(records)
    assert (turn.query, turn.answer) == ("q", '{"answer": "x"}')
    assert list(turn.contexts) == [
        Context(text="m1", id="d1", rank=0, metadata={"k": "v"}),
        Context(text="m2", rank=1),
    ]
    assert _origins(records) == (
        "mlflow: mlflow.spanInputs",
        ["mlflow: mlflow.spanOutputs"],
        "mlflow: mlflow.spanOutputs",
    )


def test_mlflow_reranker_output_replaces_and_structured_values_are_read() -> None:
    """A RERANKER's output list replaces the retrieved one; structured values need no JSON."""
    records = [
        record(
            1,
            start=0,
            end=100,
            attributes={
                "mlflow.spanType": "CHAIN",
                "mlflow.spanInputs": {"query": "q"},
                "mlflow.spanOutputs": "plain answer",
            },
        ),
        record(
            2,
            1,
            start=10,
            end=20,
            attributes={
                "mlflow.spanType": "RETRIEVER",
                "mlflow.spanOutputs": [{"page_content": "r"}],
            },
        ),
        record(
            3,
            1,
            start=21,
            end=25,
            attributes={
                "mlflow.spanType": "RERANKER",
                "mlflow.spanOutputs": '[{"page_content": "reranked"}]',
            },
        ),
        record(
            4,
            1,
            start=30,
            end=40,
            attributes={
                "mlflow.spanType": "LLM",
                "mlflow.spanOutputs": '[{"page_content": "not a document"}]',
            },
        ),
    ]
    assert _one_turn(records) == ("q", ["reranked"], "plain answer")


def test_mlflow_absent_values_and_non_lists() -> None:
    """No `spanOutputs` or a non-list output: no documents, no error."""
    records = rag_trace(
        root={"mlflow.spanType": "CHAIN", "mlflow.spanInputs": '"q"', "mlflow.spanOutputs": '"a"'},
        retriever={"mlflow.spanType": "RETRIEVER", "mlflow.spanOutputs": '{"page_content": "x"}'},
        model={"mlflow.spanType": "LLM"},
    )
    assert _one_turn(records) == ("q", [], "a")
    records[1] = record(2, 1, start=10, end=20, attributes={"mlflow.spanType": "RETRIEVER"})
    assert _one_turn(records) == ("q", [], "a")


# --- precedence -----------------------------------------------------------------------------


def test_a_span_written_in_two_dialects_is_read_by_the_first() -> None:
    """Input and output from OpenInference beat GenAI, GenAI beats OpenLLMetry, then MLflow."""
    root = {
        "mlflow.spanInputs": '"mlflow q"',
        "mlflow.spanOutputs": '"mlflow a"',
        "traceloop.entity.input": '"tl q"',
        "traceloop.entity.output": '"tl a"',
    }
    records = rag_trace(root=root, retriever=oi("RETRIEVER", **oi_docs("d")), model=oi("LLM"))
    assert _one_turn(records) == ("tl q", ["d"], "tl a")
    root.update(
        {
            "gen_ai.input.messages": _genai_messages("user", "g q"),
            "gen_ai.output.messages": _genai_messages("assistant", "g a"),
        }
    )
    records = rag_trace(root=root, retriever=oi("RETRIEVER", **oi_docs("d")), model=oi("LLM"))
    assert _one_turn(records) == ("g q", ["d"], "g a")
    root.update({"input.value": "oi q", "output.value": "oi a"})
    records = rag_trace(root=root, retriever=oi("RETRIEVER", **oi_docs("d")), model=oi("LLM"))
    assert _one_turn(records) == ("oi q", ["d"], "oi a")
    del root["traceloop.entity.input"]
    del root["gen_ai.input.messages"]
    del root["input.value"]
    records = rag_trace(root=root, retriever=oi("RETRIEVER", **oi_docs("d")), model=oi("LLM"))
    assert _one_turn(records) == ("mlflow q", ["d"], "oi a")


def test_base_dialect_reads_its_declared_keys() -> None:
    """The base reader returns the declared input/output keys present, in declared order."""
    from groundwire.assembly._dialects import Dialect

    class Custom(Dialect):
        input_keys = ("in.b", "in.a")
        output_keys = ("out",)

    attributes = {"in.a": 1, "in.b": "2", "other": 3}
    assert Custom().inputs(attributes) == [("in.b", "2", None), ("in.a", 1, None)]
    assert Custom().outputs(attributes) == []
    assert Custom().outputs({"out": "o"}) == [("out", "o", None)]
    assert Custom().kind(attributes) is None
    assert Custom().documents(record(1), KIND_RETRIEVER) is None
    assert Custom().instructions(attributes) is None
    assert not Custom().recognises(attributes)


def test_instructions_come_from_the_first_call_starting_at_or_after_the_retrieval_end() -> None:
    """A call during the retrieval is too early; one starting exactly at its end counts."""
    root = {
        "gen_ai.input.messages": _genai_messages("user", "q"),
        "gen_ai.output.messages": _genai_messages("assistant", "a"),
    }
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=20, attributes={OP: "retrieval"}),
        record(
            3,
            1,
            start=15,
            end=30,
            attributes={OP: "chat", "gen_ai.system_instructions": '["during"]'},
        ),
        record(
            4,
            1,
            start=20,
            end=30,
            attributes={OP: "chat", "gen_ai.system_instructions": '["at end"]'},
        ),
        record(
            5,
            1,
            start=40,
            end=50,
            attributes={OP: "chat", "gen_ai.system_instructions": '["later"]'},
        ),
    ]
    assert _one_turn(records) == ("q", ["at end"], "a")


def test_calls_without_instructions_are_passed_over() -> None:
    """A call whose messages hold no system part gives way to a later call that has one."""
    root = {
        "gen_ai.input.messages": _genai_messages("user", "q"),
        "gen_ai.output.messages": _genai_messages("assistant", "a"),
    }
    cases = [
        (
            {OP: "chat", "gen_ai.input.messages": _genai_messages("user", "q")},
            {OP: "chat", "gen_ai.system_instructions": '["genai later"]'},
            ["genai later"],
        ),
        (
            {"llm.request.type": "chat", "gen_ai.prompt.0.content": "no role"},
            {
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "system",
                "gen_ai.prompt.0.content": "tl later",
            },
            ["tl later"],
        ),
    ]
    for first, later, expected in cases:
        records = [
            record(1, start=0, end=100, attributes=root),
            record(2, 1, start=10, end=20, attributes={OP: "retrieval"}),
            record(3, 1, start=30, end=40, attributes=first),
            record(4, 1, start=50, end=60, attributes=later),
        ]
        assert _one_turn(records) == ("q", expected, "a")


def test_instructions_declared_json_are_json() -> None:
    """`gen_ai.system_instructions` is JSON: `null` is no instruction, not the text "null"."""
    root = {
        "gen_ai.input.messages": _genai_messages("user", "q"),
        "gen_ai.output.messages": _genai_messages("assistant", "a"),
    }
    records = rag_trace(
        root=root,
        retriever={OP: "retrieval"},
        model={OP: "chat", "gen_ai.system_instructions": "null"},
    )
    assert _one_turn(records) == ("q", [], "a")
    records = rag_trace(
        root=root,
        retriever={OP: "retrieval"},
        model={OP: "chat", "gen_ai.system_instructions": "be brief"},
    )
    assert _one_turn(records) == ("q", ["be brief"], "a")


def test_unparseable_declared_json_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Instructions, messages, MLflow outputs and LlamaIndex nodes declared JSON but broken."""
    broken = "{broken"
    spans = [
        record(1, attributes={OP: "chat", "gen_ai.system_instructions": broken}),
        record(2, attributes={OP: "chat", "gen_ai.input.messages": broken}),
    ]
    retrievers = [
        record(3, attributes={"mlflow.spanType": "RETRIEVER", "mlflow.spanOutputs": broken}),
        record(
            4,
            attributes={
                "traceloop.entity.name": "R.Retriever.task",
                "traceloop.entity.output": json.dumps([broken]),
            },
        ),
    ]
    from groundwire.assembly._reader import SpanReader

    for span in spans:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
            SpanReader(None).instructions(span)
        assert [r.getMessage() for r in caplog.records] == [
            "value declared as JSON does not parse; reading it as text"
        ], span.span_id
    expected = {
        3: [
            "value declared as JSON does not parse; reading it as text",
            f"span {sid(3)}: mlflow.spanOutputs is not a list of documents",
        ],
        4: [
            "value declared as JSON does not parse; reading it as text",
            f"span {sid(4)}: traceloop.entity.output[0] is no object",
        ],
    }
    for span in retrievers:
        caplog.clear()
        reader = SpanReader(None)
        with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
            found = reader.documents(span)
        assert [r.getMessage() for r in caplog.records] == expected[int(span.span_id, 16)]
        assert found == ([] if span.span_id == sid(4) else None)
        assert reader.origin(span, "documents") == (
            "openllmetry: traceloop.entity.output" if span.span_id == sid(4) else None
        )


def test_documents_of_a_model_call_are_none() -> None:
    """A model call has no documents, whatever its output holds; a plain step's output documents
    are graph state (docs/assembly.md, "Contexts")."""
    from groundwire.assembly._reader import SpanReader

    outputs = '[{"page_content": "x"}]'
    step = record(1, attributes={"mlflow.spanType": "CHAIN", "mlflow.spanOutputs": outputs})
    assert SpanReader(None).documents(step) == [Context(text="x", rank=0)]
    for attributes in (
        {"mlflow.spanType": "LLM", "mlflow.spanOutputs": outputs},
        {OP: "chat", "gen_ai.retrieval.documents": outputs},
        {"llm.request.type": "chat", "traceloop.entity.output": outputs},
    ):
        assert SpanReader(None).documents(record(1, attributes=attributes)) is None


def test_openllmetry_unwraps_only_its_own_wrapper_key() -> None:
    """`{"inputs": ...}` is unwrapped even beside other keys; text mentioning it is not."""
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": json.dumps(
                    {"inputs": {"question": "wrapped q"}, "kwargs": {"content": "other"}}
                ),
                "traceloop.entity.output": '"what inputs and outputs do you need?"',
            }
        ),
        retriever={OP: "vector_db_retrieve"},
        model={"llm.request.type": "chat"},
    )
    assert _one_turn(records) == ("wrapped q", [], "what inputs and outputs do you need?")


def test_openllmetry_json_numbers_are_not_text() -> None:
    """An entity input that is a JSON number is no question; the task copy is read instead."""
    records = rag_trace(
        root=_tl(
            **{
                "traceloop.entity.input": "42",
                "gen_ai.task.input": '"real q"',
                "traceloop.entity.output": '"a"',
            }
        ),
        retriever={OP: "vector_db_retrieve"},
        model={"llm.request.type": "chat"},
    )
    assert _one_turn(records) == ("real q", [], "a")


def test_openllmetry_retriever_documents_from_the_task_copy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No entity output: `gen_ai.task.output` documents; bad entries are logged by place."""
    retriever = {
        OP: "vector_db_retrieve",
        "gen_ai.task.output": json.dumps({"documents": [{"page_content": "p"}, "bad"]}),
    }
    records = rag_trace(
        root=_tl(**{"traceloop.entity.input": '"q"', "traceloop.entity.output": '"a"'}),
        retriever=retriever,
        model={"llm.request.type": "chat"},
    )
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert _one_turn(records) == ("q", ["p"], "a")
    assert f"span {sid(2)}: gen_ai.task.output[1] is no object" in [
        r.getMessage() for r in caplog.records
    ]
    broken = {OP: "vector_db_retrieve", "traceloop.entity.output": "{broken"}
    caplog.clear()
    from groundwire.assembly._reader import SpanReader

    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert SpanReader(None).documents(record(2, attributes=broken)) is None
    assert [r.getMessage() for r in caplog.records] == [
        "value declared as JSON does not parse; reading it as text"
    ]
