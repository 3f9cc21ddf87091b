"""Privacy switches (arguments and GROUNDWIRE_* variables) keep text off spans, while evaluation
still gets the full text through the live-content store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.capture import LIVE_CONTENT, content_id
from groundwire_langchain import LangChainInstrumentor

from ._app import ANSWER, CORPUS, MODEL, QUESTION, rag_chain
from .conftest import by_name, roots

INPUT_KEYS = {"input.value", "input.mime_type", "gen_ai.retrieval.query.text"}
OUTPUT_KEYS = {"output.value", "output.mime_type"}


@pytest.fixture
def instrument(provider: TracerProvider) -> Iterator[LangChainInstrumentor]:
    """An instrumentor the test instruments itself (with its own options); torn down after."""
    instrumentor = LangChainInstrumentor()
    yield instrumentor
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()


def _run(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:
    assert rag_chain().invoke(QUESTION) == ANSWER
    spans = exporter.get_finished_spans()
    assert len(spans) == 9
    return spans


def _keys(spans: tuple[ReadableSpan, ...]) -> set[str]:
    return {key for span in spans for key in span.attributes or {}}


def _document_content_keys(spans: tuple[ReadableSpan, ...]) -> set[str]:
    return {key for key in _keys(spans) if key.endswith(".document.content")}


def test_hide_inputs_argument(
    instrument: LangChainInstrumentor, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """`hide_inputs=True` removes every input value (and the retrieval query); outputs stay."""
    instrument.instrument(tracer_provider=provider, hide_inputs=True)
    spans = _run(exporter)
    assert not _keys(spans) & INPUT_KEYS
    (root,) = roots(spans)
    assert root.attributes["output.value"] == ANSWER
    assert len(_document_content_keys(spans)) == 3


def test_hide_outputs_variable(
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GROUNDWIRE_HIDE_OUTPUTS=true removes every output value; inputs and documents stay."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_OUTPUTS", "true")
    instrument.instrument(tracer_provider=provider)
    spans = _run(exporter)
    assert not _keys(spans) & OUTPUT_KEYS
    (root,) = roots(spans)
    assert root.attributes["input.value"] == QUESTION
    assert len(_document_content_keys(spans)) == 3
    assert by_name(spans, f"chat {MODEL}").attributes["llm.token_count.total"] == 51


def test_hide_document_text_variable(
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """GROUNDWIRE_HIDE_DOCUMENT_TEXT=1 drops document content; ids and scores stay."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_DOCUMENT_TEXT", "1")
    instrument.instrument(tracer_provider=provider)
    spans = _run(exporter)
    assert _document_content_keys(spans) == set()
    retriever = by_name(spans, "retrieval CorpusRetriever").attributes
    assert retriever["retrieval.documents.0.document.id"] == content_id(CORPUS[0].page_content)
    assert retriever["retrieval.documents.2.document.score"] == 0.5
    assert retriever["input.value"] == QUESTION


def test_arguments_win_over_variables(
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An explicit `hide_inputs=False` overrides GROUNDWIRE_HIDE_INPUTS=true."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_INPUTS", "true")
    instrument.instrument(tracer_provider=provider, hide_inputs=False)
    (root,) = roots(_run(exporter))
    assert root.attributes["input.value"] == QUESTION


@pytest.mark.parametrize("source", ["argument", "variable"])
def test_max_value_length_truncates_every_text_value(
    source: str,
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Values longer than the limit are cut to it and marked with an ellipsis; ids stay whole."""
    if source == "argument":
        instrument.instrument(tracer_provider=provider, max_value_length=12)
    else:
        monkeypatch.setenv("GROUNDWIRE_MAX_VALUE_LENGTH", "12")
        instrument.instrument(tracer_provider=provider)
    spans = _run(exporter)
    texts = [
        str(value)
        for span in spans
        for key, value in (span.attributes or {}).items()
        if key in {"input.value", "output.value", "gen_ai.retrieval.query.text"}
        or key.endswith(".document.content")
    ]
    assert len(texts) > 15
    assert all(len(text) <= 13 for text in texts)
    (root,) = roots(spans)
    assert root.attributes["input.value"] == QUESTION[:12] + "…"
    assert root.attributes["output.value"] == ANSWER[:12] + "…"
    retriever = by_name(spans, "retrieval CorpusRetriever").attributes
    assert retriever["retrieval.documents.1.document.id"] == "eiffel"


def test_bad_variable_is_a_clear_error(
    instrument: LangChainInstrumentor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A non-numeric GROUNDWIRE_MAX_VALUE_LENGTH fails at instrument time, naming the variable."""
    monkeypatch.setenv("GROUNDWIRE_MAX_VALUE_LENGTH", "lots")
    with pytest.raises(ValueError, match="GROUNDWIRE_MAX_VALUE_LENGTH"):
        instrument.instrument()


def test_live_content_keeps_the_full_text_of_hidden_spans(
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    live_content: None,
) -> None:
    """With everything hidden and the store enabled, the full query, answer and documents are kept
    in memory under each span's (trace_id, span_id)."""
    instrument.instrument(
        tracer_provider=provider, hide_inputs=True, hide_outputs=True, hide_document_text=True
    )
    spans = _run(exporter)
    assert not _keys(spans) & (INPUT_KEYS | OUTPUT_KEYS)
    assert _document_content_keys(spans) == set()
    (root,) = roots(spans)
    kept = LIVE_CONTENT.get((root.context.trace_id, root.context.span_id))
    assert kept is not None
    assert (kept.input, kept.output, kept.documents) == (QUESTION, ANSWER, None)
    retriever = by_name(spans, "retrieval CorpusRetriever")
    kept = LIVE_CONTENT.get((retriever.context.trace_id, retriever.context.span_id))
    assert kept is not None and kept.input == QUESTION and kept.output is None
    assert kept.documents is not None
    assert [(c.text, c.id, c.rank, c.score) for c in kept.documents] == [
        (CORPUS[0].page_content, content_id(CORPUS[0].page_content), 0, None),
        (CORPUS[1].page_content, "eiffel", 1, None),
        (CORPUS[2].page_content, "7", 2, 0.5),
    ]
    assert len(LIVE_CONTENT) == len(spans)


def test_live_content_is_not_kept_when_nothing_is_hidden(
    instrument: LangChainInstrumentor,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    live_content: None,
) -> None:
    """When the spans carry everything, nothing is duplicated into the store."""
    instrument.instrument(tracer_provider=provider)
    _run(exporter)
    assert len(LIVE_CONTENT) == 0


def test_live_content_is_not_kept_while_the_store_is_disabled(
    instrument: LangChainInstrumentor, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    """Hidden text goes nowhere unless the store has been enabled (by the online runner)."""
    assert not LIVE_CONTENT.enabled
    instrument.instrument(tracer_provider=provider, hide_inputs=True)
    _run(exporter)
    assert len(LIVE_CONTENT) == 0
