"""The OpenTelemetry GenAI conventions as opentelemetry-util-genai and the official
opentelemetry-instrumentation-openai-v2 write them: a real app (util-genai workflow and retrieval
spans, an OpenAI client call answered by `OpenAIServer`) gives the app's real turn.

The conventions' retrieval documents are `{id, score}` only, so the contexts are read from the
chat span's system message, and the turn says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

from groundwire.assembly import diagnose, explain_traces, turns_from_spans
from groundwire.testing import OpenAIServer, Reply
from tests.test_assembly_langchain import KeywordRetriever

QUESTION = "What is the capital of Spain?"
ANSWER = 'Madrid: "Madrid is the capital of Spain."'
SOURCE = "genai: gen_ai.input.messages"


class App:
    """A RAG app written against util-genai, its model called through the OpenAI client."""

    def __init__(self, handler: TelemetryHandler, client: openai.OpenAI) -> None:
        """The app's telemetry handler and model client."""
        self.handler = handler
        self.client = client
        self.retriever = KeywordRetriever()

    def ask(self, question: str, *, parts: bool = True, content: bool = True) -> str:
        """Retrieve, then answer with the documents as system messages (one per document).

        (openai-v2 2.4b0 records a system message whose content is a list of parts as `[]`, so
        the app sends one system message per document, or one joined string.)
        """
        with self.handler.workflow("rag") as workflow:
            workflow.input_messages = [InputMessage(role="user", parts=[Text(content=question)])]
            with self.handler.retrieval(data_source_id="capitals") as retrieval:
                documents = self.retriever.invoke(question)
                retrieval.query_text = question
                retrieval.documents = [
                    {"id": f"row-{d.metadata['row']}", "score": 1.0 / (rank + 1)}
                    | ({"content": d.page_content} if content else {})
                    for rank, d in enumerate(documents)
                ]
            texts = [d.page_content for d in documents]
            system: list[Any] = [
                {"role": "system", "content": text}
                for text in (texts if parts else ["\n".join(texts)])
            ]
            reply = self.client.chat.completions.create(
                model="small-model", messages=[*system, {"role": "user", "content": question}]
            )
            answer = reply.choices[0].message.content or ""
            workflow.output_messages = [
                OutputMessage(role="assistant", parts=[Text(content=answer)], finish_reason="stop")
            ]
        return answer


@contextmanager
def traced_app(capture: str) -> Iterator[tuple[App, InMemorySpanExporter]]:
    """The app on a private provider with openai-v2 instrumented, content capture `capture`."""
    patch = pytest.MonkeyPatch()
    patch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    patch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", capture)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "genai-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with OpenAIServer() as server:
            server.set_default(Reply.chat(ANSWER))
            client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            yield App(TelemetryHandler(tracer_provider=provider), client), exporter
    finally:
        instrumentor.uninstrument()
        patch.undo()


@pytest.fixture
def traced() -> Iterator[tuple[App, InMemorySpanExporter]]:
    """The app with content captured on spans."""
    with traced_app("SPAN_ONLY") as pair:
        yield pair


@pytest.fixture
def app(traced: tuple[App, InMemorySpanExporter]) -> App:
    """The app."""
    return traced[0]


@pytest.fixture
def exporter(traced: tuple[App, InMemorySpanExporter]) -> InMemorySpanExporter:
    """Where the app's spans land."""
    return traced[1]


def expected_texts(question: str) -> list[str]:
    """The documents the app's retriever really returned, in order."""
    return [d.page_content for d in KeywordRetriever().invoke(question)]


def test_contexts_come_from_the_system_message_parts_when_documents_have_no_text(
    app: App, exporter: InMemorySpanExporter
) -> None:
    """`{id, score}` documents: the contexts are the chat call's system messages, in order."""
    answer = app.ask(QUESTION, content=False)
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert (turn.query, turn.context_texts, turn.answer) == (
        QUESTION,
        expected_texts(QUESTION),
        answer,
    )
    assert answer == ANSWER
    assert all(c.metadata == {"groundwire.context.source": SOURCE} for c in turn.contexts)
    assert turn.attributes["gen_ai.request.model"] == "scripted-model"
    assert turn.attributes["gen_ai.provider.name"] == "openai"
    (report,) = explain_traces(exporter.get_finished_spans())
    (root,) = report.turns
    assert root.root_name == "invoke_workflow rag"
    assert root.query is not None and root.query.origin == "genai: gen_ai.input.messages"
    assert root.answer is not None and root.answer.origin == "genai: gen_ai.output.messages"
    assert [(c.span_name, c.origin, c.count) for c in root.contexts] == [
        ("chat small-model", SOURCE, 2)
    ]


def test_one_system_string_gives_one_context(app: App, exporter: InMemorySpanExporter) -> None:
    """A system message sent as one string is one context: the text the model really saw."""
    app.ask(QUESTION, parts=False, content=False)
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.context_texts == ["\n".join(expected_texts(QUESTION))]


def test_document_text_on_the_retrieval_span_wins(app: App, exporter: InMemorySpanExporter) -> None:
    """When the retrieval records text, contexts come from it (ids and scores too)."""
    app.ask(QUESTION, content=True)
    (turn,) = turns_from_spans(exporter.get_finished_spans())
    assert turn.context_texts == expected_texts(QUESTION)
    assert [(c.id, c.score) for c in turn.contexts] == [("row-2", 1.0), ("row-0", 0.5)]
    assert all("groundwire.context.source" not in c.metadata for c in turn.contexts)


def test_content_capture_off_says_so() -> None:
    """Content capture off (the default): no turn, and the diagnosis names the switch."""
    with traced_app("NO_CONTENT") as (app, exporter):
        app.ask(QUESTION)
        spans = exporter.get_finished_spans()
    assert turns_from_spans(spans) == []
    (line,) = diagnose(spans)
    assert line.startswith("1 trace from service genai-app (genai): content not recorded (")
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in line
