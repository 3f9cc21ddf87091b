"""Turns from a real LlamaIndex RAG app traced by OpenInference's LlamaIndex instrumentor."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.assembly import SpanRecord, TurnAssembler, turns_from_spans

CORPUS = (
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Madrid is the capital of Spain.",
)
QUESTION = "What is the capital of Spain?"
dispatcher = get_dispatcher(__name__)


class KeywordReranker(BaseNodePostprocessor):
    """Reorders nodes by words shared with the query, announcing itself as a reranker."""

    top_n: int = 2

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else ""
        dispatcher.event(
            ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n, model_name="kw")
        )
        words = set(query.lower().strip("?").split())
        ranked = sorted(
            nodes,
            key=lambda n: (
                -len(words & set(n.node.get_content().lower().rstrip(".").split())),
                n.node.get_content(),
            ),
        )
        result = [
            NodeWithScore(node=n.node, score=float(len(ranked) - i))
            for i, n in enumerate(ranked[: self.top_n])
        ]
        dispatcher.event(ReRankEndEvent(nodes=result))
        return result


def build_index() -> VectorStoreIndex:
    """A vector index over the corpus with llama-index-core's mock embedding."""
    return VectorStoreIndex.from_documents(
        [Document(text=text, id_=f"doc-{i}") for i, text in enumerate(CORPUS)],
        embed_model=MockEmbedding(embed_dim=8),
    )


def engine(index: VectorStoreIndex, **kwargs: Any) -> BaseQueryEngine:
    """A query engine over `index` answering with llama-index-core's mock LLM."""
    Settings.embed_model = MockEmbedding(embed_dim=8)
    return index.as_query_engine(llm=MockLLM(max_tokens=6), similarity_top_k=3, **kwargs)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    """The app's index, built once per module."""
    return build_index()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """OpenInference's LlamaIndex instrumentor on a private provider, removed afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "li-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()


def _root_span_id(exporter: InMemorySpanExporter) -> str:
    (root,) = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert root.context is not None
    return format(root.context.span_id, "016x")


def test_query_engine_gives_one_turn(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """The engine's public query span is the root; contexts are the retrieved nodes with ids."""
    response = engine(index).query(QUESTION)
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.query == QUESTION
    assert turn.answer == str(response)
    assert turn.span_id == _root_span_id(exporter)
    assert sorted(turn.context_texts) == sorted(CORPUS)
    assert [c.rank for c in turn.contexts] == [0, 1, 2]
    assert all(c.id and c.score is not None for c in turn.contexts)
    assert turn.attributes == {
        "service.name": "li-app",
        "groundwire.framework": "llamaindex",
        "gen_ai.request.model": "unknown",
    }


def test_reranker_output_is_what_the_model_saw(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """With a reranking postprocessor the contexts are its output list, in its order."""
    engine(index, node_postprocessors=[KeywordReranker(top_n=2)]).query(QUESTION)
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.context_texts[0] == CORPUS[2]
    assert len(turn.contexts) == 2
    assert [c.score for c in turn.contexts] == [3.0, 2.0]


def test_retriever_and_postprocessor_alone_give_no_turn(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """Retrieving and reranking without generating an answer is not a turn (and not an error)."""
    Settings.embed_model = MockEmbedding(embed_dim=8)
    nodes = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    KeywordReranker().postprocess_nodes(nodes, query_str=QUESTION)
    assert exporter.get_finished_spans()
    assert turns_from_spans(exporter.get_finished_spans()) == []


def test_aquery_gives_the_same_turn(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """The async query path assembles like the sync one."""
    response = asyncio.run(engine(index).aquery(QUESTION))
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert (turn.query, turn.answer) == (QUESTION, str(response))
    assert len(turn.contexts) == 3


def test_streaming_query_gives_the_full_answer(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """A streamed response (root output `<generator object>`) takes the model span's answer."""
    response = engine(index, streaming=True).query(QUESTION)
    "".join(response.response_gen)  # type: ignore[union-attr]
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.parent is None]
    assert "<generator object>" in str(root.attributes["output.value"])  # type: ignore[index]
    (model,) = [s for s in spans if s.name.endswith("stream_complete")]
    (turn,) = turns_from_spans(spans)
    assert (turn.query, turn.answer) == (QUESTION, model.attributes["output.value"])  # type: ignore[index]
    assert turn.answer.startswith("text")


def test_live_assembler_matches_offline(
    index: VectorStoreIndex, exporter: InMemorySpanExporter
) -> None:
    """Spans fed in end order to a TurnAssembler give the offline turn when the root ends."""
    engine(index).query(QUESTION)
    spans = exporter.get_finished_spans()
    assembler = TurnAssembler()
    live = [turn for span in spans for turn in assembler.add(SpanRecord.from_readable(span))]
    assert live == turns_from_spans(spans)
