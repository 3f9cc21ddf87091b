"""Phoenix's OTLP-shaped spans (`GET /v1/projects/P/spans/otlpv1`) as groundwire `SpanRecord`s.

Phoenix returns each span as an OTLP `Span` in snake_case JSON with every unset field as null
(an attribute value carries all seven `*_value` keys, six of them null), and no resource or scope.
Nulls are dropped and the span goes through the OTLP/JSON reader's own conversion, so ids,
times, status and attribute values are read exactly as from a trace file. The project name
becomes the resource attribute `openinference.project.name`, as the spans were sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from groundwire.assembly import SpanRecord
from groundwire.offline.readers import spans_from_request

__all__ = ["PROJECT_ATTRIBUTE", "span_from_phoenix"]

PROJECT_ATTRIBUTE: Final = "openinference.project.name"
"""The resource attribute naming a span's Phoenix project (OpenInference convention)."""


def _without_nulls(node: Any) -> Any:
    """`node` with every null-valued key of every object removed (recursively)."""
    if isinstance(node, Mapping):
        return {key: _without_nulls(value) for key, value in node.items() if value is not None}
    if isinstance(node, list):
        return [_without_nulls(item) for item in node]
    return node


def span_from_phoenix(span: Any, project: str) -> SpanRecord:
    """One span of Phoenix's OTLP listing as a SpanRecord; ValueError naming the bad field."""
    if not isinstance(span, Mapping):
        raise ValueError(f"expected a span object, got {type(span).__name__}")
    request = {
        "resource_spans": [
            {
                "resource": {
                    "attributes": [{"key": PROJECT_ATTRIBUTE, "value": {"string_value": project}}]
                },
                "scope_spans": [{"spans": [_without_nulls(span)]}],
            }
        ]
    }
    try:
        records = spans_from_request(request)
    except ValueError as error:
        message = str(error)
        # The wrapper's position says nothing to the user: keep only the field's own message.
        prefix = "resourceSpans[0].scopeSpans[0].spans[0]: "
        raise ValueError(message.removeprefix(prefix)) from None
    if not records:
        raise ValueError("the span could not be read")
    return records[0]
