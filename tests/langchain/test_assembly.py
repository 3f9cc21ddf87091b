"""End to end: the spans of a real LangChain RAG app assemble into the right `RagTurn`s."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn
from groundwire.assembly import turns_from_spans
from groundwire.capture import LIVE_CONTENT, content_id
from groundwire_langchain import LangChainInstrumentor

from ._app import ANSWER, CORPUS, MODEL, QUESTION, rag_chain
from .conftest import roots


def _expected_contexts() -> list[tuple[str, str, int, float | None]]:
    return [
        (CORPUS[0].page_content, content_id(CORPUS[0].page_content), 0, None),
        (CORPUS[1].page_content, "eiffel", 1, None),
        (CORPUS[2].page_content, "7", 2, 0.5),
    ]


def _contexts(turn: RagTurn) -> list[tuple[str, str | None, int | None, float | None]]:
    return [(c.text, c.id, c.rank, c.score) for c in turn.contexts]


@pytest.mark.parametrize("path", ["invoke", "ainvoke", "stream", "astream"])
def test_one_turn_per_question(
    path: str, instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """Sync, async and streamed runs each assemble into one turn: query, contexts, answer, ids."""
    chain = rag_chain()
    if path == "invoke":
        chain.invoke(QUESTION)
    elif path == "ainvoke":
        asyncio.run(chain.ainvoke(QUESTION))
    elif path == "stream":
        list(chain.stream(QUESTION))
    else:

        async def consume() -> None:
            async for _ in chain.astream(QUESTION):
                pass

        asyncio.run(consume())
    spans = exporter.get_finished_spans()
    (turn,) = turns_from_spans(spans)
    (root,) = roots(spans)
    assert turn.query == QUESTION
    assert turn.answer == ANSWER
    assert _contexts(turn) == _expected_contexts()
    assert turn.trace_id == format(root.context.trace_id, "032x")
    assert turn.span_id == format(root.context.span_id, "016x")
    assert turn.attributes["groundwire.framework"] == "langchain"
    assert turn.attributes["gen_ai.request.model"] == MODEL


def test_batch_gives_one_turn_per_input(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A batch of three questions assembles into three turns, each with its own query."""
    questions = ["capital of France?", "capital of Germany?", "capital of Italy?"]
    rag_chain(model=ParrotFakeChatModel()).batch(questions)
    turns = turns_from_spans(exporter.get_finished_spans())
    assert sorted((turn.query, turn.answer) for turn in turns) == [(q, q) for q in questions]
    by_query = {turn.query: turn for turn in turns}
    assert by_query["capital of Germany?"].contexts[0].text == CORPUS[2].page_content


def test_failed_retrieval_gives_no_turn(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A run whose retriever failed has no answer, so it gives no turn (and no error)."""
    with pytest.raises(LookupError):
        rag_chain().invoke("boom")
    assert turns_from_spans(exporter.get_finished_spans()) == []


def test_hidden_text_is_assembled_from_live_content(
    provider: TracerProvider, exporter: InMemorySpanExporter, live_content: None
) -> None:
    """With every text hidden on the spans, the turn still gets the full text from memory."""
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(
        tracer_provider=provider, hide_inputs=True, hide_outputs=True, hide_document_text=True
    )
    try:
        rag_chain().invoke(QUESTION)
    finally:
        instrumentor.uninstrument()
    (turn,) = turns_from_spans(exporter.get_finished_spans(), live_content=LIVE_CONTENT)
    assert (turn.query, turn.answer) == (QUESTION, ANSWER)
    assert _contexts(turn) == _expected_contexts()


def test_rag_called_twice_in_one_trace_gives_two_turns(
    instrumentor: LangChainInstrumentor, exporter: InMemorySpanExporter
) -> None:
    """A step that runs the RAG chain twice (as an agent would) gives two turns in one trace."""
    inner = rag_chain()

    def ask_twice(question: str, config: RunnableConfig) -> str:
        return f"{inner.invoke(question, config)} / {inner.invoke(question + ' Really?', config)}"

    RunnableLambda(ask_twice, name="ask_twice").invoke(QUESTION)
    turns = turns_from_spans(exporter.get_finished_spans())
    assert [(turn.query, turn.answer) for turn in turns] == [
        (QUESTION, ANSWER),
        (QUESTION + " Really?", ANSWER),
    ]
    assert len({turn.trace_id for turn in turns}) == 1
    assert all(_contexts(turn) == _expected_contexts() for turn in turns)
