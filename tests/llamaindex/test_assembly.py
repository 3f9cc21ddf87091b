"""End to end: the spans of real LlamaIndex query engines assemble into the right `RagTurn`s."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.query_engine import RetrieverQueryEngine
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn
from groundwire.assembly import turns_from_spans
from groundwire.capture import LIVE_CONTENT
from groundwire_llamaindex import LlamaIndexInstrumentor
from tests.llamaindex.apps import CountingLLM, ReverseReranker
from tests.llamaindex.conftest import OpenSpanCounter, Traces

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital."


def _engine(index: VectorStoreIndex, streaming: bool = False) -> RetrieverQueryEngine:
    """Retriever (top 3) -> ReverseReranker (top 2) -> CountingLLM."""
    return RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=3),
        llm=CountingLLM(),
        node_postprocessors=[ReverseReranker(top_n=2)],
        streaming=streaming,
    )


def _ask(engine: RetrieverQueryEngine, path: str) -> Any:
    """Run one question down `path`; return the response with its answer read."""
    if path == "query":
        return engine.query(QUESTION)
    if path == "aquery":
        return asyncio.run(engine.aquery(QUESTION))
    if path == "stream":
        response = engine.query(QUESTION)
        assert "".join(response.response_gen) == ANSWER
        return response

    async def consume() -> Any:
        """Ask one question with astream and read the whole stream."""
        response = await engine.aquery(QUESTION)
        assert "".join([token async for token in response.async_response_gen()]) == ANSWER
        return response

    return asyncio.run(consume())


def _contexts(turn: RagTurn) -> list[tuple[str, str | None, float | None, int | None]]:
    """The turn's contexts as comparable tuples."""
    return [(c.text, c.id, c.score, c.rank) for c in turn.contexts]


@pytest.mark.parametrize("path", ["query", "aquery", "stream", "astream"])
def test_one_turn_with_reranked_contexts(
    path: str, traces: Traces, index: VectorStoreIndex
) -> None:
    """Each query path assembles into one turn: the query, the post-processed nodes in order,
    the (full, even streamed) answer, the root's ids, framework and model."""
    response = _ask(_engine(index, streaming=path in ("stream", "astream")), path)

    (turn,) = turns_from_spans(traces.spans)
    (root,) = traces.roots()
    assert turn.query == QUESTION
    assert turn.answer == ANSWER
    assert len(response.source_nodes) == 2
    assert _contexts(turn) == [
        (item.node.get_content(), item.node.node_id, item.score, rank)
        for rank, item in enumerate(response.source_nodes)
    ]
    assert turn.trace_id == format(root.context.trace_id, "032x")
    assert turn.span_id == format(root.context.span_id, "016x")
    assert turn.attributes["groundwire.framework"] == "llamaindex"
    assert turn.attributes["gen_ai.request.model"] == "counting-1"


def _hidden_run(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    engine: RetrieverQueryEngine,
) -> tuple[Any, list[RagTurn]]:
    """Query with every text hidden and LIVE_CONTENT on; assemble from spans + live content."""
    tracer_provider, exporter, _ = provider
    LIVE_CONTENT.enabled = True
    LlamaIndexInstrumentor().instrument(
        tracer_provider=tracer_provider,
        hide_inputs=True,
        hide_outputs=True,
        hide_document_text=True,
    )
    try:
        response = engine.query(QUESTION)
    finally:
        LlamaIndexInstrumentor().uninstrument()
        LIVE_CONTENT.enabled = False
    spans = exporter.get_finished_spans()
    assert all("input.value" not in (span.attributes or {}) for span in spans)
    return response, turns_from_spans(spans, live_content=LIVE_CONTENT)


def test_hidden_text_assembles_from_live_content(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    index: VectorStoreIndex,
) -> None:
    """With every text hidden on the spans, the turn is still whole from LIVE_CONTENT."""
    engine = index.as_query_engine(llm=CountingLLM(), similarity_top_k=2)
    response, (turn,) = _hidden_run(provider, engine)
    assert turn.query == QUESTION
    assert turn.answer == ANSWER
    assert _contexts(turn) == [
        (item.node.get_content(), item.node.node_id, item.score, rank)
        for rank, item in enumerate(response.source_nodes)
    ]


def test_hidden_text_with_reranker_assembles_from_live_content(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    index: VectorStoreIndex,
) -> None:
    """Hidden text and a reranker: the turn's contexts are the reranked nodes, from LIVE_CONTENT."""
    response, (turn,) = _hidden_run(provider, _engine(index))
    assert (turn.query, turn.answer) == (QUESTION, ANSWER)
    assert [c.id for c in turn.contexts] == [n.node.node_id for n in response.source_nodes]
