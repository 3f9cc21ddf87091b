"""What online evaluation wrote to the OTLP/JSON-lines trace file: turn spans and their scores.

A score travels as a `gen_ai.evaluation.result` span event, as a log record of that event name
(`eventName`, or the `event.name` attribute of older SDKs), or both; a result is counted once per
trace and evaluator, wherever it was found.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from groundwire import semconv
from groundwire.offline.readers import any_value

__all__ = ["OnlineResults", "read_online_results"]


@dataclass(slots=True)
class OnlineResults:
    """Spans in the file and the evaluation results on them, by trace id."""

    spans: int = 0
    results: int = 0
    """Distinct results (trace id, evaluator), from span events and log records together."""
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """trace id (hex) -> evaluator name -> score value (None when not applicable or skipped)."""
    from_events: int = 0
    """Results found as span events."""
    from_logs: int = 0
    """Results found as log records."""

    def add(self, trace_id: str, attributes: Mapping[str, Any]) -> None:
        """Count one result (its event or log attributes) for `trace_id`."""
        name = str(attributes.get(semconv.GEN_AI_EVALUATION_NAME))
        value = attributes.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)
        trace_scores = self.scores.setdefault(trace_id, {})
        if name not in trace_scores:
            self.results += 1
        trace_scores[name] = float(value) if value is not None else None


def _attributes(pairs: Any) -> dict[str, Any]:
    """OTLP/JSON `KeyValue` pairs as a dict."""
    return {pair["key"]: any_value(pair.get("value") or {}) for pair in pairs or ()}


def _spans(line: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The spans of one decoded OTLP/JSON trace request."""
    for resource_spans in line.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            yield from scope_spans.get("spans", ())


def _log_records(line: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The log records of one decoded OTLP/JSON logs request."""
    for resource_logs in line.get("resourceLogs", ()):
        for scope_logs in resource_logs.get("scopeLogs", ()):
            yield from scope_logs.get("logRecords", ())


def _read_line(found: OnlineResults, line: Mapping[str, Any]) -> None:
    """Count the spans and collect the results of one request of the file."""
    for span in _spans(line):
        found.spans += 1
        for event in span.get("events", ()):
            if event.get("name") == semconv.GEN_AI_EVALUATION_RESULT_EVENT:
                found.from_events += 1
                found.add(str(span.get("traceId", "")), _attributes(event.get("attributes")))
    for record in _log_records(line):
        attributes = _attributes(record.get("attributes"))
        name = record.get("eventName") or attributes.get("event.name")
        if name == semconv.GEN_AI_EVALUATION_RESULT_EVENT:
            found.from_logs += 1
            found.add(str(record.get("traceId", "")), attributes)


def read_online_results(path: str | os.PathLike[str]) -> OnlineResults:
    """Count the spans of groundwire's own trace file and collect the scores emitted online."""
    found = OnlineResults()
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                _read_line(found, json.loads(line))
    return found
