"""Building one turn from its root (docs/assembly.md, "Query", "Answer", "Contexts", "Turn
fields"), from hand-built records: fallbacks, reranking, dialect choice and the turn's attributes.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundwire import Context
from groundwire.assembly import SpanRecord, explain_traces, turns_from_spans
from tests.assembly_records import OP, oi, oi_docs, rag_trace, record, sid

ROOT = oi("CHAIN", **{"input.value": "q", "output.value": "a"})


def _turn(records: list[SpanRecord]) -> Any:
    (turn,) = turns_from_spans(records)
    return turn


def _reason(records: list[SpanRecord]) -> str | None:
    (report,) = explain_traces(records)
    (turn,) = report.turns
    return turn.reason


@pytest.mark.parametrize(
    ("root", "model", "expected"),
    [
        ({"service.name": "svc"}, {}, {"service.name": "svc"}),
        ({"service.name": ""}, {}, {}),
        ({"service.name": 3}, {}, {}),
    ],
)
def test_service_name_is_a_non_empty_string(
    root: dict[str, Any], model: dict[str, Any], expected: dict[str, Any]
) -> None:
    """`service.name` comes from the root's resource when it is a non-empty string."""
    records = rag_trace(root=ROOT, retriever=oi("RETRIEVER", **oi_docs("d")), model=oi("LLM"))
    records[0] = record(1, start=0, end=100, attributes=ROOT, resource=root)
    assert _turn(records).attributes == expected


@pytest.mark.parametrize(
    ("scope", "attribute", "expected"),
    [
        ("openinference.instrumentation.LangChain", None, "langchain"),
        ("openinference.instrumentation.llama_index", None, "llamaindex"),
        ("opentelemetry.instrumentation.llamaindex", None, "llamaindex"),
        ("my.tracer", None, None),
        (None, None, None),
        ("langchain", "custom", "custom"),
        ("langchain", "", "langchain"),
    ],
)
def test_framework_from_attribute_or_root_scope(
    scope: str | None, attribute: str | None, expected: str | None
) -> None:
    """Any span's `groundwire.framework` wins; else the root's tracer name names it."""
    model = oi("LLM")
    if attribute is not None:
        model["groundwire.framework"] = attribute
    records = rag_trace(root=ROOT, retriever=oi("RETRIEVER", **oi_docs("d")), model=model)
    records[0] = record(1, start=0, end=100, attributes=ROOT, scope=scope)
    assert _turn(records).attributes.get("groundwire.framework") == expected


def test_model_and_provider_from_the_last_model_call_naming_them() -> None:
    """Model keys in order (`llm.model_name`, response, request); provider keys likewise."""
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(
            3,
            1,
            start=30,
            end=40,
            attributes={
                OP: "chat",
                "gen_ai.request.model": "req-1",
                "gen_ai.response.model": "resp-1",
                "llm.provider": "prov-1",
                "gen_ai.provider.name": "gp-1",
            },
        ),
        record(
            4,
            1,
            start=50,
            end=60,
            attributes={OP: "chat", "gen_ai.request.model": "req-2", "gen_ai.system": "sys-2"},
        ),
        record(5, 1, start=45, end=46, attributes={OP: "chat", "gen_ai.request.model": ""}),
        record(6, 1, start=70, end=80, attributes={OP: "chat", "llm.model_name": 5}),
        record(7, 1, start=75, end=80, attributes={"input.value": "x", "llm.model_name": "no"}),
    ]
    attributes = _turn(records).attributes
    assert attributes["gen_ai.request.model"] == "req-2"
    assert attributes["gen_ai.provider.name"] == "sys-2"
    records[3] = record(4, 1, start=50, end=60, attributes={OP: "chat"})
    attributes = _turn(records).attributes
    assert attributes["gen_ai.request.model"] == "resp-1"
    assert attributes["gen_ai.provider.name"] == "prov-1"
    records[2] = record(
        3,
        1,
        start=30,
        end=40,
        attributes={
            OP: "chat",
            "llm.model_name": "llm-1",
            "gen_ai.response.model": "resp-1",
            "gen_ai.provider.name": "gp-1",
            "gen_ai.system": "s",
        },
    )
    attributes = _turn(records).attributes
    assert (attributes["gen_ai.request.model"], attributes["gen_ai.provider.name"]) == (
        "llm-1",
        "gp-1",
    )


def test_query_falls_back_to_documents_steps_then_any_retriever() -> None:
    """Root input without a question: the first document step's query, else any retriever's."""
    root = oi("CHAIN", **{"input.value": '{"a": 1, "b": 2}', "output.value": "a"})
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=5, end=6, attributes=oi("RETRIEVER", **{"input.value": "no docs"})),
        record(3, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(
            4,
            1,
            start=21,
            end=22,
            attributes=oi("RETRIEVER", **{"input.value": "step q"}, **oi_docs("e")),
        ),
        record(5, 1, start=30, end=40, attributes=oi("LLM", **{"input.value": "model q"})),
    ]
    turn = _turn(records)
    assert (turn.query, turn.context_texts) == ("step q", ["d", "e"])
    (report,) = explain_traces(records)
    assert report.turns[0].query is not None and report.turns[0].query.span_id == sid(4)
    records[3] = record(4, 1, start=21, end=22, attributes=oi("RETRIEVER", **oi_docs("e")))
    assert _turn(records).query == "no docs"
    records[1] = record(2, 1, start=5, end=6, attributes=oi("RETRIEVER"))
    assert turns_from_spans(records) == []
    assert _reason(records) == "no query in the turn root's input, its retrievers' or model calls'"


def test_streamed_root_takes_the_last_model_answer() -> None:
    """A root whose output is a stream placeholder answers with the last model call's output."""
    root = oi("CHAIN", **{"input.value": "q", "output.value": "<generator object x at 0x1>"})
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(4, 1, start=50, end=60, attributes=oi("LLM", **{"output.value": "second"})),
        record(3, 1, start=30, end=40, attributes=oi("LLM", **{"output.value": "first"})),
        record(5, 1, start=70, end=80, attributes=oi("LLM")),
        record(6, 1, start=45, end=46, attributes=oi("CHAIN", **{"output.value": "not a model"})),
    ]
    turn = _turn(records)
    assert turn.answer == "second"
    (report,) = explain_traces(records)
    assert report.turns[0].answer is not None
    assert report.turns[0].answer.span_id == sid(4)
    no_model_answer = [*records[:2], record(3, 1, start=30, end=40, attributes=oi("LLM"))]
    assert turns_from_spans(no_model_answer) == []
    assert _reason(no_model_answer) == "the turn root has no answer in its output"


def test_reranker_replaces_what_it_was_given_by_id_or_text() -> None:
    """Input documents matched by id or text are replaced by the reranker's output."""
    reranker = oi(
        "RERANKER",
        **{
            "reranker.input_documents.0.document.id": "a",
            "reranker.input_documents.1.document.id": 2,
            "reranker.input_documents.1.document.content": "by text",
            "reranker.input_documents.2.document.id": 1.5,
            "reranker.input_documents.2.document.content": 7,
        },
        **oi_docs("best", prefix="reranker.output_documents"),
    )
    retrieved = {
        "retrieval.documents.0.document.content": "A",
        "retrieval.documents.0.document.id": "a",
        "retrieval.documents.1.document.content": "by text",
        "retrieval.documents.2.document.content": "kept",
        "retrieval.documents.2.document.id": "k",
        "retrieval.documents.3.document.content": "two",
        "retrieval.documents.3.document.id": "2",
    }
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **retrieved)),
        record(3, 1, start=21, end=25, attributes=reranker),
        record(4, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    turn = _turn(records)
    assert list(turn.contexts) == [
        Context(text="kept", id="k", rank=0),
        Context(text="best", rank=1),
    ]


def test_nested_retrievers_count_once_unless_the_outer_one_recorded_nothing() -> None:
    """A retriever inside a retriever with documents is the same retrieval; else its own."""
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER")),
        record(3, 2, start=11, end=19, attributes=oi("RETRIEVER", **oi_docs("inner"))),
        record(4, 3, start=12, end=18, attributes=oi("RETRIEVER", **oi_docs("innermost"))),
        record(5, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _turn(records).context_texts == ["inner"]


def test_steps_replay_in_start_then_end_order() -> None:
    """Document steps are replayed by start time, then end time."""
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(2, 1, start=10, end=30, attributes=oi("RETRIEVER", **oi_docs("long"))),
        record(3, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("short"))),
        record(4, 1, start=5, end=None, attributes=oi("RETRIEVER", **oi_docs("open first"))),
        record(5, 1, start=40, end=50, attributes=oi("LLM")),
    ]
    assert _turn(records).context_texts == ["open first", "short", "long"]


def test_only_the_best_dialects_steps_are_replayed() -> None:
    """Retrievals recorded in two dialects: only the higher-precedence dialect's documents."""
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(
            2,
            1,
            start=10,
            end=20,
            attributes={
                "mlflow.spanType": "RETRIEVER",
                "mlflow.spanOutputs": '[{"page_content": "ml"}]',
            },
        ),
        record(
            3,
            1,
            start=11,
            end=19,
            attributes={OP: "retrieval", "gen_ai.retrieval.documents": '[{"content": "genai"}]'},
        ),
        record(4, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _turn(records).context_texts == ["genai"]
    (report,) = explain_traces(records)
    assert [c.origin for c in report.turns[0].contexts] == ["genai: gen_ai.retrieval.documents"]


def test_instructions_after_an_open_retrieval() -> None:
    """An open retrieval ends at its start for the instructions fallback."""
    root = {"gen_ai.input.messages": '[{"role": "user", "content": "q"}]', "output.value": "a"}
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=None, attributes={OP: "retrieval"}),
        record(
            3,
            1,
            start=10,
            end=40,
            attributes={OP: "chat", "gen_ai.system_instructions": '["at start"]'},
        ),
    ]
    assert _turn(records).context_texts == ["at start"]
    records[1] = record(2, 1, start=10, end=11, attributes={OP: "retrieval"})
    assert _turn(records).context_texts == []


def test_origin_rank_orders_live_content_then_dialects() -> None:
    """Live content (or nothing read) first, then the dialects by precedence, unknown last."""
    from groundwire.assembly._build import origin_rank

    assert origin_rank(None) == -1
    assert origin_rank("live content") == -1
    assert origin_rank("openinference: output.value") == 0
    assert origin_rank("genai: gen_ai.output.messages") == 1
    assert origin_rank("mlflow: a:b") == 3
    assert origin_rank("zipkin: x") == 4


def test_reranker_inputs_are_identified_by_id_and_content_only() -> None:
    """Other fields of the reranker's input documents do not match retrieved documents."""
    reranker = oi(
        "RERANKER",
        **{
            "reranker.input_documents.0.document.id": "a",
            "reranker.input_documents.0.document.metadata": "kept",
        },
        **oi_docs("best", prefix="reranker.output_documents"),
    )
    retrieved = {
        "retrieval.documents.0.document.content": "A",
        "retrieval.documents.0.document.id": "a",
        "retrieval.documents.1.document.content": "kept",
    }
    records = [
        record(1, start=0, end=100, attributes=ROOT),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **retrieved)),
        record(3, 1, start=21, end=25, attributes=reranker),
        record(4, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _turn(records).context_texts == ["kept", "best"]
