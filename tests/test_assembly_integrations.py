"""Our instrumentors and OpenInference's, on the same app, assemble into the same turns."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from openinference.instrumentation.langchain import (
    LangChainInstrumentor as OpenInferenceLangChain,
)
from openinference.instrumentation.llama_index import (
    LlamaIndexInstrumentor as OpenInferenceLlamaIndex,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn
from groundwire.assembly import turns_from_spans
from groundwire.capture import LIVE_CONTENT
from groundwire_langchain import LangChainInstrumentor
from groundwire_llamaindex import LlamaIndexInstrumentor
from tests.test_assembly_langchain import rag_chain
from tests.test_assembly_llamaindex import QUESTION, KeywordReranker, build_index, engine

Instrumentor = Any


def spans_of(
    instrumentor: Instrumentor, run: Callable[[], object], **options: Any
) -> tuple[ReadableSpan, ...]:
    """Run the app under one instrumentor on a private provider; return its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider, **options)
    try:
        run()
    finally:
        instrumentor.uninstrument()
    return exporter.get_finished_spans()


def traced(instrumentor: Instrumentor, run: Callable[[], object]) -> list[RagTurn]:
    """The turns assembled from the app's spans under one instrumentor."""
    return turns_from_spans(spans_of(instrumentor, run))


def essence(turns: list[RagTurn]) -> list[tuple[str, list[str], str]]:
    """What both instrumentations must agree on: query, contexts in order, answer."""
    return [(t.query, t.context_texts, t.answer) for t in turns]


LANGCHAIN_RUNS: dict[str, Callable[[], object]] = {
    "invoke": lambda: rag_chain(["Paris."]).invoke("What is the capital of France?"),
    "ainvoke": lambda: asyncio.run(rag_chain(["Paris."]).ainvoke("capital of Spain?")),
    "stream": lambda: list(rag_chain(["Paris is it."]).stream("capital of France?")),
    "batch": lambda: rag_chain(["A.", "B."]).batch(
        ["capital of France?", "capital of Spain?"], config={"max_concurrency": 1}
    ),
}


@pytest.mark.parametrize("path", sorted(LANGCHAIN_RUNS))
def test_langchain_turns_match_openinference(path: str) -> None:
    """Every LangChain run path gives the same turns under both instrumentors."""
    ours = traced(LangChainInstrumentor(), LANGCHAIN_RUNS[path])
    theirs = traced(OpenInferenceLangChain(), LANGCHAIN_RUNS[path])
    assert sorted(essence(ours)) == sorted(essence(theirs))
    assert ours
    assert all(t.attributes.get("groundwire.framework") == "langchain" for t in ours)


def test_langchain_hidden_text_still_assembles_from_live_content() -> None:
    """With every privacy switch on, our spans plus live content give OpenInference's turns."""
    run = LANGCHAIN_RUNS["invoke"]
    theirs = traced(OpenInferenceLangChain(), run)
    LIVE_CONTENT.enabled = True
    try:
        spans = spans_of(
            LangChainInstrumentor(),
            run,
            hide_inputs=True,
            hide_outputs=True,
            hide_document_text=True,
        )
        assert turns_from_spans(spans) == []
        ours = turns_from_spans(spans, live_content=LIVE_CONTENT)
    finally:
        LIVE_CONTENT.enabled = False
    assert essence(ours) == essence(theirs)


@pytest.fixture(scope="module")
def index() -> Any:
    """The LlamaIndex app's vector index (mock embedding)."""
    Settings.embed_model = MockEmbedding(embed_dim=8)
    return build_index()


LLAMAINDEX_RUNS: dict[str, Callable[[Any], object]] = {
    "query": lambda index: engine(index).query(QUESTION),
    "aquery": lambda index: asyncio.run(engine(index).aquery(QUESTION)),
    "reranked": lambda index: engine(index, node_postprocessors=[KeywordReranker()]).query(
        QUESTION
    ),
}


@pytest.mark.parametrize("path", sorted(LLAMAINDEX_RUNS))
def test_llamaindex_turns_match_openinference(index: Any, path: str) -> None:
    """Every LlamaIndex run path gives the same turns under both instrumentors."""
    ours = traced(LlamaIndexInstrumentor(), lambda: LLAMAINDEX_RUNS[path](index))
    theirs = traced(OpenInferenceLlamaIndex(), lambda: LLAMAINDEX_RUNS[path](index))
    assert ours
    if path == "reranked":
        assert essence(ours) == essence(theirs)
        assert [[c.id for c in t.contexts] for t in ours] == [
            [c.id for c in t.contexts] for t in theirs
        ]
    else:
        # The mock embedding scores every node alike, so only the set of contexts is fixed.
        assert [(q, sorted(c), a) for q, c, a in essence(ours)] == [
            (q, sorted(c), a) for q, c, a in essence(theirs)
        ]
    assert all(t.attributes.get("groundwire.framework") == "llamaindex" for t in ours)


def test_llamaindex_streamed_answer_is_whole_with_our_instrumentor(index: Any) -> None:
    """Our LlamaIndex spans carry the whole streamed answer, so the turn's answer is exact."""
    consumed: list[str] = []

    def run() -> None:
        response = engine(index, streaming=True).query(QUESTION)
        consumed.append("".join(response.response_gen))  # type: ignore[attr-defined]

    (turn,) = traced(LlamaIndexInstrumentor(), run)
    assert (turn.query, turn.answer, len(turn.contexts)) == (QUESTION, consumed[0], 3)


def test_llamaindex_hidden_text_still_assembles_from_live_content(index: Any) -> None:
    """With every privacy switch on, our LlamaIndex spans plus live content give the full turn."""
    theirs = traced(OpenInferenceLlamaIndex(), lambda: LLAMAINDEX_RUNS["reranked"](index))
    LIVE_CONTENT.enabled = True
    try:
        spans = spans_of(
            LlamaIndexInstrumentor(),
            lambda: LLAMAINDEX_RUNS["reranked"](index),
            hide_inputs=True,
            hide_outputs=True,
            hide_document_text=True,
        )
        assert turns_from_spans(spans) == []
        ours = turns_from_spans(spans, live_content=LIVE_CONTENT)
    finally:
        LIVE_CONTENT.enabled = False
    assert essence(ours) == essence(theirs)
