"""`SpanRecord.from_readable` on SDK spans of every shape, and `SpanReader` on live documents."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext

from groundwire import Context
from groundwire.assembly import SpanRecord
from groundwire.assembly._reader import SpanReader
from groundwire.capture import LiveContent, LiveContentStore
from tests.assembly_records import oi, oi_docs, record, sid

_CONTEXT = SpanContext(trace_id=0xAB, span_id=0xCD, is_remote=False)


def test_span_without_context_is_refused_by_name() -> None:
    """A span with no context cannot be keyed: a ValueError naming the span."""
    with pytest.raises(ValueError, match=r"^span 'lost' has no span context$"):
        SpanRecord.from_readable(ReadableSpan("lost"))


def test_unstarted_span_starts_at_zero_without_scope() -> None:
    """No start time reads as 0; no instrumentation scope as None."""
    span = ReadableSpan("s", context=_CONTEXT, resource=Resource.create({"service.name": "x"}))
    converted = SpanRecord.from_readable(span)
    assert (converted.start_time_ns, converted.end_time_ns) == (0, None)
    assert converted.instrumentation_scope is None
    assert converted.resource["service.name"] == "x"
    assert (converted.trace_id, converted.span_id) == (format(0xAB, "032x"), format(0xCD, "016x"))


@pytest.mark.parametrize(
    ("parent", "parent_id", "remote"),
    [
        (None, None, False),
        (SpanContext(trace_id=0xAB, span_id=0x11, is_remote=False), format(0x11, "016x"), False),
        (SpanContext(trace_id=0xAB, span_id=0x11, is_remote=True), format(0x11, "016x"), True),
        (SpanContext(trace_id=0xAB, span_id=0, is_remote=True), None, False),
    ],
)
def test_parent_and_remote_flag(
    parent: SpanContext | None, parent_id: str | None, remote: bool
) -> None:
    """A remote parent makes the span its process's root; an invalid parent id is no parent."""
    span = ReadableSpan(
        "s",
        context=_CONTEXT,
        parent=parent,
        start_time=5,
        end_time=6,
        instrumentation_scope=InstrumentationScope("tracer.name"),
    )
    converted = SpanRecord.from_readable(span)
    assert (converted.parent_span_id, converted.parent_is_remote) == (parent_id, remote)
    assert converted.is_local_root == (parent_id is None or remote)
    assert converted.instrumentation_scope == "tracer.name"


def test_live_documents_are_ranked_by_position() -> None:
    """Documents kept in the live store come back with ranks 0..n-1, whatever they carried."""
    store = LiveContentStore()
    store.enabled = True
    retriever = record(2, 1, attributes=oi("RETRIEVER", **oi_docs("span text")))
    store.put(
        retriever.key,
        LiveContent(documents=(Context(text="a", rank=7), Context(text="b", rank=1))),
    )
    reader = SpanReader(store)
    assert reader.documents(retriever) == [Context(text="a", rank=0), Context(text="b", rank=1)]
    assert reader.origin(retriever, "documents") == "live content"
    assert SpanReader(None).documents(retriever) == [Context(text="span text", rank=0)]


def test_forget_drops_what_was_read_of_an_open_span() -> None:
    """After `forget`, a span read while open is read again (its output may have changed)."""
    reader = SpanReader(None)
    open_root = record(1, end=None, attributes=oi("CHAIN", **{"input.value": "q"}))
    assert reader.answer(open_root) is None
    ended = record(1, attributes=oi("CHAIN", **{"input.value": "q", "output.value": "a"}))
    assert reader.answer(ended) is None
    reader.forget(ended.span_id)
    assert reader.answer(ended) == "a"
    assert reader.origin(ended, "answer") == "openinference: output.value"
    assert reader.origin(ended, "query") is None


def test_values_that_are_not_text_are_skipped_with_a_log(caplog: pytest.LogCaptureFixture) -> None:
    """A number where text belongs, or a stream placeholder, gives way to the next source."""
    reader = SpanReader(None)
    span = record(
        1,
        attributes={
            "input.value": 5,
            "gen_ai.input.messages": '[{"role": "user", "content": "real q"}]',
            "output.value": "<generator object run at 0x1>",
            "gen_ai.output.messages": '[{"role": "assistant", "content": "real a"}]',
        },
    )
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert (reader.query(span), reader.answer(span)) == ("real q", "real a")
    assert not reader.streamed(span)
    messages = [r.getMessage() for r in caplog.records if r.name == "groundwire.assembly"]
    assert messages == [
        f"span {sid(1)}: openinference: input.value is a <class 'int'>, not text; skipped",
        f"span {sid(1)}: openinference: output.value is a stream placeholder",
    ]
    empty = record(2, attributes={"input.value": '{"a": 1, "b": 2}'})
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert reader.query(empty) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"span {sid(2)}: no text found in openinference: input.value"
    ]


def test_stream_placeholder_in_live_output_marks_a_streamed_root() -> None:
    """A live output that is only a placeholder: streamed, the answer comes from the model."""
    store = LiveContentStore()
    store.enabled = True
    root = record(1, start=0, end=100, attributes=oi("CHAIN"))
    store.put(root.key, LiveContent(input="q", output="<async_generator object s at 0x2>"))
    reader = SpanReader(store)
    assert reader.has_input(root)
    assert reader.answer(root) is None
    assert reader.streamed(root)
    plain = record(2, attributes=oi("CHAIN", **{"output.value": '"<generator object x>"'}))
    assert SpanReader(None).streamed(plain)
    assert not SpanReader(None).streamed(record(3, attributes={"output.value": 5}))
    assert not SpanReader(None).streamed(record(4))


def test_streamed_needs_a_placeholder_and_no_answer() -> None:
    """Only a span without an answer whose output is a stream placeholder is streamed."""
    reader = SpanReader(None)
    answered = record(
        1, attributes={"output.value": "a", "gen_ai.output.messages": "<generator object g>"}
    )
    assert not reader.streamed(answered)
    assert not reader.streamed(record(2, attributes={"output.value": "  "}))
    assert not reader.streamed(record(3, attributes={"input.value": "q"}))
    store = LiveContentStore()
    store.enabled = True
    live_root = record(4, attributes={"output.value": "<generator object g>"})
    store.put(live_root.key, LiveContent(output="  "))
    assert not SpanReader(store).streamed(live_root)
    store.put(live_root.key, LiveContent(input="q"))
    assert SpanReader(store).streamed(live_root)
