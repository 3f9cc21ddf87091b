"""The spans of one trace as a tree, and the turn-root rule (docs/assembly.md, "Turns").

A *candidate* is a span that is not itself a retriever, reranker, model or embedding call, has an
input and an answer in its output, and has a retriever descendant. It is *answering* when a model
call in its subtree starts after one of its retrievers ended. Bottom-up, a candidate is the turn
root of its subtree, unless two or more answering turn roots were found below it: then it is a
wrapper (an agent that ran RAG twice) and those roots are the turns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from groundwire.assembly._reader import (
    KIND_GENERATION,
    KIND_OTHER,
    KIND_RETRIEVER,
    SpanReader,
)
from groundwire.assembly._record import SpanRecord

__all__ = ["TraceTree"]


@dataclass(slots=True)
class _Summary:
    """What a subtree tells its parent: retrievers and model calls seen, turn roots found."""

    retrievers: int = 0
    first_retriever_end: int | None = None
    last_generation_start: int | None = None
    roots: list[str] = field(default_factory=list)


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

    def subtree(self, span_id: str) -> Iterator[SpanRecord]:
        """The span and all its descendants, parents before children."""
        stack = [span_id]
        while stack:
            current = stack.pop()
            record = self.spans.get(current)
            if record is None:
                continue
            yield record
            stack.extend(reversed(self.children.get(current, ())))

    def turn_roots(self, reader: SpanReader, top: str | None = None) -> list[SpanRecord]:
        """The turn roots under `top` (a span id), or in the whole trace when `top` is None."""
        tops = self.tops() if top is None else [top]
        roots: list[str] = []
        for span_id in tops:
            roots.extend(self._resolve(reader, span_id))
        return [self.spans[span_id] for span_id in roots]

    def _resolve(self, reader: SpanReader, top: str) -> list[str]:
        """Bottom-up pass (iterative, so deep traces cannot exhaust the stack)."""
        summaries: dict[str, _Summary] = {}
        answering: dict[str, bool] = {}
        stack: list[tuple[str, bool]] = [(top, False)]
        while stack:
            span_id, expanded = stack.pop()
            if not expanded:
                stack.append((span_id, True))
                stack.extend((child, False) for child in self.children.get(span_id, ()))
                continue
            summary = _Summary()
            below: list[str] = []
            for child_id in self.children.get(span_id, ()):
                child_summary = summaries.pop(child_id, None)
                if child_summary is None:
                    continue
                self._merge(reader, summary, self.spans[child_id], child_summary)
                below.extend(child_summary.roots)
            record = self.spans[span_id]
            if summary.retrievers and self._is_candidate(reader, record):
                answering[span_id] = (
                    summary.last_generation_start is not None
                    and summary.first_retriever_end is not None
                    and summary.last_generation_start >= summary.first_retriever_end
                )
                nested = [root for root in below if answering.get(root, False)]
                summary.roots = nested if len(nested) >= 2 else [span_id]
            else:
                summary.roots = below
            summaries[span_id] = summary
        return summaries[top].roots

    def answering(self, reader: SpanReader, span_id: str) -> bool:
        """True when a model call under `span_id` starts after one of its retrievers ended."""
        first_retriever_end: int | None = None
        last_generation_start: int | None = None
        for record in self.subtree(span_id):
            if record.span_id == span_id:
                continue
            kind = reader.kind(record)
            if kind == KIND_RETRIEVER:
                end = record.end_time_ns if record.end_time_ns is not None else record.start_time_ns
                first_retriever_end = _min(first_retriever_end, end)
            elif kind == KIND_GENERATION:
                last_generation_start = _max(last_generation_start, record.start_time_ns)
        return (
            first_retriever_end is not None
            and last_generation_start is not None
            and last_generation_start >= first_retriever_end
        )

    @staticmethod
    def _merge(reader: SpanReader, into: _Summary, child: SpanRecord, below: _Summary) -> None:
        """Fold a child (itself and its subtree's summary) into its parent's summary."""
        into.retrievers += below.retrievers
        into.first_retriever_end = _min(into.first_retriever_end, below.first_retriever_end)
        into.last_generation_start = _max(into.last_generation_start, below.last_generation_start)
        kind = reader.kind(child)
        if kind == KIND_RETRIEVER:
            into.retrievers += 1
            end = child.end_time_ns if child.end_time_ns is not None else child.start_time_ns
            into.first_retriever_end = _min(into.first_retriever_end, end)
        elif kind == KIND_GENERATION:
            into.last_generation_start = _max(into.last_generation_start, child.start_time_ns)

    @staticmethod
    def _is_candidate(reader: SpanReader, record: SpanRecord) -> bool:
        """A plain step with an input, an answer (or stream placeholder) in its output."""
        return (
            reader.kind(record) == KIND_OTHER
            and reader.has_input(record)
            and (reader.answer(record) is not None or reader.streamed(record))
        )


def _min(a: int | None, b: int | None) -> int | None:
    """The smaller of two optional ints."""
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    """The larger of two optional ints."""
    return b if a is None else a if b is None else max(a, b)
