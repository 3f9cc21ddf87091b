"""Every way a LangChain app runs gives correct, closed span trees: async, streams, batches,
nested chains, errors, tools, text-completion models and concurrent threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    FakeListChatModelError,
    ParrotFakeChatModel,
)
from langchain_core.output_parsers import StrOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import tool
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from groundwire_langchain import LangChainInstrumentor

from ._app import ANSWER, CORPUS, MODEL, PROMPT, QUESTION, rag_chain
from .conftest import assert_well_formed, by_name, parent_of, roots


def _turn(spans: Sequence[ReadableSpan]) -> tuple[str, str, str]:
    """(root input, retriever query, root output) of one trace."""
    (root,) = roots(spans)
    retriever = by_name(spans, "retrieval CorpusRetriever")
    return (
        str(root.attributes["input.value"]),
        str(retriever.attributes["gen_ai.retrieval.query.text"]),
        str(root.attributes["output.value"]),
    )


def _traces(spans: Sequence[ReadableSpan]) -> list[list[ReadableSpan]]:
    grouped: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        grouped.setdefault(span.context.trace_id, []).append(span)
    return list(grouped.values())


def test_ainvoke(instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter) -> None:
    """An async invoke gives the same tree as a sync one."""
    assert asyncio.run(rag_chain().ainvoke(QUESTION)) == ANSWER
    spans = exporter.get_finished_spans()
    assert len(spans) == 9
    assert_well_formed(spans, traces=1)
    assert _turn(spans) == (QUESTION, QUESTION, ANSWER)
    assert instrumentor.handler is not None and instrumentor.handler.open_runs == 0


def test_stream_records_the_whole_answer(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Streaming: the root's input is the question and its output the concatenated stream."""
    chunks = list(rag_chain().stream(QUESTION))
    assert len(chunks) > 3 and "".join(chunks) == ANSWER
    spans = exporter.get_finished_spans()
    assert len(spans) == 9
    assert_well_formed(spans, traces=1)
    assert _turn(spans) == (QUESTION, QUESTION, ANSWER)
    assert by_name(spans, f"chat {MODEL}").attributes["output.value"] == ANSWER


def test_astream_records_the_whole_answer(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Async streaming: same tree, same whole answer."""

    async def consume() -> list[str]:
        return [chunk async for chunk in rag_chain().astream(QUESTION)]

    assert "".join(asyncio.run(consume())) == ANSWER
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=1)
    assert _turn(spans) == (QUESTION, QUESTION, ANSWER)


def test_abandoned_stream_still_ends_every_span(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A stream the caller stops reading after one chunk leaves no span open."""
    stream = rag_chain().stream(QUESTION)
    next(stream)
    stream.close()
    spans = exporter.get_finished_spans()
    assert len(spans) == 9
    # LangChain closes the inner steps' generators only after the outer run has ended.
    assert_well_formed(spans, traces=1, nested_times=False)
    assert instrumentor.handler is not None and instrumentor.handler.open_runs == 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batch_gives_one_trace_per_input(
    mode: str, instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """`batch` / `abatch` over three questions give three separate, correct trees."""
    questions = ["capital of France?", "capital of Germany?", "capital of Italy?"]
    chain = rag_chain(model=ParrotFakeChatModel())
    answers = chain.batch(questions) if mode == "sync" else asyncio.run(chain.abatch(questions))
    assert answers == questions  # the parrot repeats the question
    traces = _traces(exporter.get_finished_spans())
    assert_well_formed(exporter.get_finished_spans(), traces=3)
    assert sorted(_turn(spans) for spans in traces) == [(q, q, q) for q in sorted(questions)]
    assert all(len(spans) == 9 for spans in traces)


def test_concurrent_threads_give_separate_trees(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Eight threads invoking the same chain at once give eight complete, unmixed trees."""
    chain = rag_chain(model=ParrotFakeChatModel())
    questions = [f"question {i} about the capital of France" for i in range(8)]
    barrier = threading.Barrier(len(questions))
    answers: dict[str, str] = {}

    def ask(question: str) -> None:
        barrier.wait()
        answers[question] = chain.invoke(question)

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == {q: q for q in questions}
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=8)
    traces = _traces(spans)
    assert all(len(trace_spans) == 9 for trace_spans in traces)
    assert sorted(_turn(trace_spans) for trace_spans in traces) == [(q, q, q) for q in questions]
    assert instrumentor.handler is not None and instrumentor.handler.open_runs == 0


def test_concurrent_tasks_give_separate_trees(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Five `ainvoke`s gathered on one event loop give five complete, unmixed trees."""
    chain = rag_chain(model=ParrotFakeChatModel())
    questions = [f"task {i}: capital of Italy?" for i in range(5)]

    async def ask_all() -> list[str]:
        return list(await asyncio.gather(*(chain.ainvoke(q) for q in questions)))

    assert asyncio.run(ask_all()) == questions
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=5)
    assert sorted(_turn(trace_spans) for trace_spans in _traces(spans)) == [
        (q, q, q) for q in questions
    ]


def test_nested_chains_hang_under_the_calling_run(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A chain invoked inside another chain's step becomes a subtree of that step's span."""
    inner = rag_chain()

    def ask_twice(question: str, config: RunnableConfig) -> str:
        first = inner.invoke(question, config)
        second = inner.invoke(question + " Really?", config)
        return f"{first} / {second}"

    outer = RunnableLambda(ask_twice, name="ask_twice") | StrOutputParser()
    assert outer.invoke(QUESTION) == f"{ANSWER} / {ANSWER}"
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=1)
    (root,) = roots(spans)
    assert "groundwire.framework" in root.attributes
    step = by_name(spans, "ask_twice")
    assert parent_of(step, spans) is root
    inner_roots = [s for s in spans if s.parent is not None and s.parent == step.context]
    assert len(inner_roots) == 2
    assert all(s.name == "RunnableSequence" for s in inner_roots)
    assert all("groundwire.framework" not in s.attributes for s in spans if s is not root)
    queries = sorted(
        str(s.attributes["gen_ai.retrieval.query.text"])
        for s in spans
        if s.name == "retrieval CorpusRetriever"
    )
    assert queries == [QUESTION, QUESTION + " Really?"]


def _assert_failed(span: ReadableSpan, error: type[BaseException], message: str) -> None:
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == f"{error.__name__}: {message}"
    assert span.attributes["error.type"] == error.__qualname__
    (event,) = span.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert event.attributes["exception.type"].endswith(error.__name__)  # type: ignore[union-attr]
    assert event.attributes["exception.message"] == message


def test_retriever_error_marks_the_path_to_the_root(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A failing retriever: it and every ancestor get ERROR and an exception event; all end."""
    with pytest.raises(LookupError):
        rag_chain().invoke("boom")
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=1)
    retriever = by_name(spans, "retrieval CorpusRetriever")
    _assert_failed(retriever, LookupError, "the index is offline")
    attributes = dict(retriever.attributes)
    assert attributes["input.value"] == "boom"
    assert "gen_ai.retrieval.documents" not in attributes
    span = retriever
    while span.parent is not None:
        span = parent_of(span, spans)
        _assert_failed(span, LookupError, "the index is offline")
    (root,) = roots(spans)
    assert span is root and root.attributes["input.value"] == "boom"
    assert "output.value" not in root.attributes
    assert instrumentor.handler is not None and instrumentor.handler.open_runs == 0


def test_model_error_while_streaming(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A chat model that fails mid-stream: LLM span ERROR, root ERROR with its input, all ended."""
    model = FakeListChatModel(responses=["one two three"], error_on_chunk_number=2)
    chain = PROMPT.partial(context="none") | model | StrOutputParser()
    with pytest.raises(FakeListChatModelError):
        list(chain.stream({"question": QUESTION}))
    spans = exporter.get_finished_spans()
    assert_well_formed(spans, traces=1)
    llm = next(s for s in spans if s.attributes["openinference.span.kind"] == "LLM")
    assert llm.status.status_code is StatusCode.ERROR
    assert llm.events[0].name == "exception"
    (root,) = roots(spans)
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "FakeListChatModelError"
    assert root.attributes["input.value"] == QUESTION  # a one-key dict of text is text


def test_tool_spans(instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter) -> None:
    """A tool run is a TOOL span `execute_tool {name}` with input and output; failures are ERROR."""

    @tool
    def population(city: str) -> str:
        """Population of a city."""
        if city == "Atlantis":
            raise ValueError("no such city")
        return "2.1 million"

    assert population.invoke({"city": "Paris"}) == "2.1 million"
    with pytest.raises(ValueError, match="no such city"):
        population.invoke({"city": "Atlantis"})
    ok, failed = exporter.get_finished_spans()
    attributes = dict(ok.attributes)
    assert ok.name == "execute_tool population"
    for key, value in {
        "openinference.span.kind": "TOOL",
        "tool.name": "population",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "population",
        "groundwire.framework": "langchain",
        "input.value": "{'city': 'Paris'}",
        "input.mime_type": "text/plain",
        "output.value": "2.1 million",
        "output.mime_type": "text/plain",
    }.items():
        assert attributes.pop(key) == value, key
    assert attributes == {}
    _assert_failed(failed, ValueError, "no such city")


def test_text_completion_model(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A plain (non-chat) LLM gives an LLM span with `text_completion` and the prompt as text."""
    llm = FakeListLLM(responses=["Paris."])
    assert llm.invoke("Capital of France?") == "Paris."
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes)
    assert span.name == "FakeListLLM"
    assert attributes.pop("openinference.span.kind") == "LLM"
    assert attributes.pop("gen_ai.operation.name") == "text_completion"
    assert attributes.pop("groundwire.framework") == "langchain"
    assert attributes.pop("input.value") == "Capital of France?"
    assert attributes.pop("input.mime_type") == "text/plain"
    assert attributes.pop("output.value") == "Paris."
    assert attributes.pop("output.mime_type") == "text/plain"
    assert attributes.pop("llm.provider") == attributes.pop("gen_ai.provider.name")
    assert attributes == {}


def test_unwritable_value_loses_only_itself(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A value JSON cannot encode (a cycle) is left off; the span keeps the rest and its error."""

    def cyclic(question: str) -> dict[str, object]:
        value: dict[str, object] = {"question": question}
        value["self"] = value
        return value

    def fail(value: object) -> str:
        raise RuntimeError("cannot answer")

    RunnableLambda(cyclic, name="cyclic").invoke(QUESTION)
    with pytest.raises(RuntimeError):
        RunnableLambda(fail, name="fail").invoke(cyclic(QUESTION))
    ok, failed = exporter.get_finished_spans()
    assert dict(ok.attributes) == {
        "openinference.span.kind": "CHAIN",
        "groundwire.framework": "langchain",
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
    }
    assert ok.status.status_code is StatusCode.UNSET
    assert "input.value" not in failed.attributes
    _assert_failed(failed, RuntimeError, "cannot answer")


def test_malformed_document_loses_only_itself(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A retriever that returns a non-Document among documents: the real documents still land."""

    class SloppyRetriever(BaseRetriever):
        """Returns a bare string between two documents."""

        def _get_relevant_documents(
            self, query: str, *, run_manager: CallbackManagerForRetrieverRun
        ) -> list[Document]:
            return [CORPUS[0], "not a document", CORPUS[1]]  # type: ignore[list-item]

    SloppyRetriever().invoke(QUESTION)
    (span,) = exporter.get_finished_spans()
    attributes = span.attributes
    assert attributes["retrieval.documents.0.document.content"] == CORPUS[0].page_content
    assert attributes["retrieval.documents.1.document.id"] == "eiffel"
    assert "retrieval.documents.2.document.id" not in attributes
    assert span.status.status_code is StatusCode.UNSET
