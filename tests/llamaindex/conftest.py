"""Real LlamaIndex apps (MockEmbedding, MockLLM, VectorStoreIndex) traced into memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire_llamaindex import LlamaIndexInstrumentor

CORPUS = (
    "Paris is the capital of France.",
    "The Eiffel Tower is in Paris.",
    "Berlin is the capital of Germany.",
    "Cats sleep for most of the day.",
)


class OpenSpanCounter(SpanProcessor):
    """Counts spans started and ended, so a test can prove no span was left open."""

    def __init__(self) -> None:
        self.started = 0
        self.ended = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Count a started span."""
        self.started += 1

    def on_end(self, span: ReadableSpan) -> None:
        """Count an ended span."""
        self.ended += 1


class Traces:
    """The spans one test produced, with tree helpers."""

    def __init__(
        self,
        tracer_provider: TracerProvider,
        exporter: InMemorySpanExporter,
        counter: OpenSpanCounter,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.exporter = exporter
        self.counter = counter

    @property
    def spans(self) -> list[ReadableSpan]:
        """Every finished span, in start order."""
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time or 0)

    def roots(self) -> list[ReadableSpan]:
        """Spans without a parent."""
        return [span for span in self.spans if span.parent is None]

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        """Direct children of `span`, in start order."""
        span_id = span.context.span_id
        return [s for s in self.spans if s.parent is not None and s.parent.span_id == span_id]

    def tree(self, span: ReadableSpan) -> tuple[str, tuple[object, ...]]:
        """`(name, (child trees...))`: the shape of the tree under `span`."""
        return span.name, tuple(self.tree(child) for child in self.children(span))

    def one(self, kind: str) -> ReadableSpan:
        """The only finished span of OpenInference kind `kind`."""
        found = [
            s for s in self.spans if (s.attributes or {}).get("openinference.span.kind") == kind
        ]
        assert len(found) == 1, [s.name for s in found]
        return found[0]

    def clear(self) -> None:
        """Forget the spans so far."""
        self.exporter.clear()


@pytest.fixture(scope="package")
def index() -> Iterator[VectorStoreIndex]:
    """A vector index over the small corpus, embedded with llama-index-core's MockEmbedding.

    LlamaIndex's global `Settings` get the mock embedding and LLM (so nothing reaches for
    OpenAI) for this package's tests only, and are put back afterwards.
    """
    previous = (Settings._embed_model, Settings._llm)
    Settings.embed_model = MockEmbedding(embed_dim=8)
    Settings.llm = MockLLM(max_tokens=6)
    try:
        yield VectorStoreIndex.from_documents([Document(text=text) for text in CORPUS])
    finally:
        Settings._embed_model, Settings._llm = previous


@pytest.fixture
def node_ids(index: VectorStoreIndex) -> dict[str, str]:
    """Text -> node id of every node in the index."""
    return {node.get_content(): node.node_id for node in index.docstore.docs.values()}


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter]]:
    """A private tracer provider exporting to memory."""
    exporter = InMemorySpanExporter()
    counter = OpenSpanCounter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(counter)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider, exporter, counter
    tracer_provider.shutdown()


@pytest.fixture(autouse=True)
def _no_privacy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests start from full capture whatever the environment says."""
    for name in (
        "GROUNDWIRE_HIDE_INPUTS",
        "GROUNDWIRE_HIDE_OUTPUTS",
        "GROUNDWIRE_HIDE_DOCUMENT_TEXT",
        "GROUNDWIRE_MAX_VALUE_LENGTH",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def traces(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    index: VectorStoreIndex,
) -> Iterator[Traces]:
    """LlamaIndex instrumented with full capture; checks afterwards that no span stayed open."""
    tracer_provider, exporter, counter = provider
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)
    try:
        yield Traces(tracer_provider, exporter, counter)
        assert counter.started == counter.ended, "a span was left open"
    finally:
        LlamaIndexInstrumentor().uninstrument()
