"""Message content carried as log-based events, put back on the spans they belong to.

With `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY` (or older instrumentations'
per-message events) a model call's messages are not on its span but in log records correlated to
it by trace and span id: `gen_ai.client.inference.operation.details` with `gen_ai.input.messages`,
`gen_ai.output.messages`, `gen_ai.system_instructions` (as attributes, or in a mapping body), and
the older `gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message` and
`gen_ai.choice` events. `with_event_content` copies that content onto the span where the span
itself lacks it (the span's own attributes win), marking the span with `CONTENT_EVENT_KEY`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from groundwire import semconv
from groundwire.assembly._dialects._genai import GEN_AI_SYSTEM_INSTRUCTIONS
from groundwire.assembly._log_record import LogRecordData
from groundwire.assembly._record import SpanRecord

__all__ = ["CONTENT_EVENT_KEY", "has_content", "with_event_content"]

CONTENT_EVENT_KEY: Final = "groundwire.content.event"
"""Set on a span whose message content was taken from a correlated event (the event's name)."""
_CONTENT_KEYS: Final = (
    semconv.GEN_AI_INPUT_MESSAGES,
    semconv.GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
)
_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS: Final = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE_EVENT: Final = "gen_ai.choice"


def has_content(record: LogRecordData) -> bool:
    """True for a log record that carries message content for a span."""
    if record.span_id is None or record.trace_id is None:
        return False
    if record.event_name in _MESSAGE_EVENTS or record.event_name == _CHOICE_EVENT:
        return True
    body = record.body if isinstance(record.body, Mapping) else {}
    return any(key in record.attributes or key in body for key in _CONTENT_KEYS)


def _text(value: Any) -> str | None:
    """A message event body's text: `content` as a string (or joined text parts)."""
    if isinstance(value, Mapping):
        value = value.get("content")
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [p.get("text") or p.get("content") for p in value if isinstance(p, Mapping)]
        joined = "".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def _content(logs: list[LogRecordData]) -> tuple[dict[str, Any], str]:
    """The content attributes the span's events carry, and the first event's name."""
    found: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    name = ""
    for log in sorted(logs, key=lambda record: record.time_ns):
        name = name or (log.event_name or "")
        body = log.body if isinstance(log.body, Mapping) else {}
        for key in _CONTENT_KEYS:
            value = log.attributes.get(key, body.get(key))
            if value is not None and key not in found:
                found[key] = value
        role = _MESSAGE_EVENTS.get(log.event_name or "")
        if role is not None and (text := _text(log.body)) is not None:
            inputs.append({"role": role, "parts": [{"type": "text", "content": text}]})
        elif log.event_name == _CHOICE_EVENT and isinstance(log.body, Mapping):
            text = _text(log.body.get("message"))
            if text is not None:
                outputs.append({"role": "assistant", "parts": [{"type": "text", "content": text}]})
    if inputs and semconv.GEN_AI_INPUT_MESSAGES not in found:
        found[semconv.GEN_AI_INPUT_MESSAGES] = json.dumps(inputs)
    if outputs and semconv.GEN_AI_OUTPUT_MESSAGES not in found:
        found[semconv.GEN_AI_OUTPUT_MESSAGES] = json.dumps(outputs)
    return found, name


def with_event_content(
    spans: Iterable[SpanRecord], logs: Iterable[LogRecordData]
) -> list[SpanRecord]:
    """`spans`, each given the message content of its correlated events where it lacks it."""
    by_span: dict[tuple[str, str], list[LogRecordData]] = {}
    for log in logs:
        if has_content(log):
            by_span.setdefault((log.trace_id or "", log.span_id or ""), []).append(log)
    records = list(spans)
    if not by_span:
        return records
    out: list[SpanRecord] = []
    for record in records:
        events = by_span.get((record.trace_id, record.span_id))
        if events:
            content, name = _content(events)
            missing = {k: v for k, v in content.items() if k not in record.attributes}
            if missing:
                attributes = {**record.attributes, **missing, CONTENT_EVENT_KEY: name}
                record = _replace_attributes(record, attributes)
        out.append(record)
    return out


def _replace_attributes(record: SpanRecord, attributes: Mapping[str, Any]) -> SpanRecord:
    """A copy of `record` with other attributes."""
    import dataclasses

    return dataclasses.replace(record, attributes=attributes)
