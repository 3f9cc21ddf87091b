"""Turns from a real LangChain LCEL RAG app traced by OpenInference's LangChain instrumentor."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import Context
from groundwire.assembly import SpanRecord, TurnAssembler, turns_from_spans

CORPUS = (
    "Paris is the capital of France.",
    "Berlin is the capital of Germany.",
    "Madrid is the capital of Spain.",
    "The Loire is the longest river in France.",
)


class KeywordRetriever(BaseRetriever):
    """Ranks the corpus by words shared with the query; ties keep corpus order."""

    k: int = 2

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = set(query.lower().strip("?").split())
        ranked = sorted(
            range(len(CORPUS)),
            key=lambda i: -len(words & set(CORPUS[i].lower().rstrip(".").split())),
        )
        return [Document(page_content=CORPUS[i], metadata={"row": i}) for i in ranked[: self.k]]


def rag_chain(answers: list[str]) -> Runnable[str, str]:
    """retriever -> formatted context + question -> prompt -> fake chat model -> string."""
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    model = FakeListChatModel(responses=answers)
    join = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    setup = {"context": KeywordRetriever() | join, "question": RunnablePassthrough()}
    return setup | prompt | model | StrOutputParser()


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """OpenInference's LangChain instrumentor on a private provider, removed afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "lc-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()


FRANCE = [
    Context(text=CORPUS[0], rank=0, metadata={"row": 0}),
    Context(text=CORPUS[1], rank=1, metadata={"row": 1}),
]


def _root_span_id(exporter: InMemorySpanExporter) -> str:
    (root,) = [s for s in exporter.get_finished_spans() if s.parent is None]
    assert root.context is not None
    return format(root.context.span_id, "016x")


def test_invoke_gives_the_turn_the_model_saw(exporter: InMemorySpanExporter) -> None:
    """query, ranked contexts with metadata, answer, ids and attributes of a sync invoke."""
    answer = rag_chain(["Paris."]).invoke("What is the capital of France?")
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.query == "What is the capital of France?"
    assert list(turn.contexts) == FRANCE
    assert turn.answer == answer == "Paris."
    assert turn.span_id == _root_span_id(exporter)
    assert turn.attributes == {
        "service.name": "lc-app",
        "groundwire.framework": "langchain",
        "gen_ai.provider.name": "fakelistchatmodel",
    }


def test_dict_input_chain_takes_the_question_key(exporter: InMemorySpanExporter) -> None:
    """A chain invoked with {"question": ..., "history": ...} takes the question as the query."""
    pick = RunnableLambda(lambda inputs: inputs["question"])
    chain = pick | rag_chain(["Berlin."])
    chain.invoke({"question": "capital of Germany?", "history": ["hi"]})
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert (turn.query, turn.answer) == ("capital of Germany?", "Berlin.")
    assert turn.context_texts[0] == CORPUS[1]


def test_ainvoke_gives_the_same_turn(exporter: InMemorySpanExporter) -> None:
    """The async path produces the same turn as the sync one."""
    asyncio.run(rag_chain(["Paris."]).ainvoke("What is the capital of France?"))
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert (turn.query, list(turn.contexts), turn.answer) == (
        "What is the capital of France?",
        FRANCE,
        "Paris.",
    )


def test_streamed_answer_is_assembled_whole(exporter: InMemorySpanExporter) -> None:
    """A streamed answer (chunks) is read back as the full text from the root's output."""
    chunks = list(rag_chain(["Paris is the one."]).stream("What is the capital of France?"))
    assert len(chunks) > 1
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.answer == "".join(chunks) == "Paris is the one."
    assert list(turn.contexts) == FRANCE


def test_batch_gives_one_turn_per_input(exporter: InMemorySpanExporter) -> None:
    """`batch` runs are separate traces; each gives its own turn."""
    questions = ["What is the capital of France?", "What is the capital of Spain?"]
    rag_chain(["A.", "B."]).batch(questions, config={"max_concurrency": 1})
    turns = turns_from_spans(exporter.get_finished_spans())
    assert sorted(t.query for t in turns) == sorted(questions)
    assert len({t.trace_id for t in turns}) == 2
    spain = next(t for t in turns if "Spain" in t.query)
    assert spain.context_texts[0] == CORPUS[2]


def test_two_rag_calls_in_one_outer_chain_give_two_turns(exporter: InMemorySpanExporter) -> None:
    """An outer runnable that calls the RAG chain twice (an agent's shape) gives two turns."""
    inner = rag_chain(["Paris.", "Madrid."])

    def agent(question: str) -> str:
        first = inner.invoke("What is the capital of France?")
        second = inner.invoke("What is the capital of Spain?")
        return f"{first} {second}"

    RunnableLambda(agent).invoke("Capitals of France and Spain?")
    turns = turns_from_spans(exporter.get_finished_spans())
    assert [(t.query, t.answer) for t in turns] == [
        ("What is the capital of France?", "Paris."),
        ("What is the capital of Spain?", "Madrid."),
    ]
    assert len({t.trace_id for t in turns}) == 1


def test_live_assembler_gives_the_same_turn_as_offline(exporter: InMemorySpanExporter) -> None:
    """Feeding the spans one by one in end order to a TurnAssembler gives the offline turns."""
    rag_chain(["Paris."]).invoke("What is the capital of France?")
    spans = exporter.get_finished_spans()
    assembler = TurnAssembler()
    live = [turn for span in spans for turn in assembler.add(SpanRecord.from_readable(span))]
    assert live == turns_from_spans(spans)
    assert assembler.pending_traces == 0
