"""One RAG turn: the exact spans, names, parentage and attribute sets we write."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from groundwire.capture import content_id
from groundwire_langchain import LangChainInstrumentor, __version__

from ._app import ANSWER, CORPUS, MODEL, QUESTION, format_docs, rag_chain
from .conftest import assert_well_formed, by_name, parent_of, roots

PARIS_ID = content_id(CORPUS[0].page_content)
EXPECTED_NAMES = sorted(
    [
        "RunnableSequence",
        "RunnableParallel<context,question>",
        "RunnableSequence",
        "retrieval CorpusRetriever",
        "format_docs",
        "RunnablePassthrough",
        "ChatPromptTemplate",
        f"chat {MODEL}",
        "StrOutputParser",
    ]
)


def test_invoke_makes_one_tree_of_named_spans(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A sync invoke gives one trace: the root chain over the parallel step, prompt, LLM, parser."""
    assert rag_chain().invoke(QUESTION) == ANSWER
    spans = exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == EXPECTED_NAMES
    assert_well_formed(spans, traces=1)
    (root,) = roots(spans)
    assert root.parent is None
    assert root.name == "RunnableSequence"
    retriever = by_name(spans, "retrieval CorpusRetriever")
    inner = parent_of(retriever, spans)
    assert inner.name == "RunnableSequence" and inner is not root
    assert parent_of(inner, spans).name == "RunnableParallel<context,question>"
    assert parent_of(parent_of(inner, spans), spans) is root
    for name in ("ChatPromptTemplate", f"chat {MODEL}", "StrOutputParser"):
        assert parent_of(by_name(spans, name), spans) is root
    assert parent_of(by_name(spans, "format_docs"), spans) is inner
    for span in spans:
        assert span.status.status_code is StatusCode.UNSET
        assert span.instrumentation_scope is not None
        assert span.instrumentation_scope.name == "groundwire_langchain"
        assert span.instrumentation_scope.version == __version__


def test_retriever_span_attributes(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """The retriever span has the query, the documents in rank order with ids, and nothing else."""
    rag_chain().invoke(QUESTION)
    retriever = by_name(exporter.get_finished_spans(), "retrieval CorpusRetriever")
    attributes = dict(retriever.attributes)
    expected = {
        "openinference.span.kind": "RETRIEVER",
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "CorpusRetriever",
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
        "gen_ai.retrieval.query.text": QUESTION,
        "retrieval.documents.0.document.content": CORPUS[0].page_content,
        "retrieval.documents.0.document.id": PARIS_ID,
        "retrieval.documents.0.document.metadata": '{"source": "geo.txt"}',
        "retrieval.documents.1.document.content": CORPUS[1].page_content,
        "retrieval.documents.1.document.id": "eiffel",
        "retrieval.documents.2.document.content": CORPUS[2].page_content,
        "retrieval.documents.2.document.id": "7",
        "retrieval.documents.2.document.score": 0.5,
        "retrieval.documents.2.document.metadata": '{"id": 7, "score": 0.5}',
    }
    for key, value in expected.items():
        assert attributes.pop(key) == value, key
    assert json.loads(str(attributes.pop("gen_ai.retrieval.documents"))) == [
        {"id": PARIS_ID},
        {"id": "eiffel"},
        {"id": "7", "score": 0.5},
    ]
    assert attributes == {}


def test_llm_span_attributes(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """The LLM span has model, provider, prompt messages, the answer and token counts, only."""
    rag_chain().invoke(QUESTION)
    attributes = dict(by_name(exporter.get_finished_spans(), f"chat {MODEL}").attributes)
    expected = {
        "openinference.span.kind": "LLM",
        "gen_ai.operation.name": "chat",
        "llm.model_name": MODEL,
        "gen_ai.request.model": MODEL,
        "llm.provider": "namedfakechatmodel",
        "gen_ai.provider.name": "namedfakechatmodel",
        "llm.token_count.prompt": 42,
        "llm.token_count.completion": 9,
        "llm.token_count.total": 51,
        "gen_ai.usage.input_tokens": 42,
        "gen_ai.usage.output_tokens": 9,
        "input.mime_type": "application/json",
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
    }
    for key, value in expected.items():
        assert attributes.pop(key) == value, key
    context = format_docs(list(CORPUS[:3]))
    assert json.loads(str(attributes.pop("input.value"))) == [
        {"role": "system", "content": f"Answer from the context only.\n\nContext:\n{context}"},
        {"role": "user", "content": QUESTION},
    ]
    assert attributes == {}


def test_root_span_attributes(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """The root chain span carries the question and answer as plain text and the framework."""
    rag_chain().invoke(QUESTION)
    (root,) = roots(exporter.get_finished_spans())
    attributes = dict(root.attributes)
    expected = {
        "openinference.span.kind": "CHAIN",
        "groundwire.framework": "langchain",
        "input.value": QUESTION,
        "input.mime_type": "text/plain",
        "output.value": ANSWER,
        "output.mime_type": "text/plain",
    }
    for key, value in expected.items():
        assert attributes.pop(key) == value, key
    assert attributes == {}


def test_intermediate_values_are_text_or_json(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Strings stay plain text; the parallel step's dict and the prompt's messages become JSON."""
    rag_chain().invoke(QUESTION)
    spans = exporter.get_finished_spans()
    parallel = dict(by_name(spans, "RunnableParallel<context,question>").attributes)
    assert parallel["input.value"] == QUESTION
    assert parallel["output.mime_type"] == "application/json"
    assert json.loads(str(parallel["output.value"])) == {
        "context": format_docs(list(CORPUS[:3])),
        "question": QUESTION,
    }
    formatter = dict(by_name(spans, "format_docs").attributes)
    assert formatter["output.mime_type"] == "text/plain"
    assert json.loads(str(formatter["input.value"]))[1] == {
        "page_content": CORPUS[1].page_content,
        "metadata": {},
        "id": "eiffel",
    }
    parser = dict(by_name(spans, "StrOutputParser").attributes)
    assert parser["input.value"] == ANSWER  # the model's message, as its text
    assert parser["output.value"] == ANSWER


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "batch"])
def test_application_span_is_the_roots_parent(
    mode: str,
    instrumentor: LangChainInstrumentor,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
) -> None:
    """The OTel span current when the chain is called becomes each root run's parent."""
    tracer = provider.get_tracer("app")
    chain = rag_chain()

    async def ask() -> None:
        with tracer.start_as_current_span("handle request"):
            await chain.ainvoke(QUESTION)

    if mode == "ainvoke":
        asyncio.run(ask())
    else:
        with tracer.start_as_current_span("handle request"):
            if mode == "invoke":
                chain.invoke(QUESTION)
            else:
                chain.batch([QUESTION, QUESTION])
    spans = exporter.get_finished_spans()
    (app_span,) = roots(spans)
    assert app_span.name == "handle request"
    chain_roots = [span for span in spans if span.parent == app_span.context]
    assert [span.name for span in chain_roots] == ["RunnableSequence"] * (
        2 if mode == "batch" else 1
    )
    assert all(span.attributes["groundwire.framework"] == "langchain" for span in chain_roots)
    assert {span.context.trace_id for span in spans} == {app_span.context.trace_id}
    assert len(spans) == 1 + 9 * len(chain_roots)


@pytest.mark.parametrize(
    "config",
    [
        {"metadata": {"session_id": "s-1", "user_id": "u-9"}},
        {"metadata": {"thread_id": "s-1", "user_id": "u-9"}},
    ],
)
def test_session_and_user_go_on_the_root(
    config: dict[str, dict[str, str]],
    instrumentor: LangChainInstrumentor,
    exporter: InMemorySpanExporter,
) -> None:
    """Run metadata `session_id` (or `thread_id`) and `user_id` mark the root span only."""
    rag_chain().invoke(QUESTION, config=config)  # type: ignore[arg-type]
    spans = exporter.get_finished_spans()
    (root,) = roots(spans)
    assert root.attributes["session.id"] == "s-1"
    assert root.attributes["user.id"] == "u-9"
    assert all("session.id" not in span.attributes for span in spans if span is not root)
