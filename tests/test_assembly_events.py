"""Message content carried in log-based events is put back on its span (docs/assembly.md,
"Content in log-based events"), from hand-built records and log records.
"""

from __future__ import annotations

import json
from typing import Any

from groundwire.assembly import turns_from_spans
from groundwire.assembly._events import CONTENT_EVENT_KEY, has_content, with_event_content
from groundwire.assembly._log_record import LogRecordData
from tests.assembly_records import OP, TRACE, oi, oi_docs, record, sid

DETAILS = "gen_ai.client.inference.operation.details"


def _log(
    span: int | None = 1,
    *,
    event: str | None = DETAILS,
    time: int = 0,
    trace: str | None = TRACE,
    attributes: dict[str, Any] | None = None,
    body: Any = None,
) -> LogRecordData:
    return LogRecordData(
        event_name=event,
        trace_id=trace,
        span_id=sid(span) if span is not None else None,
        time_ns=time,
        attributes=attributes or {},
        body=body,
    )


def _parts(role: str, text: str) -> list[dict[str, Any]]:
    return [{"role": role, "parts": [{"type": "text", "content": text}]}]


def test_has_content_needs_a_span_and_message_content() -> None:
    """Correlated records with content attributes, content body keys or message events only."""
    key = "gen_ai.input.messages"
    assert has_content(_log(attributes={key: "[]"}))
    assert has_content(_log(body={"gen_ai.system_instructions": "[]"}))
    assert has_content(_log(body={"gen_ai.output.messages": "[]"}))
    assert has_content(_log(event="gen_ai.user.message"))
    assert has_content(_log(event="gen_ai.tool.message"))
    assert has_content(_log(event="gen_ai.choice"))
    assert not has_content(_log(event="gen_ai.evaluation.result"))
    assert not has_content(_log(body="gen_ai.input.messages"))
    assert not has_content(_log(span=None, attributes={key: "[]"}))
    assert not has_content(_log(trace=None, attributes={key: "[]"}))
    assert not has_content(_log(span=None, event="gen_ai.choice"))


def test_details_event_fills_only_what_the_span_lacks() -> None:
    """Attributes (then body keys) of the earliest event win; the span's own attributes stay."""
    span = record(1, attributes={"gen_ai.input.messages": "own"})
    later = _log(time=5, attributes={"gen_ai.output.messages": "late"})
    earlier = _log(
        time=1,
        attributes={"gen_ai.input.messages": "event input", "gen_ai.output.messages": "early"},
        body={"gen_ai.system_instructions": "from body", "gen_ai.output.messages": "body"},
    )
    (out,) = with_event_content([span], [later, earlier])
    assert dict(out.attributes) == {
        "gen_ai.input.messages": "own",
        "gen_ai.output.messages": "early",
        "gen_ai.system_instructions": "from body",
        CONTENT_EVENT_KEY: DETAILS,
    }
    (unchanged,) = with_event_content([span], [_log(attributes={"gen_ai.input.messages": "x"})])
    assert unchanged is span


def test_per_message_events_become_message_lists() -> None:
    """System/user/assistant/tool events give input messages, `gen_ai.choice` output messages."""
    logs = [
        _log(event="gen_ai.choice", time=9, body={"message": {"content": "answer"}}),
        _log(event="gen_ai.system.message", time=1, body={"content": "sys"}),
        _log(
            event="gen_ai.user.message",
            time=2,
            body={"content": [{"text": "q1"}, {"content": "q2"}]},
        ),
        _log(event="gen_ai.assistant.message", time=3, body="plain string"),
        _log(event="gen_ai.tool.message", time=4, body={"content": []}),
        _log(event="gen_ai.user.message", time=5, body={"content": 7}),
        _log(event="gen_ai.choice", time=10, body="not a mapping"),
        _log(event="gen_ai.choice", time=11, body={"message": {"content": None}}),
    ]
    (out,) = with_event_content([record(1)], logs)
    assert json.loads(out.attributes["gen_ai.input.messages"]) == [
        *_parts("system", "sys"),
        *_parts("user", "q1q2"),
        *_parts("assistant", "plain string"),
    ]
    assert json.loads(out.attributes["gen_ai.output.messages"]) == _parts("assistant", "answer")
    assert out.attributes[CONTENT_EVENT_KEY] == "gen_ai.system.message"


def test_details_event_wins_over_per_message_events() -> None:
    """A details event's message list is kept over lists built from per-message events."""
    logs = [
        _log(event="gen_ai.user.message", time=1, body={"content": "from event"}),
        _log(event="gen_ai.choice", time=2, body={"message": {"content": "choice"}}),
        _log(
            time=3,
            attributes={
                "gen_ai.input.messages": "details in",
                "gen_ai.output.messages": "details out",
            },
        ),
    ]
    (out,) = with_event_content([record(1)], logs)
    assert out.attributes["gen_ai.input.messages"] == "details in"
    assert out.attributes["gen_ai.output.messages"] == "details out"


def test_events_reach_only_their_own_span() -> None:
    """Correlation is by (trace id, span id); uncorrelated or other spans' records are ignored."""
    logs = [
        _log(span=2, event="gen_ai.user.message", body={"content": "for two"}),
        _log(span=1, trace="cd" * 16, event="gen_ai.user.message", body={"content": "other trace"}),
        _log(
            span=1,
            event="gen_ai.evaluation.result",
            attributes={"gen_ai.evaluation.score.value": 1},
        ),
    ]
    one, two = with_event_content([record(1), record(2, 1)], logs)
    assert CONTENT_EVENT_KEY not in one.attributes
    assert json.loads(two.attributes["gen_ai.input.messages"]) == _parts("user", "for two")
    assert with_event_content(iter([record(1)]), [_log(event=None)]) == [record(1)]


def test_turn_from_a_chat_whose_messages_are_events() -> None:
    """`turns_from_spans(logs=...)`: a GenAI root whose output came as a choice event."""
    records = [
        record(1, start=0, end=100, attributes={"input.value": "q"}),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=30, end=40, attributes={OP: "chat"}),
    ]
    logs = [_log(span=1, event="gen_ai.choice", body={"message": {"content": "the answer"}})]
    assert turns_from_spans(records) == []
    (turn,) = turns_from_spans(records, logs=logs)
    assert (turn.query, turn.context_texts, turn.answer) == ("q", ["d"], "the answer")


def test_unnamed_details_record_marks_the_span_with_an_empty_name() -> None:
    """A correlated record without an event name still fills content; the mark is empty."""
    (out,) = with_event_content(
        [record(1)], [_log(event=None, attributes={"gen_ai.input.messages": "m"})]
    )
    assert out.attributes[CONTENT_EVENT_KEY] == ""
    assert out.attributes["gen_ai.input.messages"] == "m"
