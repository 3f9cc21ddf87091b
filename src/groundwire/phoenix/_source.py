"""A project's spans, page by page, as the `SpanBatch`es the offline pipeline reassembles.

One batch per page of `GET /v1/projects/P/spans/otlpv1`. Phoenix lists the newest spans first
(a trace's root, stored last, comes before its children), so the reassembly window's `grace`
counts pages here. A span that cannot be converted is reported (page, position, span id) and
skipped; the rest of its page is kept. With `root_attributes`, a first pass lists the matching
root spans and the second fetches their traces whole (a filter on every span would cut traces).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from groundwire.assembly import SpanRecord
from groundwire.offline.readers import MALFORMED, Problems, SpanBatch
from groundwire.phoenix._client import PhoenixClient, SpanPage
from groundwire.phoenix._spans import span_from_phoenix
from groundwire.phoenix._url import PhoenixTarget

__all__ = ["PhoenixQuery", "phoenix_batches"]

_TRACES_PER_REQUEST = 50
"""Trace ids per request in the second pass of a root-attribute filter (keeps URLs short)."""


@dataclass(frozen=True, slots=True)
class PhoenixQuery:
    """Which spans of the project to read: time range and filters (all optional)."""

    start_time: str | None = None
    """Inclusive lower bound on span start, ISO 8601 (e.g. `2026-11-24T00:00:00Z`)."""
    end_time: str | None = None
    """Exclusive upper bound, ISO 8601."""
    trace_ids: Sequence[str] = ()
    """Only these traces (32 hex digits each)."""
    root_attributes: Sequence[str] = ()
    """`key:value` filters (Phoenix's `attribute` syntax) that a trace's root span must match."""
    page_size: int = 1000
    """Spans per request (Phoenix allows at most 1000)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Further query parameters of the span listing, passed as they are."""

    def __post_init__(self) -> None:
        """Validate the page size (Phoenix rejects more than 1000)."""
        size = self.page_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 1000:
            raise ValueError(f"page_size must be an int from 1 to 1000, got {size!r}")


def _pages(client: PhoenixClient, project: str, query: PhoenixQuery) -> Iterator[SpanPage]:
    """The pages to read: the whole (time-bounded) listing, or the filtered roots' traces."""
    extra: dict[str, Any] = dict(query.extra)
    if query.trace_ids:
        extra["trace_id"] = list(query.trace_ids)
    bounds = {"start_time": query.start_time, "end_time": query.end_time}
    if not query.root_attributes:
        yield from client.span_pages(project, page_size=query.page_size, extra=extra, **bounds)
        return
    roots = {**extra, "parent_id": "null", "attribute": list(query.root_attributes)}
    wanted: list[str] = []
    for page in client.span_pages(project, page_size=query.page_size, extra=roots, **bounds):
        for span in page.spans:
            trace_id = span.get("trace_id") if isinstance(span, Mapping) else None
            if isinstance(trace_id, str) and trace_id not in wanted:
                wanted.append(trace_id)
    number = 0
    for start in range(0, len(wanted), _TRACES_PER_REQUEST):
        group = {**dict(query.extra), "trace_id": wanted[start : start + _TRACES_PER_REQUEST]}
        for page in client.span_pages(project, page_size=query.page_size, extra=group):
            number += 1
            yield SpanPage(page.spans, page.next_cursor, number)


def phoenix_batches(
    client: PhoenixClient,
    target: PhoenixTarget,
    problems: Problems,
    query: PhoenixQuery | None = None,
) -> Iterator[SpanBatch]:
    """Every span of the project (within `query`) as one `SpanBatch` per page.

    Raises `PhoenixError` when Phoenix cannot be reached or the project does not exist; a span
    that cannot be read goes to `problems` (skipped, or `BadRecordError` when strict).
    """
    stats = problems.stats
    stats.files += 1
    for page in _pages(client, target.project, query or PhoenixQuery()):
        stats.records += 1
        where = f"{target} page {page.number}"
        records: list[SpanRecord] = []
        for index, span in enumerate(page.spans):
            try:
                records.append(span_from_phoenix(span, target.project))
            except MALFORMED as error:
                span_id = span.get("span_id") if isinstance(span, Mapping) else None
                label = f" (span_id {span_id})" if isinstance(span_id, str) else ""
                problems.report(f"{where} span {index}{label}", f"not a valid span: {error}")
        stats.spans += len(records)
        yield SpanBatch(records, where)
