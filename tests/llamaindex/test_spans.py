"""Span trees and whole attribute sets for real LlamaIndex query engines."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.tools import FunctionTool
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from groundwire_llamaindex._llm import describe_llm
from tests.llamaindex.apps import (
    CountingLLM,
    FailingReranker,
    LookupTwice,
    ReverseReranker,
    TwoQuestions,
)
from tests.llamaindex.conftest import Traces

MOCK_ANSWER = "text text text text text text"


def _attributes(span: ReadableSpan) -> dict[str, Any]:
    """A mutable copy of the span's attributes."""
    return dict(span.attributes or {})


def _documents(attributes: dict[str, Any], prefix: str, nodes: list[Any]) -> None:
    """Pop `{prefix}.{i}.document.*` for `nodes` in order, checking each value."""
    for i, item in enumerate(nodes):
        assert attributes.pop(f"{prefix}.{i}.document.content") == item.node.get_content()
        assert attributes.pop(f"{prefix}.{i}.document.id") == item.node.node_id
        assert attributes.pop(f"{prefix}.{i}.document.score") == pytest.approx(item.score)


def test_query_engine_tree_and_attributes(traces: Traces, index: VectorStoreIndex) -> None:
    """A sync query: query > (retrieval > embeddings, synthesize > chat), exact attributes."""
    response = index.as_query_engine(similarity_top_k=2).query("What is the capital of France?")

    (root,) = traces.roots()
    retriever = traces.one("RETRIEVER")
    assert traces.tree(root) == (
        "RetrieverQueryEngine.query",
        (
            (retriever.name, (("embeddings unknown", ()),)),
            ("CompactAndRefine.synthesize", (("text_completion unknown", ()),)),
        ),
    )
    assert retriever.name == f"retrieval {index.index_id}"
    assert all(span.status.status_code is StatusCode.UNSET for span in traces.spans)
    assert {span.context.trace_id for span in traces.spans} == {root.context.trace_id}

    attributes = _attributes(root)
    assert attributes.pop("openinference.span.kind") == "CHAIN"
    assert attributes.pop("groundwire.framework") == "llamaindex"
    assert attributes.pop("input.value") == "What is the capital of France?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("output.value") == MOCK_ANSWER == str(response)
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}

    attributes = _attributes(retriever)
    assert attributes.pop("openinference.span.kind") == "RETRIEVER"
    assert attributes.pop("gen_ai.operation.name") == "retrieval"
    assert attributes.pop("gen_ai.data_source.id") == index.index_id
    assert attributes.pop("input.value") == "What is the capital of France?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("gen_ai.retrieval.query.text") == "What is the capital of France?"
    nodes = response.source_nodes
    assert len(nodes) == 2
    _documents(attributes, "retrieval.documents", nodes)
    assert json.loads(attributes.pop("gen_ai.retrieval.documents")) == [
        {"id": item.node.node_id, "score": pytest.approx(item.score)} for item in nodes
    ]
    assert attributes == {}

    attributes = _attributes(traces.one("LLM"))
    assert attributes.pop("openinference.span.kind") == "LLM"
    assert attributes.pop("gen_ai.operation.name") == "text_completion"
    assert attributes.pop("llm.model_name") == "unknown"
    assert attributes.pop("gen_ai.request.model") == "unknown"
    prompt = attributes.pop("input.value")
    assert "What is the capital of France?" in prompt
    assert all(item.node.get_content() in prompt for item in nodes)
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("output.value") == MOCK_ANSWER
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}

    attributes = _attributes(traces.one("EMBEDDING"))
    assert attributes.pop("openinference.span.kind") == "EMBEDDING"
    assert attributes.pop("gen_ai.operation.name") == "embeddings"
    assert attributes.pop("embedding.model_name") == "unknown"
    assert attributes.pop("gen_ai.request.model") == "unknown"
    assert attributes.pop("input.value") == "What is the capital of France?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes == {}

    (synthesizer,) = [s for s in traces.spans if s.name == "CompactAndRefine.synthesize"]
    attributes = _attributes(synthesizer)
    assert attributes.pop("openinference.span.kind") == "CHAIN"
    assert attributes.pop("input.value") == "What is the capital of France?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("output.value") == MOCK_ANSWER
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}


def test_reranker_span(traces: Traces, index: VectorStoreIndex) -> None:
    """A node postprocessor becomes a RERANKER span with input and output documents in order."""
    retriever = index.as_retriever(similarity_top_k=3)
    engine = RetrieverQueryEngine.from_args(retriever, node_postprocessors=[ReverseReranker()])
    response = engine.query("Where is the Eiffel Tower?")

    (root,) = traces.roots()
    reranker = traces.one("RERANKER")
    retrieval = traces.one("RETRIEVER")
    assert [child.name for child in traces.children(root)] == [
        retrieval.name,
        "ReverseReranker.postprocess_nodes",
        "CompactAndRefine.synthesize",
    ]
    assert reranker.parent is not None and reranker.parent.span_id == root.context.span_id

    retrieval_attributes = _attributes(retrieval)
    retrieved = [
        (
            retrieval_attributes[f"retrieval.documents.{i}.document.id"],
            retrieval_attributes[f"retrieval.documents.{i}.document.score"],
        )
        for i in range(3)
    ]
    attributes = _attributes(reranker)
    assert attributes.pop("openinference.span.kind") == "RERANKER"
    assert attributes.pop("reranker.query") == "Where is the Eiffel Tower?"
    assert attributes.pop("reranker.top_k") == 2
    assert attributes.pop("reranker.model_name") == "reverse-v1"
    for i, (node_id, score) in enumerate(retrieved):
        assert attributes.pop(f"reranker.input_documents.{i}.document.id") == node_id
        assert attributes.pop(f"reranker.input_documents.{i}.document.score") == score
        assert attributes.pop(f"reranker.input_documents.{i}.document.content")
    assert [item.node.node_id for item in response.source_nodes] == [
        retrieved[2][0],
        retrieved[1][0],
    ]
    _documents(attributes, "reranker.output_documents", response.source_nodes)
    assert attributes == {}


def test_token_counts(traces: Traces, index: VectorStoreIndex) -> None:
    """Token usage an LLM reports lands under both OpenInference and GenAI names."""
    engine = index.as_query_engine(llm=CountingLLM(), similarity_top_k=1)
    assert str(engine.query("Capital of France?")) == "Paris is the capital."

    llm = traces.one("LLM")
    assert llm.name == "text_completion counting-1"
    attributes = _attributes(llm)
    assert attributes.pop("llm.token_count.prompt") == 11
    assert attributes.pop("llm.token_count.completion") == 3
    assert attributes.pop("llm.token_count.total") == 14
    assert attributes.pop("gen_ai.usage.input_tokens") == 11
    assert attributes.pop("gen_ai.usage.output_tokens") == 3
    assert (
        attributes.pop("llm.model_name") == attributes.pop("gen_ai.request.model") == "counting-1"
    )
    assert attributes.pop("output.value") == "Paris is the capital."
    assert set(attributes) == {
        "openinference.span.kind",
        "gen_ai.operation.name",
        "input.value",
        "input.mime_type",
        "output.mime_type",
    }


def test_async_query(traces: Traces, index: VectorStoreIndex) -> None:
    """`aquery` gives the same tree as `query`, under the async method names."""
    engine = index.as_query_engine(similarity_top_k=2)
    response = asyncio.run(engine.aquery("Where is Berlin?"))

    (root,) = traces.roots()
    assert traces.tree(root) == (
        "RetrieverQueryEngine.aquery",
        (
            (traces.one("RETRIEVER").name, (("embeddings unknown", ()),)),
            ("CompactAndRefine.asynthesize", (("text_completion unknown", ()),)),
        ),
    )
    assert _attributes(root)["output.value"] == str(response) == MOCK_ANSWER
    assert _attributes(root)["input.value"] == "Where is Berlin?"


def test_streaming_query_ends_when_consumed(traces: Traces, index: VectorStoreIndex) -> None:
    """A streaming query's root stays open until the stream is read, then carries the text."""
    engine = index.as_query_engine(llm=CountingLLM(), similarity_top_k=2, streaming=True)
    response = engine.query("Capital of France?")
    assert [span.name for span in traces.spans] == [
        traces.one("RETRIEVER").name,
        "embeddings unknown",
    ]

    text = "".join(response.response_gen)
    assert text == "Paris is the capital."
    (root,) = traces.roots()
    assert traces.tree(root) == (
        "RetrieverQueryEngine.query",
        (
            (traces.one("RETRIEVER").name, (("embeddings unknown", ()),)),
            ("CompactAndRefine.synthesize", (("text_completion counting-1", ()),)),
        ),
    )
    assert _attributes(root)["output.value"] == text
    assert _attributes(traces.one("LLM"))["output.value"] == text


def test_async_streaming_query(traces: Traces, index: VectorStoreIndex) -> None:
    """`aquery` with streaming: one LLM span under the synthesizer; the root ends with the text."""

    async def run() -> str:
        """Ask one streaming question and read the whole stream."""
        engine = index.as_query_engine(similarity_top_k=2, streaming=True)
        response = await engine.aquery("Where is Berlin?")
        return "".join([token async for token in response.async_response_gen()])

    text = asyncio.run(run())
    (root,) = traces.roots()
    assert traces.tree(root) == (
        "RetrieverQueryEngine.aquery",
        (
            (traces.one("RETRIEVER").name, (("embeddings unknown", ()),)),
            ("CompactAndRefine.asynthesize", (("text_completion unknown", ()),)),
        ),
    )
    assert _attributes(root)["output.value"] == text == MOCK_ANSWER


def test_stream_error_ends_spans_with_error(traces: Traces, index: VectorStoreIndex) -> None:
    """An LLM failing mid-stream ends the LLM, synthesizer and root spans with status ERROR."""
    engine = index.as_query_engine(
        llm=CountingLLM(fail_after=2), similarity_top_k=1, streaming=True
    )
    response = engine.query("Capital of France?")
    with pytest.raises(ConnectionError, match="stream cut"):
        for _ in response.response_gen:
            pass

    (root,) = traces.roots()
    failed = [span for span in traces.spans if span.status.status_code is StatusCode.ERROR]
    assert sorted(span.name for span in failed) == sorted(
        ["RetrieverQueryEngine.query", "CompactAndRefine.synthesize", "text_completion counting-1"]
    )
    for span in failed:
        assert span.status.description == "ConnectionError: stream cut"
        assert [event.name for event in span.events][-1:] == ["exception"]
        assert _attributes(span)["error.type"] == "ConnectionError"
    assert _attributes(root)["output.value"] == "Paris is"


def test_abandoned_stream_ends_its_spans(traces: Traces, index: VectorStoreIndex) -> None:
    """A streaming response that is dropped unread still ends every span (no leak)."""
    engine = index.as_query_engine(similarity_top_k=1, streaming=True)
    response = engine.query("Capital of France?")
    del response
    import gc

    gc.collect()
    (root,) = traces.roots()
    assert root.name == "RetrieverQueryEngine.query"
    assert "output.value" not in _attributes(root)


def test_error_marks_spans_and_propagates(traces: Traces, index: VectorStoreIndex) -> None:
    """A failing postprocessor: its span and its ancestors end with ERROR and an exception event."""
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=2), node_postprocessors=[FailingReranker()]
    )
    with pytest.raises(RuntimeError, match="reranker exploded"):
        engine.query("Anything?")

    (root,) = traces.roots()
    reranker = traces.one("RERANKER")
    assert [child.name for child in traces.children(root)] == [
        traces.one("RETRIEVER").name,
        "FailingReranker.postprocess_nodes",
    ]
    for span in (root, reranker):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "RuntimeError: reranker exploded"
        (event,) = span.events
        assert event.name == "exception"
        assert (event.attributes or {})["exception.message"] == "reranker exploded"
    assert traces.one("RETRIEVER").status.status_code is StatusCode.UNSET
    attributes = _attributes(reranker)
    assert attributes.pop("error.type") == "RuntimeError"
    assert attributes.pop("openinference.span.kind") == "RERANKER"
    assert attributes.pop("reranker.query") == "Anything?"
    for i in range(2):
        assert attributes.pop(f"reranker.input_documents.{i}.document.content")
        assert attributes.pop(f"reranker.input_documents.{i}.document.id")
        assert attributes.pop(f"reranker.input_documents.{i}.document.score")
    assert attributes == {}


def test_nested_query_engines(traces: Traces, index: VectorStoreIndex) -> None:
    """A query engine calling another twice nests two full query trees under its own span."""
    inner = index.as_query_engine(similarity_top_k=1)
    outer = TwoQuestions(inner=inner, questions=["Where is Paris?", "Where is Berlin?"])
    answer = outer.query("Two cities?")

    (root,) = traces.roots()
    assert root.name == "TwoQuestions.query"
    assert _attributes(root)["output.value"] == str(answer) == f"{MOCK_ANSWER}\n{MOCK_ANSWER}"
    inner_roots = traces.children(root)
    assert [span.name for span in inner_roots] == ["RetrieverQueryEngine.query"] * 2
    assert [_attributes(span)["input.value"] for span in inner_roots] == [
        "Where is Paris?",
        "Where is Berlin?",
    ]
    for span in inner_roots:
        assert [child.name for child in traces.children(span)] == [
            f"retrieval {index.index_id}",
            "CompactAndRefine.synthesize",
        ]
        assert "groundwire.framework" not in _attributes(span)


def test_concurrent_threads_give_separate_trees(traces: Traces, index: VectorStoreIndex) -> None:
    """Eight threads querying at once give eight traces, each with its own complete tree."""
    engine = index.as_query_engine(similarity_top_k=2)
    barrier = threading.Barrier(8)

    def ask(i: int) -> None:
        """Wait for the others, then ask question `i`."""
        barrier.wait()
        engine.query(f"question {i}")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    roots = traces.roots()
    assert sorted(_attributes(r)["input.value"] for r in roots) == [
        f"question {i}" for i in range(8)
    ]
    assert len({r.context.trace_id for r in roots}) == 8
    for root in roots:
        question = _attributes(root)["input.value"]
        in_trace = [s for s in traces.spans if s.context.trace_id == root.context.trace_id]
        assert len(in_trace) == 5
        (retrieval,) = [
            s for s in in_trace if _attributes(s).get("openinference.span.kind") == "RETRIEVER"
        ]
        assert _attributes(retrieval)["input.value"] == question
        assert retrieval.parent is not None and retrieval.parent.span_id == root.context.span_id


def test_outermost_span_joins_the_current_otel_context(
    traces: Traces, index: VectorStoreIndex
) -> None:
    """A query run inside an app's span becomes that span's child, in the same trace."""
    app_tracer = traces.tracer_provider.get_tracer("app")
    with app_tracer.start_as_current_span("request") as request:
        index.as_query_engine(similarity_top_k=1).query("Where is Paris?")
    (root,) = traces.roots()
    assert root.name == "request"
    (query,) = traces.children(root)
    assert query.name == "RetrieverQueryEngine.query"
    assert query.context.trace_id == request.get_span_context().trace_id
    assert "groundwire.framework" in _attributes(query)


def test_chat_model_span(traces: Traces, index: VectorStoreIndex) -> None:
    """A chat model's call is a `chat` span whose input is the message list as JSON."""
    engine = index.as_query_engine(llm=MockLLM(max_tokens=3, is_chat_model=True))
    engine.query("Where is Berlin?")

    llm = traces.one("LLM")
    assert llm.name == "chat unknown"
    attributes = _attributes(llm)
    assert attributes.pop("openinference.span.kind") == "LLM"
    assert attributes.pop("gen_ai.operation.name") == "chat"
    assert attributes.pop("llm.model_name") == attributes.pop("gen_ai.request.model") == "unknown"
    assert attributes.pop("input.mime_type") == "application/json"
    messages = json.loads(attributes.pop("input.value"))
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "Where is Berlin?" in messages[-1]["content"]
    assert attributes.pop("output.value") == "text text text"
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}


@pytest.mark.parametrize(
    ("module", "provider"),
    [
        ("llama_index.llms.openai.base", "openai"),
        ("llama_index.llms.bedrock_converse.base", "aws.bedrock"),
        ("llama_index.core.llms.mock", None),
        ("my_app.llms", None),
    ],
)
def test_llm_provider_from_package(module: str, provider: str | None) -> None:
    """The provider comes from the `llama_index.llms.<name>` package an LLM class lives in."""
    fake = type("SomeLLM", (), {"__module__": module, "model": "m-1"})()
    attributes: dict[str, Any] = {}
    assert describe_llm(fake, "chat", attributes) == "chat m-1"
    assert attributes.get("gen_ai.provider.name") == provider
    assert attributes.get("llm.provider") == provider


@pytest.mark.parametrize("path", ["chat", "stream_chat", "astream_chat"])
def test_chat_engine(traces: Traces, index: VectorStoreIndex, path: str) -> None:
    """A context chat engine's turn is one tree; streamed (its stream is written out in a thread
    or task of its own), its root still ends with the whole answer."""
    engine = index.as_chat_engine(chat_mode="context", similarity_top_k=1)
    if path == "chat":
        answer = str(engine.chat("Tell me about Paris"))
    elif path == "stream_chat":
        answer = "".join(engine.stream_chat("Tell me about Paris").response_gen)
    else:

        async def consume() -> str:
            """Ask one streaming chat question and read the whole stream."""
            response = await engine.astream_chat("Tell me about Paris")
            tokens = [token async for token in response.async_response_gen()]
            return "".join(tokens)

        answer = asyncio.run(consume())
    (root,) = traces.roots()
    synthesize = "asynthesize" if path == "astream_chat" else "synthesize"
    assert traces.tree(root) == (
        f"ContextChatEngine.{path}",
        (
            (traces.one("RETRIEVER").name, (("embeddings unknown", ()),)),
            (f"CompactAndRefine.{synthesize}", (("text_completion unknown", ()),)),
        ),
    )
    assert answer == MOCK_ANSWER
    assert _attributes(root)["input.value"] == "Tell me about Paris"
    assert _attributes(root)["output.value"] == MOCK_ANSWER


def test_tool_span(traces: Traces) -> None:
    """A LlamaIndex tool call is a TOOL span with its arguments as JSON and its output as text."""
    tool = FunctionTool.from_defaults(fn=_add)
    assert str(tool.call(a=2, b=3)) == "5"

    (span,) = traces.spans
    assert span.name == "FunctionTool.call"
    attributes = _attributes(span)
    assert attributes.pop("openinference.span.kind") == "TOOL"
    assert attributes.pop("groundwire.framework") == "llamaindex"
    assert json.loads(attributes.pop("input.value")) == {"kwargs": {"a": 2, "b": 3}}
    assert attributes.pop("input.mime_type") == "application/json"
    assert attributes.pop("output.value") == "5"
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}


def _add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_workflow_run_is_one_tree(traces: Traces, index: VectorStoreIndex) -> None:
    """A workflow's run is the root of every query its steps make, with its start and result."""
    workflow = LookupTwice(index.as_query_engine(similarity_top_k=1), timeout=10)
    result = asyncio.run(_run_workflow(workflow, question="Where is Paris?"))

    (root,) = traces.roots()
    assert root.name == "LookupTwice.run"
    attributes = _attributes(root)
    assert attributes.pop("openinference.span.kind") == "CHAIN"
    assert attributes.pop("groundwire.framework") == "llamaindex"
    assert attributes.pop("input.value") == "Where is Paris?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("output.value") == result == f"{MOCK_ANSWER}\n{MOCK_ANSWER}"
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes == {}
    queries = traces.children(root)
    assert [span.name for span in queries] == ["RetrieverQueryEngine.aquery"] * 2
    assert [_attributes(span)["input.value"] for span in queries] == [
        "Where is Paris?",
        "Where is Paris? again",
    ]
    assert {span.context.trace_id for span in traces.spans} == {root.context.trace_id}


def test_workflow_failure(traces: Traces, index: VectorStoreIndex) -> None:
    """A failing workflow step ends the run's span with status ERROR."""
    workflow = LookupTwice(index.as_query_engine(similarity_top_k=1), timeout=10)
    with pytest.raises(ValueError, match="workflow step failed"):
        asyncio.run(_run_workflow(workflow, question="Where is Paris?", fail=True))

    (root,) = traces.roots()
    assert root.name == "LookupTwice.run"
    assert root.status.status_code is StatusCode.ERROR
    assert "workflow step failed" in (root.status.description or "")
    assert _attributes(root)["input.value"].startswith("{")


async def _run_workflow(workflow: Any, **start: Any) -> Any:
    """Run `workflow` with the start event fields `start`."""
    return await workflow.run(**start)


def test_gathered_async_queries_give_separate_trees(
    traces: Traces, index: VectorStoreIndex
) -> None:
    """Eight `aquery` tasks gathered on one loop give eight traces with their own questions."""
    engine = index.as_query_engine(similarity_top_k=1)

    async def ask_all() -> None:
        await asyncio.gather(*(engine.aquery(f"question {i}") for i in range(8)))

    asyncio.run(ask_all())
    roots = traces.roots()
    assert sorted(_attributes(r)["input.value"] for r in roots) == [
        f"question {i}" for i in range(8)
    ]
    for root in roots:
        in_trace = [s for s in traces.spans if s.context.trace_id == root.context.trace_id]
        assert len(in_trace) == 5
        (retrieval,) = [s for s in in_trace if s.name.startswith("retrieval")]
        assert _attributes(retrieval)["input.value"] == _attributes(root)["input.value"]
