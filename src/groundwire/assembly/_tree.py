"""The spans of one trace as a tree: indexed by id and by parent, split, walked.

The turn-root rule that reads this tree is in `_roots`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from groundwire.assembly._kinds import KIND_GENERATION
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._record import SpanRecord

__all__ = ["TraceTree"]


class TraceTree:
    """The spans of one trace, indexed by id and by parent. Spans are unique by span id."""

    def __init__(self, records: Iterable[SpanRecord] = ()) -> None:
        """Index `records` (later duplicates of a span id replace earlier ones)."""
        self.spans: dict[str, SpanRecord] = {}
        self.children: dict[str, list[str]] = {}
        for record in records:
            self.add(record)

    def add(self, record: SpanRecord) -> None:
        """Add (or replace, e.g. an open span by its ended self) one span."""
        previous = self.spans.get(record.span_id)
        self.spans[record.span_id] = record
        if previous is not None and previous.parent_span_id == record.parent_span_id:
            return
        if previous is not None and previous.parent_span_id is not None:
            siblings = self.children.get(previous.parent_span_id, [])
            if record.span_id in siblings:
                siblings.remove(record.span_id)
        parent = record.parent_span_id
        if parent is not None and parent != record.span_id:
            self.children.setdefault(parent, []).append(record.span_id)

    def split(self, span_id: str) -> TraceTree:
        """Move the subtree under `span_id` out into a tree of its own."""
        moved = list(self.subtree(span_id))
        for record in moved:
            del self.spans[record.span_id]
            self.children.pop(record.span_id, None)
        parent = moved[0].parent_span_id if moved else None
        if parent is not None and parent in self.children:
            siblings = self.children[parent]
            if span_id in siblings:
                siblings.remove(span_id)
            if not siblings:
                del self.children[parent]
        return TraceTree(moved)

    def __len__(self) -> int:
        """The number of spans held."""
        return len(self.spans)

    def tops(self) -> list[str]:
        """Spans whose parent is not in the tree, by start time."""
        tops = [
            record
            for record in self.spans.values()
            if record.parent_span_id is None
            or record.parent_span_id == record.span_id
            or record.parent_span_id not in self.spans
        ]
        tops.sort(key=lambda record: record.start_time_ns)
        return [record.span_id for record in tops]

    def subtree(self, span_id: str, skip: frozenset[str] = frozenset()) -> Iterator[SpanRecord]:
        """The span and all its descendants, parents before children, less the `skip` subtrees."""
        stack = [span_id]
        while stack:
            current = stack.pop()
            record = self.spans.get(current)
            if record is None:
                continue
            yield record
            stack.extend(
                child for child in reversed(self.children.get(current, ())) if child not in skip
            )

    def answering(self, reader: SpanReader, span_id: str) -> bool:
        """True when a model call under `span_id` starts after one of its context sources ended
        (a retriever, a tool call, a step that returned documents)."""
        first_retriever_end: int | None = None
        last_generation_start: int | None = None
        for record in self.subtree(span_id):
            if record.span_id == span_id:
                continue
            kind = reader.kind(record)
            if reader.is_context_source(record):
                end = record.end_time_ns if record.end_time_ns is not None else record.start_time_ns
                first_retriever_end = _min(first_retriever_end, end)
            elif kind == KIND_GENERATION:
                last_generation_start = _max(last_generation_start, record.start_time_ns)
        return (
            first_retriever_end is not None
            and last_generation_start is not None
            and last_generation_start >= first_retriever_end
        )


def _min(a: int | None, b: int | None) -> int | None:
    """The smaller of two optional ints."""
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    """The larger of two optional ints."""
    return b if a is None else a if b is None else max(a, b)
