"""Hand-built `SpanRecord`s for the fast assembly tests (the shape every reader produces)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundwire.assembly import SpanRecord

TRACE = "ab" * 16
"""The trace id `record` uses unless told otherwise."""


def sid(number: int) -> str:
    """Span id `number` as 16 hex digits."""
    return format(number, "016x")


def tid(number: int) -> str:
    """Trace id `number` as 32 hex digits."""
    return format(number, "032x")


def record(
    number: int,
    parent: int | None = None,
    *,
    start: int = 0,
    end: int | None = -1,
    trace: str = TRACE,
    name: str | None = None,
    scope: str | None = None,
    resource: dict[str, Any] | None = None,
    remote: bool = False,
    attributes: Mapping[str, Any] | None = None,
) -> SpanRecord:
    """Span `number` under span `parent`; `end=-1` means `start + 1`, `None` an open span."""
    return SpanRecord(
        trace_id=trace,
        span_id=sid(number),
        parent_span_id=sid(parent) if parent is not None else None,
        name=name or f"s{number}",
        start_time_ns=start,
        end_time_ns=start + 1 if end == -1 else end,
        attributes=attributes or {},
        resource=resource or {},
        parent_is_remote=remote,
        instrumentation_scope=scope,
    )


KIND = "openinference.span.kind"
OP = "gen_ai.operation.name"


def oi(kind: str, **attributes: Any) -> dict[str, Any]:
    """OpenInference attributes: a span kind plus dotted keys given as a dict."""
    return {KIND: kind, **attributes}


def oi_docs(*texts: str, prefix: str = "retrieval.documents") -> dict[str, Any]:
    """Flattened OpenInference document contents."""
    return {f"{prefix}.{i}.document.content": text for i, text in enumerate(texts)}


def rag_trace(
    *,
    root: dict[str, Any],
    retriever: dict[str, Any],
    model: dict[str, Any],
    trace: str = TRACE,
    base: int = 1,
    start: int = 0,
    scope: str | None = None,
    resource: dict[str, Any] | None = None,
) -> list[SpanRecord]:
    """Root (0..100) > retriever (10..20) > model call (30..40), with the given attributes."""
    return [
        record(
            base,
            start=start,
            end=start + 100,
            trace=trace,
            attributes=root,
            scope=scope,
            resource=resource,
            name="root",
        ),
        record(
            base + 1,
            base,
            start=start + 10,
            end=start + 20,
            trace=trace,
            attributes=retriever,
            scope=scope,
            name="retrieve",
        ),
        record(
            base + 2,
            base,
            start=start + 30,
            end=start + 40,
            trace=trace,
            attributes=model,
            scope=scope,
            name="model",
        ),
    ]
