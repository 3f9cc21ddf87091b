"""A service that follows only the GenAI conventions (any language's SDK): its requests are turns,
live from the SDK's spans and offline from the OTLP file it exported, with the question, the
passages the model was given (read from the chat span's messages: the retrieval span has ids and
scores only) and the answer. The gateway test is in tests/gateway/test_agent_traces.py."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.assembly import SpanRecord, TurnAssembler, explain_traces, turns_from_spans
from groundwire.offline.readers import Problems, read_file
from tests.agents import genai_service as service
from tests.agents._record import essence, expected
from tests.agents.lc_apps import Truth
from tests.dialects._apps import write_jsonl


def _serve(*variants: dict[str, object]) -> tuple[list[ReadableSpan], list[Truth]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "go-search-api"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("go.opentelemetry.io/contrib/genai")
    truths = [service.ask(tracer, **variant) for variant in variants]  # type: ignore[arg-type]
    provider.shutdown()
    return list(exporter.get_finished_spans()), truths


def test_each_request_is_a_turn_rooted_at_its_server_span() -> None:
    """Two requests (one without the query text on its retrieval): two turns, each with the
    question, the system message's passages in order and the answer; rooted at POST /ask."""
    other = {
        "question": "When was it completed?",
        "passages": ("It was completed in 1889.",),
        "answer": "In 1889.",
        "query_text": False,
    }
    spans, truths = _serve({}, other)
    turns = turns_from_spans(spans)
    assert [essence(turn) for turn in turns] == [expected(truth) for truth in truths]
    servers = {format(s.context.span_id, "016x") for s in spans if s.name == "POST /ask"}  # type: ignore[union-attr]
    assert {turn.span_id for turn in turns} == servers
    assert turns[0].attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert all(
        c.metadata["groundwire.context.source"] == "genai: gen_ai.input.messages"
        for turn in turns
        for c in turn.contexts
    )


def test_offline_file_and_live_assembler_give_the_same_turns(tmp_path: Path) -> None:
    """The OTLP/JSON file the service exported and the live assembler agree with the SDK spans."""
    spans, truths = _serve({}, {"question": "Again?", "answer": "Yes."})
    path = write_jsonl(spans, tmp_path / "genai.jsonl")
    records = [s for batch in read_file(path, Problems(strict=True)) for s in batch.spans]
    assert turns_from_spans(records) == turns_from_spans(spans)
    assembler = TurnAssembler()
    live = [t for s in spans for t in assembler.add(SpanRecord.from_readable(s))]
    assert [essence(t) for t in live] == [expected(truth) for truth in truths]


def test_inspect_says_where_each_part_was_read() -> None:
    """The question from the retrieval (or the chat's user message), the passages and the answer
    from the chat span (the server span records neither)."""
    spans, _ = _serve({}, {"query_text": False})
    first, second = (report.turns[0] for report in explain_traces(spans))
    assert first.query is not None and first.query.span_name == "retrieval kb"
    assert second.query is not None and second.query.span_name == "chat gpt-4o-mini"
    assert second.query.origin == "genai: gen_ai.input.messages"
    assert [c.span_name for c in first.contexts] == ["chat gpt-4o-mini"]
    assert first.answer is not None and first.answer.span_name == "chat gpt-4o-mini"


def test_agent_shaped_service_takes_the_tool_result_as_context() -> None:
    """A GenAI-only agent (chat asking for a tool, execute_tool with its result, final chat): one
    turn at the server span, the question from the first chat, the tool's result, the answer."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ts-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    truth = service.ask_agent(provider.get_tracer("genai"))
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    (turn,) = turns_from_spans(spans)
    assert essence(turn) == expected(truth)
    (report,) = explain_traces(spans)
    assert [c.origin for c in report.turns[0].contexts] == ["genai: gen_ai.tool.call.result"]
