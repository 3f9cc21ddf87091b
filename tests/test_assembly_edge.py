"""Turn assembly from hand-built SDK spans: the turn-root rule and every reading rule's edge."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import Context, RagTurn
from groundwire.assembly import SpanRecord, turns_from_spans
from groundwire.capture import LiveContent, LiveContentStore
from tests._clocked import ClockedSpans

KIND = "openinference.span.kind"


class Recorder(ClockedSpans):
    """Real SDK spans with a controlled clock, so start/end order is exact."""

    def __init__(self, service: str = "svc") -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        super().__init__(provider, "tests.hand_built", 1_000_000)

    def retriever(self, query: str, docs: list[str], **attributes: Any) -> None:
        """A RETRIEVER span with OpenInference documents."""
        flat = {f"retrieval.documents.{i}.document.content": d for i, d in enumerate(docs)}
        with self.span(
            "retrieve", **{KIND: "RETRIEVER", "input.value": query, **flat, **attributes}
        ):
            pass

    def llm(self, output: str, model: str = "m-1") -> None:
        """An LLM span."""
        with self.span("llm", **{KIND: "LLM", "llm.model_name": model, "output.value": output}):
            pass

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Everything exported so far."""
        return self.exporter.get_finished_spans()

    def rag(self, query: str, docs: list[str], answer: str, **root: Any) -> None:
        """One whole RAG chain: root chain, retriever, LLM."""
        attrs = {KIND: "CHAIN", "input.value": query, "output.value": answer, **root}
        with self.span("rag", **attrs):
            self.retriever(query, docs)
            self.llm(answer)


def _hex(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def test_single_rag_chain_gives_one_whole_turn() -> None:
    """A chain with a retriever and an LLM gives one turn with every field, ranks in order."""
    rec = Recorder(service="support-bot")
    rec.rag("Who?", ["doc a", "doc b"], "Alice.")
    (turn,) = turns_from_spans(rec.spans())
    root = _by_name(rec.spans(), "rag")[0]
    assert turn == RagTurn(
        query="Who?",
        contexts=[Context(text="doc a", rank=0), Context(text="doc b", rank=1)],
        answer="Alice.",
        trace_id=format(root.context.trace_id, "032x"),  # type: ignore[union-attr]
        span_id=_hex(root),
        attributes={"service.name": "support-bot", "gen_ai.request.model": "m-1"},
    )


def test_agent_calling_rag_twice_gives_two_turns() -> None:
    """Two answering RAG chains under one agent span are two turns; the agent is not a turn."""
    rec = Recorder()
    with rec.span("agent", **{KIND: "AGENT", "input.value": "plan", "output.value": "both done"}):
        rec.llm("call rag 1")
        rec.rag("q1", ["d1"], "a1")
        rec.llm("call rag 2")
        rec.rag("q2", ["d2"], "a2")
        rec.llm("both done")
    turns = turns_from_spans(rec.spans())
    assert [(t.query, t.context_texts, t.answer) for t in turns] == [
        ("q1", ["d1"], "a1"),
        ("q2", ["d2"], "a2"),
    ]
    assert [t.span_id for t in turns] == [_hex(s) for s in _by_name(rec.spans(), "rag")]


def test_agent_calling_rag_once_is_one_turn_rooted_at_the_agent() -> None:
    """With a single RAG episode the outermost span with input, output and retriever is the root."""
    rec = Recorder()
    with rec.span("agent", **{KIND: "AGENT", "input.value": "user q", "output.value": "final"}):
        rec.rag("rag q", ["d1"], "rag a")
        rec.llm("final")
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.query, turn.answer, turn.span_id) == (
        "user q",
        "final",
        _hex(_by_name(rec.spans(), "agent")[0]),
    )


def test_agent_with_two_retriever_tool_calls_is_one_turn_with_both_contexts() -> None:
    """Retriever tools without their own model call are one episode: one turn, contexts in order."""
    rec = Recorder()
    with rec.span("agent", **{KIND: "AGENT", "input.value": "q", "output.value": "a"}):
        for query, doc in (("t1", "first"), ("t2", "second")):
            with rec.span("tool", **{KIND: "TOOL", "input.value": query, "output.value": doc}):
                rec.retriever(query, [doc])
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.query, turn.context_texts, turn.answer) == ("q", ["first", "second"], "a")


def test_inner_retrieval_subchain_does_not_become_a_turn() -> None:
    """A sub-chain whose output is the formatted context (no model call after it) is absorbed."""
    rec = Recorder()
    with rec.span("outer", **{KIND: "CHAIN", "input.value": "q", "output.value": "answer"}):
        with rec.span("context", **{KIND: "CHAIN", "input.value": "q", "output.value": "d1"}):
            rec.retriever("q", ["d1"])
        rec.llm("answer")
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.answer, turn.span_id) == ("answer", _hex(_by_name(rec.spans(), "outer")[0]))


def test_traces_without_model_spans_fall_back_to_the_outermost_candidate() -> None:
    """With no LLM span at all the outermost span with input, output and retriever is the turn."""
    rec = Recorder()
    with (
        rec.span("outer", **{"input.value": "q", "output.value": "a"}),
        rec.span("inner", **{"input.value": "q", "output.value": "x"}),
    ):
        rec.retriever("q", ["d"])
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.answer, turn.span_id) == ("a", _hex(_by_name(rec.spans(), "outer")[0]))


def test_turns_under_a_non_candidate_root_are_found() -> None:
    """An HTTP server span without input/output above two chains gives both chains' turns."""
    rec = Recorder()
    with rec.span("GET /ask", **{"http.route": "/ask"}):
        rec.rag("q1", ["d1"], "a1")
        rec.rag("q2", ["d2"], "a2")
    assert [t.answer for t in turns_from_spans(rec.spans())] == ["a1", "a2"]


def test_retriever_without_answer_yet_gives_no_turn() -> None:
    """A trace whose root has not produced an output gives no turn and no error."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q"}):
        rec.retriever("q", ["d"])
    assert turns_from_spans(rec.spans()) == []


def test_open_root_is_stood_in_for_by_the_children_that_name_it() -> None:
    """Only ended spans are passed: a root that never ended is missing, and its children that
    name it make the turn under a stand-in with its span id; once it ends, it is the root."""
    rec = Recorder()
    root = rec.tracer.start_span("rag", attributes={KIND: "CHAIN", "input.value": "q"})
    with trace.use_span(root, end_on_exit=False):
        rec.retriever("q", ["d"])
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.query, turn.context_texts, turn.answer) == ("q", ["d"], "a")
    assert turn.span_id == _hex(root)
    root.set_attribute("output.value", "root a")
    root.end()
    assert [t.answer for t in turns_from_spans(rec.spans())] == ["root a"]


def test_reranker_output_replaces_the_retrieved_list() -> None:
    """When a reranker ran after the retriever the contexts are its output, in its order."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}):
        rec.retriever("q", ["d1", "d2", "d3"])
        with rec.span(
            "rerank",
            **{
                KIND: "RERANKER",
                "reranker.query": "q",
                "reranker.input_documents.0.document.content": "d1",
                "reranker.input_documents.1.document.content": "d2",
                "reranker.input_documents.2.document.content": "d3",
                "reranker.output_documents.0.document.content": "d3",
                "reranker.output_documents.0.document.score": 0.9,
                "reranker.output_documents.1.document.content": "d1",
                "reranker.output_documents.1.document.score": 0.4,
            },
        ):
            pass
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert turn.contexts == (
        Context(text="d3", score=0.9, rank=0),
        Context(text="d1", score=0.4, rank=1),
    )


def test_reranker_replaces_only_the_documents_it_was_given() -> None:
    """Two retrievals, the second reranked: the first retrieval's documents stay in front."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}):
        rec.retriever("q", ["keep"])
        rec.retriever("q", ["x", "y"])
        with rec.span(
            "rerank",
            **{
                KIND: "RERANKER",
                "reranker.input_documents.0.document.content": "x",
                "reranker.input_documents.1.document.content": "y",
                "reranker.output_documents.0.document.content": "y",
            },
        ):
            pass
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert turn.context_texts == ["keep", "y"]


def test_nested_retriever_spans_are_one_retrieval() -> None:
    """A retriever inside a retriever that recorded documents does not duplicate them."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}):
        with rec.span(
            "retrieve",
            **{
                KIND: "RETRIEVER",
                "input.value": "q",
                "retrieval.documents.0.document.content": "d",
            },
        ):
            rec.retriever("q", ["d"])
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert turn.context_texts == ["d"]


def test_document_fields_are_read_with_their_types() -> None:
    """id, score and metadata (JSON) of each OpenInference document reach the Context."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}):
        rec.retriever(
            "q",
            ["d0", "d1"],
            **{
                "retrieval.documents.0.document.id": "doc-0",
                "retrieval.documents.0.document.score": 0.5,
                "retrieval.documents.0.document.metadata": json.dumps({"page": 3}),
                "retrieval.documents.1.document.id": 7,
            },
        )
        rec.llm("a")
    (turn,) = turns_from_spans(rec.spans())
    assert turn.contexts == (
        Context(text="d0", id="doc-0", score=0.5, rank=0, metadata={"page": 3}),
        Context(text="d1", id="7", rank=1),
    )


def test_malformed_attributes_lose_only_themselves(caplog: pytest.LogCaptureFixture) -> None:
    """Bad JSON, wrong types and bad keys are skipped with a debug log; the turn still forms."""
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": 42, "output.value": "a"}):
        rec.retriever(
            "q from retriever",
            ["good", "also good"],
            **{
                "retrieval.documents.0.document.score": "high",
                "retrieval.documents.0.document.metadata": "{not json",
                "retrieval.documents.1.document.metadata": "[1, 2]",
                "retrieval.documents.x.document.content": "bad index",
                "retrieval.documents.2.document.content": 13,
                "retrieval.documents.3.nodocument": "bad field",
            },
        )
        rec.llm("a")
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        (turn,) = turns_from_spans(rec.spans())
    assert turn.query == "q from retriever"
    assert turn.contexts == (Context(text="good", rank=0), Context(text="also good", rank=1))
    messages = caplog.text
    for fragment in ("score is not a number", "metadata is not a JSON object", "malformed"):
        assert fragment in messages


def test_root_json_that_parses_to_nothing_usable_falls_back_to_retriever_query() -> None:
    """A JSON input with no recognisable question takes the retriever's query instead."""
    rec = Recorder()
    attrs = {
        KIND: "CHAIN",
        "input.value": json.dumps({"a": 1, "b": [2]}),
        "input.mime_type": "application/json",
        "output.value": json.dumps({"answer": "yes", "sources": ["x"]}),
        "output.mime_type": "application/json",
    }
    with rec.span("rag", **attrs):
        rec.retriever("the real question", ["d"])
        rec.llm("yes")
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.query, turn.answer) == ("the real question", "yes")


def test_broken_json_output_is_read_as_text() -> None:
    """An output declared as JSON that does not parse is taken as plain text, not an error."""
    rec = Recorder()
    attrs = {
        KIND: "CHAIN",
        "input.value": "q",
        "output.value": "{oops",
        "output.mime_type": "application/json",
    }
    with rec.span("rag", **attrs):
        rec.retriever("q", ["d"])
        rec.llm("x")
    (turn,) = turns_from_spans(rec.spans())
    assert turn.answer == "{oops"


def test_gen_ai_only_trace_assembles() -> None:
    """GenAI-convention attributes alone (messages, retrieval query, JSON documents) give a turn."""
    rec = Recorder()
    user = [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is X?"}]},
    ]
    out = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "X is Y."}],
            "finish_reason": "stop",
        }
    ]
    docs = [{"id": "a", "score": 0.8, "content": "X is Y, says A."}, {"id": "b", "score": 0.2}]
    with rec.span(
        "invoke_agent rag",
        **{
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.input.messages": json.dumps(user),
            "gen_ai.output.messages": json.dumps(out),
        },
    ):
        with rec.span(
            "retrieval kb",
            **{
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "What is X?",
                "gen_ai.retrieval.documents": json.dumps(docs),
            },
        ):
            pass
        with rec.span(
            "chat m",
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-x",
                "gen_ai.provider.name": "openai",
            },
        ):
            pass
    (turn,) = turns_from_spans(rec.spans())
    assert (turn.query, turn.answer) == ("What is X?", "X is Y.")
    assert turn.contexts == (Context(text="X is Y, says A.", id="a", score=0.8, rank=0),)
    assert turn.attributes == {
        "service.name": "svc",
        "gen_ai.request.model": "gpt-x",
        "gen_ai.provider.name": "openai",
    }


def test_hidden_text_comes_from_live_content_and_is_consumed() -> None:
    """Spans that kept no text still give full turns from the live store, which is then emptied."""
    store = LiveContentStore()
    store.enabled = True
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN"}) as root:
        with rec.span(
            "retrieve",
            **{KIND: "RETRIEVER", "retrieval.documents.0.document.id": "k1"},
        ) as retriever:
            pass
        rec.llm("a")
        for span, content in (
            (root, LiveContent(input="full question", output="full answer")),
            (retriever, LiveContent(documents=(Context(text="full doc", id="k1"),))),
        ):
            context = span.get_span_context()
            store.put((context.trace_id, context.span_id), content)
    assert turns_from_spans(rec.spans()) == []
    (turn,) = turns_from_spans(rec.spans(), live_content=store)
    assert (turn.query, turn.answer) == ("full question", "full answer")
    assert turn.contexts == (Context(text="full doc", id="k1", rank=0),)
    assert len(store) == 0


def test_live_content_wins_over_truncated_span_text() -> None:
    """When a span kept a truncated value, the live full value is used."""
    store = LiveContentStore()
    store.enabled = True
    rec = Recorder()
    with rec.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "long an…"}) as root:
        rec.retriever("q", ["d"])
        rec.llm("x")
        context = root.get_span_context()
        store.put((context.trace_id, context.span_id), LiveContent(output="long answer"))
    (turn,) = turns_from_spans(rec.spans(), live_content=store)
    assert turn.answer == "long answer"


def test_several_traces_are_grouped_and_ordered() -> None:
    """Spans of different traces, interleaved, give one turn per trace."""
    rec = Recorder()
    rec.rag("q1", ["d1"], "a1")
    rec.rag("q2", ["d2"], "a2")
    spans = list(rec.spans())
    spans.reverse()
    turns = turns_from_spans(spans)
    assert sorted(t.answer for t in turns) == ["a1", "a2"]
    assert len({t.trace_id for t in turns}) == 2


def test_span_records_and_readable_spans_give_equal_turns() -> None:
    """`SpanRecord`s converted from the SDK spans assemble to exactly the same turns."""
    rec = Recorder()
    rec.rag("q", ["d"], "a")
    records = [SpanRecord.from_readable(span) for span in rec.spans()]
    assert turns_from_spans(records) == turns_from_spans(rec.spans())


def test_other_objects_are_refused_with_a_clear_error() -> None:
    """Passing something that is not a span names the type it got."""
    with pytest.raises(TypeError, match=r"ReadableSpan or SpanRecord.*dict"):
        turns_from_spans([{"name": "x"}])


def test_parent_cycle_in_a_file_does_not_hang() -> None:
    """Spans whose parents form a cycle (a corrupt file) are ignored, not looped over."""
    a = SpanRecord("1" * 32, "a" * 16, "b" * 16, "x", 1, 2, {"input.value": "q"})
    b = SpanRecord("1" * 32, "b" * 16, "a" * 16, "y", 1, 2, {KIND: "RETRIEVER"})
    assert turns_from_spans([a, b]) == []
