"""GenAI message content carried as log-based events, read back onto the spans it belongs to.

The app's own spans carry content while its model calls log theirs as events only (the GenAI
conventions' EVENT_ONLY mode, applied here to the model calls by switching the variable around
the call): the chat span has no messages, the `gen_ai.client.inference.operation.details` log
record beside it has them. Spans and log records go through an OTLP/JSON file and the offline
readers (`SpanBatch.logs`), as a Collector's file exporter would write them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import openai
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler

from groundwire.assembly import explain_traces, turns_from_spans
from groundwire.offline import Problems, TurnCounts, iter_turns
from groundwire.offline.readers import read_file
from groundwire.testing import OpenAIServer, Reply
from tests.dialects._apps import QUESTIONS, write_jsonl
from tests.dialects.test_genai import ANSWER, App, expected_texts

_CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class EventApp(App):
    """The GenAI app whose model calls log their content as events only."""

    def ask(self, question: str, *, parts: bool = True, content: bool = True) -> str:
        """As `App.ask`, the model call made with EVENT_ONLY content capture."""
        original = self.client.chat.completions.create

        def create(**kwargs: Any) -> Any:
            os.environ[_CAPTURE] = "EVENT_ONLY"
            try:
                return original(**kwargs)
            finally:
                os.environ[_CAPTURE] = "SPAN_ONLY"

        self.client.chat.completions.create = create  # type: ignore[method-assign]
        try:
            return super().ask(question, parts=parts, content=content)
        finally:
            self.client.chat.completions.create = original  # type: ignore[method-assign]


def record_events(path: Path) -> Path:
    """Run the app for every question; write spans, then log records, as OTLP/JSON lines."""
    patch = pytest.MonkeyPatch()
    patch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    patch.setenv(_CAPTURE, "SPAN_ONLY")
    resource = Resource.create({"service.name": "genai-events-app"})
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        with OpenAIServer() as server:
            server.set_default(Reply.chat(ANSWER))
            client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            handler = TelemetryHandler(
                tracer_provider=tracer_provider, logger_provider=logger_provider
            )
            app = EventApp(handler, client)
            for question in QUESTIONS:
                app.ask(question, content=False)
    finally:
        instrumentor.uninstrument()
        patch.undo()
    write_jsonl(list(spans.get_finished_spans()), path)
    request = encode_logs(list(logs.get_finished_logs()))
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(json_format.MessageToDict(request)) + "\n")
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app's spans and log records in one OTLP/JSON-lines file."""
    return record_events(tmp_path_factory.mktemp("events") / "genai_events.jsonl")


def test_chat_span_has_no_content_the_event_has_it(recorded: Path) -> None:
    """The recording is what the test claims: content only in the correlated log records."""
    batches = list(read_file(recorded, Problems(strict=True)))
    spans = [s for b in batches for s in b.spans]
    logs = [log for b in batches for log in b.logs]
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 2
    assert all("gen_ai.input.messages" not in s.attributes for s in chats)
    assert {(log.trace_id, log.span_id) for log in logs} == {(s.trace_id, s.span_id) for s in chats}
    assert {log.event_name for log in logs} == {"gen_ai.client.inference.operation.details"}


def test_offline_contexts_come_from_the_correlated_event(recorded: Path) -> None:
    """Through the offline pipeline the turn's contexts are the event's system messages."""
    turns = list(iter_turns([recorded], Problems(strict=True), TurnCounts()))
    assert [(t.query, t.context_texts, t.answer) for t in turns] == [
        (q, expected_texts(q), ANSWER) for q in QUESTIONS
    ]
    batches = list(read_file(recorded, Problems(strict=True)))
    spans = [s for b in batches for s in b.spans]
    assert all(t.contexts == () for t in turns_from_spans(spans)), "without events: no text"
    logs = [log for b in batches for log in b.logs]
    report = explain_traces(spans, logs)[0]
    (turn,) = report.turns
    assert [c.origin for c in turn.contexts] == [
        "genai: gen_ai.input.messages (event gen_ai.client.inference.operation.details)"
    ]
