"""SpanRecord validation and conversion, and how queries and answers are found in values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode

from groundwire.assembly import SpanRecord, answer_text, decode, query_text, span_kind

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def test_from_readable_normalises_an_ended_span() -> None:
    """Hex ids, parent, times, attributes, status, resource and scope come across."""
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    tracer = provider.get_tracer("my.scope")
    with (
        tracer.start_as_current_span("parent") as parent,
        tracer.start_as_current_span(
            "child", attributes={"input.value": "q", "n": (1, 2)}
        ) as child,
    ):
        child.set_status(Status(StatusCode.ERROR))
    record = SpanRecord.from_readable(child)  # type: ignore[arg-type]
    assert record.trace_id == format(child.get_span_context().trace_id, "032x")
    assert record.span_id == format(child.get_span_context().span_id, "016x")
    assert record.parent_span_id == format(parent.get_span_context().span_id, "016x")
    assert (record.name, record.status_code, record.instrumentation_scope) == (
        "child",
        "ERROR",
        "my.scope",
    )
    assert dict(record.attributes) == {"input.value": "q", "n": (1, 2)}
    assert record.resource["service.name"] == "svc"
    assert record.end_time_ns is not None and record.end_time_ns >= record.start_time_ns
    assert not record.is_local_root and not record.parent_is_remote


def test_from_readable_accepts_an_open_span() -> None:
    """A span that has not ended converts with `end_time_ns` None."""
    span = TracerProvider().get_tracer("t").start_span("open")
    record = SpanRecord.from_readable(span)  # type: ignore[arg-type]
    assert record.is_open and record.is_local_root
    span.end()


def test_record_attributes_cannot_be_changed() -> None:
    """Converted attributes are a read-only view, so a record cannot drift after assembly."""
    span = TracerProvider().get_tracer("t").start_span("s", attributes={"a": 1})
    record = SpanRecord.from_readable(span)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        record.attributes["a"] = 2  # type: ignore[index]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("trace_id", "XYZ", "trace_id must be 32 lower-case hex"),
        ("span_id", "B7AD6B7169203331", "span_id must be 16 lower-case hex"),
        ("parent_span_id", "123", "parent_span_id must be 16"),
        ("status_code", "FAILED", "status_code must be one of"),
        ("start_time_ns", 1.5, "start_time_ns must be an int"),
        ("end_time_ns", "2", "end_time_ns must be an int or None"),
        ("attributes", [("a", 1)], "attributes must be a mapping"),
    ],
)
def test_bad_records_fail_naming_the_field(field: str, value: Any, message: str) -> None:
    """Each invalid field is refused with a message naming it and the bad value."""
    fields: dict[str, Any] = {
        "trace_id": TRACE,
        "span_id": SPAN,
        "parent_span_id": None,
        "name": "s",
        "start_time_ns": 1,
        "end_time_ns": 2,
    }
    fields[field] = value
    with pytest.raises((ValueError, TypeError), match=message):
        SpanRecord(**fields)


def test_record_hash_is_its_ids() -> None:
    """Records hash by (trace_id, span_id) and expose the live-content key."""
    record = SpanRecord(TRACE, SPAN, None, "s", 1, None, {"a": 1})
    assert hash(record) == hash((TRACE, SPAN))
    assert record.key == (int(TRACE, 16), int(SPAN, 16))


@pytest.mark.parametrize(
    ("attributes", "kind"),
    [
        ({"openinference.span.kind": "RETRIEVER"}, "retriever"),
        ({"openinference.span.kind": "reranker"}, "reranker"),
        ({"openinference.span.kind": "LLM", "gen_ai.operation.name": "retrieval"}, "generation"),
        ({"openinference.span.kind": "CHAIN", "gen_ai.operation.name": "chat"}, "other"),
        ({"gen_ai.operation.name": "retrieval"}, "retriever"),
        ({"gen_ai.operation.name": "text_completion"}, "generation"),
        ({"gen_ai.operation.name": "embeddings"}, "embedding"),
        ({}, "other"),
    ],
)
def test_span_kind_prefers_openinference(attributes: dict[str, Any], kind: str) -> None:
    """OpenInference's kind wins over the GenAI operation name; neither means 'other'."""
    assert span_kind(SpanRecord(TRACE, SPAN, None, "s", 1, 2, attributes)) == kind


@pytest.mark.parametrize(
    ("value", "mime", "expected"),
    [
        ("plain question?", None, "plain question?"),
        ('{"question": "q", "chat_history": []}', "application/json", "q"),
        ('{"query": "q"}', None, "q"),
        ('{"input": "q", "k": 3}', None, "q"),
        ('{"topic": "q", "k": 3}', None, "q"),
        ('{"query_bundle": {"query_str": "q", "image_path": null}}', None, "q"),
        ('"q"', "application/json", "q"),
        ('{"question": "not parsed"}', "text/plain", '{"question": "not parsed"}'),
        ('{"messages": [{"role": "user", "content": "q"}]}', None, "q"),
        (
            json.dumps(
                [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": [{"type": "text", "text": "q"}]},
                    {"role": "assistant", "content": "earlier"},
                ]
            ),
            None,
            "q",
        ),
        (
            json.dumps([{"role": "user", "parts": [{"type": "text", "content": "q"}]}]),
            None,
            "q",
        ),
        ('{"a": 1, "b": 2}', "application/json", None),
        ('{"x": "one", "y": "two"}', None, None),
        ("   ", None, None),
        ("[1, 2]", None, None),
    ],
)
def test_query_extraction(value: str, mime: str | None, expected: str | None) -> None:
    """Where the question is found in text and the common JSON input shapes."""
    assert query_text(decode(value, mime)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Paris.", "Paris."),
        ('{"answer": "a", "sources": ["x"]}', "a"),
        ('{"output": "a", "intermediate_steps": []}', "a"),
        ('{"response": "a", "source_nodes": ["n"]}', "a"),
        ('{"query_satisfied": true, "answer": "a"}', "a"),
        ('{"content": "a", "type": "ai", "tool_calls": []}', "a"),
        ('{"type": "ai", "data": {"content": "a", "type": "ai"}}', "a"),
        ('{"generations": [[{"text": "a", "type": "ChatGeneration"}]]}', "a"),
        (
            json.dumps(
                {
                    "lc": 1,
                    "type": "constructor",
                    "id": ["x", "AIMessage"],
                    "kwargs": {"content": "a"},
                }
            ),
            "a",
        ),
        (
            json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": [{"type": "text", "content": "a"}],
                        "finish_reason": "stop",
                    }
                ]
            ),
            "a",
        ),
        (
            '{"messages": [{"role": "user", "content": "q"}, {"role": "ai", "content": "a"}]}',
            "a",
        ),
        ('{"context": "c", "question": "q"}', None),
        ("{broken", "{broken"),
    ],
)
def test_answer_extraction(value: str, expected: str | None) -> None:
    """Where the answer is found in text and the common JSON output shapes."""
    assert answer_text(decode(value)) == expected


def test_deeply_nested_values_stop_without_error() -> None:
    """Pathologically nested JSON gives None, not a recursion error."""
    value: Any = "q"
    for _ in range(200):
        value = {"wrapper": value}
    assert query_text(value) is None
