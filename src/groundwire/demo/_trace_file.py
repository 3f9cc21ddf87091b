"""What online evaluation wrote to the OTLP/JSON-lines trace file: turn spans and score events."""

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
    """Spans in the file and the `gen_ai.evaluation.result` events on them, by trace id."""

    spans: int = 0
    results: int = 0
    scores: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """trace id (hex) -> evaluator name -> score value (None when not applicable or skipped)."""


def _attributes(pairs: Any) -> dict[str, Any]:
    """OTLP/JSON `KeyValue` pairs as a dict."""
    return {pair["key"]: any_value(pair.get("value") or {}) for pair in pairs or ()}


def _spans(line: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The spans of one decoded OTLP/JSON trace request."""
    for resource_spans in line.get("resourceSpans", ()):
        for scope_spans in resource_spans.get("scopeSpans", ()):
            yield from scope_spans.get("spans", ())


def read_online_results(path: str | os.PathLike[str]) -> OnlineResults:
    """Count the spans of groundwire's own trace file and collect the scores emitted online."""
    found = OnlineResults()
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            for span in _spans(json.loads(line)):
                found.spans += 1
                for event in span.get("events", ()):
                    if event.get("name") != semconv.GEN_AI_EVALUATION_RESULT_EVENT:
                        continue
                    values = _attributes(event.get("attributes"))
                    name = values.get(semconv.GEN_AI_EVALUATION_NAME)
                    value = values.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE)
                    trace_scores = found.scores.setdefault(str(span.get("traceId", "")), {})
                    trace_scores[str(name)] = float(value) if value is not None else None
                    found.results += 1
    return found
