"""Privacy switches: hidden and truncated values stay off spans but reach LIVE_CONTENT."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.capture import LIVE_CONTENT, LiveContent
from groundwire_llamaindex import LlamaIndexInstrumentor
from tests.llamaindex.apps import ReverseReranker
from tests.llamaindex.conftest import OpenSpanCounter, Traces

QUESTION = "What is the capital of France?"


@pytest.fixture
def run(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    index: VectorStoreIndex,
) -> Any:
    """Instrument with the given options, run one reranked query, return the traces."""
    tracer_provider, exporter, counter = provider

    def go(**options: Any) -> Traces:
        """Instrument with `options`, ask one question, uninstrument."""
        LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider, **options)
        try:
            engine = RetrieverQueryEngine.from_args(
                index.as_retriever(similarity_top_k=3), node_postprocessors=[ReverseReranker()]
            )
            engine.query(QUESTION)
        finally:
            LlamaIndexInstrumentor().uninstrument()
        return Traces(tracer_provider, exporter, counter)

    return go


@pytest.fixture
def live() -> Iterator[None]:
    """LIVE_CONTENT enabled (as the online runner does) for the test, then off again."""
    LIVE_CONTENT.enabled = True
    try:
        yield
    finally:
        LIVE_CONTENT.enabled = False


def _keys(span: ReadableSpan) -> set[str]:
    """The span's attribute names."""
    return set(span.attributes or {})


def _live(span: ReadableSpan) -> LiveContent | None:
    """Take the span's LIVE_CONTENT entry, if any."""
    context = span.get_span_context()
    return LIVE_CONTENT.pop((context.trace_id, context.span_id))


def test_hide_inputs(run: Any) -> None:
    """hide_inputs keeps queries and prompts off every span; outputs and documents stay."""
    traces = run(hide_inputs=True)
    for span in traces.spans:
        keys = _keys(span)
        assert not keys & {"input.value", "input.mime_type", "gen_ai.retrieval.query.text"}
        assert "reranker.query" not in keys
    assert "output.value" in _keys(traces.roots()[0])
    assert "retrieval.documents.0.document.content" in _keys(traces.one("RETRIEVER"))


def test_hide_outputs(run: Any) -> None:
    """hide_outputs keeps answers off the query, synthesizer and LLM spans; inputs stay."""
    traces = run(hide_outputs=True)
    assert all("output.value" not in _keys(span) for span in traces.spans)
    assert all("output.mime_type" not in _keys(span) for span in traces.spans)
    assert (traces.roots()[0].attributes or {})["input.value"] == QUESTION


def test_hide_document_text(run: Any) -> None:
    """hide_document_text drops document content but keeps ids and scores."""
    traces = run(hide_document_text=True)
    for span in (traces.one("RETRIEVER"), traces.one("RERANKER")):
        keys = _keys(span)
        assert not [key for key in keys if key.endswith(".document.content")]
        assert [key for key in keys if key.endswith(".document.id")]
        assert [key for key in keys if key.endswith(".document.score")]


def test_max_value_length_truncates(run: Any) -> None:
    """max_value_length cuts every captured text to that many characters plus an ellipsis."""
    traces = run(max_value_length=8)
    root = traces.roots()[0].attributes or {}
    assert root["input.value"] == "What is …"
    assert root["output.value"] == "text tex…"
    retriever = traces.one("RETRIEVER").attributes or {}
    assert retriever["gen_ai.retrieval.query.text"] == "What is …"
    contents = [v for k, v in retriever.items() if k.endswith(".document.content")]
    assert contents and all(len(v) <= 9 and v.endswith("…") for v in contents)
    assert (traces.one("LLM").attributes or {})["input.mime_type"] == "text/plain"


def test_environment_variables(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """GROUNDWIRE_* variables apply when no argument is given; an argument wins over them."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_INPUTS", "true")
    monkeypatch.setenv("GROUNDWIRE_MAX_VALUE_LENGTH", "4")
    traces = run(hide_inputs=False)
    root = traces.roots()[0].attributes or {}
    assert root["input.value"] == "What…"
    traces.clear()
    traces = run()
    assert "input.value" not in (traces.roots()[0].attributes or {})


def test_live_content_keeps_what_the_span_hides(run: Any, live: None) -> None:
    """With LIVE_CONTENT on, hidden values of the root, retriever and reranker are kept in full."""
    traces = run(hide_inputs=True, hide_outputs=True, hide_document_text=True)
    root = traces.roots()[0]
    kept = _live(root)
    assert kept is not None
    assert kept.input == QUESTION
    assert kept.output == "text text text text text text"
    retrieved = _live(traces.one("RETRIEVER"))
    assert retrieved is not None and retrieved.input == QUESTION
    assert retrieved.documents is not None and len(retrieved.documents) == 3
    assert all(document.text for document in retrieved.documents)
    reranked = _live(traces.one("RERANKER"))
    assert reranked is not None and reranked.documents is not None
    ids = [
        (traces.one("RERANKER").attributes or {})[f"reranker.output_documents.{i}.document.id"]
        for i in range(2)
    ]
    assert [document.id for document in reranked.documents] == ids
    assert _live(traces.one("LLM")) is None


def test_live_content_untouched_when_nothing_is_hidden(run: Any, live: None) -> None:
    """Full capture puts nothing in LIVE_CONTENT: the spans already carry every value."""
    before = len(LIVE_CONTENT)
    run()
    assert len(LIVE_CONTENT) == before


def test_live_content_off_by_default(run: Any) -> None:
    """While LIVE_CONTENT is disabled, hidden values are not kept anywhere."""
    traces = run(hide_inputs=True)
    assert _live(traces.roots()[0]) is None


def test_truncated_json_is_marked_text(
    provider: tuple[TracerProvider, InMemorySpanExporter, OpenSpanCounter],
    index: VectorStoreIndex,
) -> None:
    """A JSON value cut by max_value_length no longer parses, so its MIME type becomes text."""
    tracer_provider, exporter, counter = provider
    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider, max_value_length=20)
    try:
        index.as_query_engine(llm=MockLLM(max_tokens=2, is_chat_model=True)).query(QUESTION)
    finally:
        LlamaIndexInstrumentor().uninstrument()
    llm = Traces(tracer_provider, exporter, counter).one("LLM").attributes or {}
    assert llm["input.value"] == '[{"role": "system", …'
    assert llm["input.mime_type"] == "text/plain"
