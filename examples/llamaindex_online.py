"""LlamaIndex, scored online on the app's own OpenTelemetry providers.

What it shows:
- a LlamaIndex RAG app (VectorStoreIndex over the bundled handbook -> query engine) left
  unchanged;
- an app that already set up OpenTelemetry: `groundwire.configure(tracer_provider=...,
  meter_provider=...)` adds evaluation to *its* providers (here with in-memory exporters, as a
  test would) instead of building its own;
- `quoted_spans` and `quote_verification` run inline, so their `gen_ai.evaluation.result` events
  land on each query's own span, next to OpenInference's `evaluations.*` attributes.

No network, server or key: the embedding is a tiny word-hashing `BaseEmbedding` and the LLM is a
`CustomLLM` that answers like the demo's offline stand-in (not an LLM: it quotes, and sometimes
misquotes, the context it is given). Swap in any LlamaIndex LLM and embedding for real use.

Run from the repository root:

    .venv/bin/python examples/llamaindex_online.py
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.schema import TextNode
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import groundwire
from groundwire.demo import load_chunks
from groundwire.demo.app import stand_in_answer

QUESTIONS = (
    "When is the main branch open?",
    "Why does the reading hall have tall windows?",
    "Can the study rooms be reserved?",
)
_WORD = re.compile(r"\w+")
_CONTEXT = re.compile(r"-{5,}\n(.*?)\n-{5,}", re.DOTALL)
_QUERY = re.compile(r"Query: (.*?)\nAnswer:", re.DOTALL)


class WordHashEmbedding(BaseEmbedding):
    """Bag of words hashed into 256 dimensions, L2-normalised: crude but real similarity."""

    dims: int = 256

    def _embed(self, text: str) -> list[float]:
        """The hashed, normalised bag of words of `text`."""
        vector = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            vector[zlib.crc32(word.encode()) % self.dims] += 1.0
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        return [v / norm for v in vector]

    def _get_text_embedding(self, text: str) -> list[float]:
        """Embed a node's text."""
        return self._embed(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        """Embed a query."""
        return self._embed(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        """Embed a query (async form)."""
        return self._embed(query)


class QuotingLLM(CustomLLM):
    """Offline stand-in LLM: answers the QA prompt by quoting (or misquoting) its context."""

    seed: int = 2

    @property
    def metadata(self) -> LLMMetadata:
        """A model name that says what this is."""
        return LLMMetadata(model_name="offline-stand-in")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Quote the context paragraph that best matches the query."""
        context, query = _CONTEXT.search(prompt), _QUERY.search(prompt)
        paragraphs = context.group(1).split("\n\n") if context else []
        passages = [(i, " ".join(p.split())) for i, p in enumerate(paragraphs, 1) if p.strip()]
        answer, _style = stand_in_answer(query.group(1) if query else "", passages, seed=self.seed)
        return CompletionResponse(text=answer)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The whole answer as one chunk."""
        response = self.complete(prompt, formatted, **kwargs)
        yield CompletionResponse(text=response.text, delta=response.text)


def main() -> None:
    """Build the index, query it with inline evaluation on the app's providers, print the scores."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    metric_reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[metric_reader])

    nodes = [
        TextNode(text=chunk.text, id_=chunk.id, excluded_llm_metadata_keys=["source"])
        for chunk in load_chunks()
    ]
    index = VectorStoreIndex(nodes, embed_model=WordHashEmbedding())
    engine = index.as_query_engine(llm=QuotingLLM(), similarity_top_k=2)

    online = groundwire.configure(
        evaluators=["quoted_spans", "quote_verification"],
        inline=["quoted_spans", "quote_verification"],
        instrument=["llamaindex"],
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    print(f"instrumented: {online.instrumented}")
    for question in QUESTIONS:
        print(f"\nQ: {question}\nA: {engine.query(question)}")
    groundwire.shutdown()

    print("\nscores on each query's root span (inline evaluation):")
    for span in spans.get_finished_spans():
        if span.parent is not None:
            continue
        results = {
            str(e.attributes["gen_ai.evaluation.name"]): e.attributes.get(
                "gen_ai.evaluation.score.value"
            )
            for e in span.events
            if e.name == "gen_ai.evaluation.result" and e.attributes
        }
        if results:
            asked = (span.attributes or {}).get("input.value")
            print(f"  {asked}  ->  {results}")
    data = metric_reader.get_metrics_data()
    names = sorted(
        {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
        if data
        else set()
    )
    print(f"metrics recorded on the app's meter provider: {names}")
    tracer_provider.shutdown()


if __name__ == "__main__":
    main()
