"""The turn-root rule (docs/assembly.md, "Turns"): which spans of a trace are turns.

A *context source* is a retriever, a tool call, or a plain step whose output holds documents. A
*candidate* is a plain step (not a retriever, reranker, tool, model or embedding call) with an
input and an answer in its output and a context source below it. It is *answering* when a model
call below it starts after one of its sources ended. Bottom-up:

- a candidate is the turn root of its subtree and absorbs what is below it, unless two or more
  answering turn roots were found below it: then it is a wrapper (a chain that ran RAG twice)
  and those roots are the turns;
- turn roots found inside a tool call are part of the turn that called the tool (a LlamaIndex
  `QueryEngineTool`'s query engine), never turns of their own;
- a trace's outermost span that is no candidate (an HTTP server span, an agent workflow whose
  input and output are object reprs) is a *bare* turn root when model calls and context sources
  outside every other turn answer below it: query and answer then come from its model calls;
- the tops of a trace whose common parent never arrived (an instrumentor that never ended it),
  and that gave no turn alone, are one bare turn under a stand-in for that parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, NamedTuple

from groundwire.assembly._kinds import KIND_GENERATION, KIND_OTHER, KIND_RETRIEVER, KIND_TOOL
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._tree import TraceTree

__all__ = ["MISSING_PARENT_NAME", "TurnRoot", "turn_roots"]

MISSING_PARENT_NAME: Final = "(missing parent span)"
"""The name of the stand-in for a parent span that never arrived."""
_SOURCE_KINDS: Final = frozenset({KIND_RETRIEVER, KIND_TOOL})
"""Kinds that are always context sources (a plain step is one when it returned documents)."""


class TurnRoot(NamedTuple):
    """A turn's root span, the roots of other turns inside its subtree, and whether the root is
    a stand-in for a parent span that never arrived. (A named tuple: one is made per turn, and
    a frozen dataclass costs several times as much to build.)"""

    record: SpanRecord
    skip: frozenset[str] = frozenset()
    missing: bool = False


@dataclass(slots=True)
class _Summary:
    """What a subtree tells its parent: sources and model calls seen (all of them, and those
    outside every turn found so far: `free_*`), and the turn roots found."""

    sources: int = 0
    first_source_end: int | None = None
    last_generation_start: int | None = None
    free_sources: int = 0
    free_first_source_end: int | None = None
    free_last_generation_start: int | None = None
    roots: list[str] = field(default_factory=list)
    tool_roots: list[str] = field(default_factory=list)

    def answers_freely(self) -> bool:
        """A model call outside every turn starts after a source outside every turn ended."""
        return (
            self.free_sources > 0
            and self.free_first_source_end is not None
            and self.free_last_generation_start is not None
            and self.free_last_generation_start >= self.free_first_source_end
        )


def turn_roots(tree: TraceTree, reader: SpanReader, top: str | None = None) -> list[TurnRoot]:
    """The turn roots under `top` (a span id), or in the whole trace when `top` is None.

    For the whole trace, tops that name the same missing parent and gave no turn alone are
    tried together under a stand-in parent, which is then added to `tree`.
    """
    tops = tree.tops() if top is None else [top]
    found: list[TurnRoot] = []
    orphans: dict[str, list[tuple[SpanRecord, _Summary]]] = {}
    for span_id in tops:
        roots, summary = _resolve(tree, reader, span_id)
        found.extend(roots)
        record = tree.spans[span_id]
        parent = record.parent_span_id
        if top is None and not roots and parent is not None and parent != span_id:
            orphans.setdefault(parent, []).append((record, summary))
    for parent, group in orphans.items():
        stand_in = _missing_parent(tree, reader, parent, group)
        if stand_in is not None:
            found.append(stand_in)
    return found


_LEAF: Final = _Summary()
"""The summary of every span without children (nothing below it): shared, never changed."""


def _resolve(tree: TraceTree, reader: SpanReader, top: str) -> tuple[list[TurnRoot], _Summary]:
    """Bottom-up pass (iterative, so deep traces cannot exhaust the stack): the spans in
    reverse depth-first order, so each span's children are summarised before it."""
    children, spans = tree.children, tree.spans
    order: list[str] = []
    stack = [top]
    while stack:
        span_id = stack.pop()
        order.append(span_id)
        stack.extend(children.get(span_id, ()))
    summaries: dict[str, _Summary] = {}
    answering: dict[str, bool] = {}
    for span_id in reversed(order):
        below = children.get(span_id)
        if not below:  # a leaf: nothing to fold, and no source below it to make it a candidate
            summaries[span_id] = _LEAF
            continue
        summary = _Summary()
        for child_id in below:
            _merge(reader, summary, spans[child_id], summaries.pop(child_id))
        record = spans[span_id]
        if reader.kind(record) == KIND_TOOL:
            _absorb_into_tool(summary)
        elif summary.sources and _is_candidate(reader, record):
            answering[span_id] = _answering(summary)
            nested = [root for root in summary.roots if answering.get(root, False)]
            if len(nested) >= 2:
                summary.roots = nested
            else:
                _absorb(summary, span_id)
        summaries[span_id] = summary
    summary = summaries[top]
    if summary is _LEAF:
        summary = _Summary()  # handed out: the caller may fold it into a stand-in parent's
    record = spans[top]
    if (
        summary.roots != [top]
        and record.end_time_ns is not None  # an open span may still answer: not finished yet
        and reader.kind(record) == KIND_OTHER
        and summary.answers_freely()
    ):
        others = summary.roots
        _absorb(summary, top)
        bare = TurnRoot(record, frozenset(others))
        return [bare, *(TurnRoot(tree.spans[root]) for root in others)], summary
    roots = summary.roots + summary.tool_roots
    return [TurnRoot(tree.spans[root]) for root in roots], summary


def _missing_parent(
    tree: TraceTree, reader: SpanReader, parent: str, group: list[tuple[SpanRecord, _Summary]]
) -> TurnRoot | None:
    """A bare turn under a stand-in for `parent`, when the group's spans answer together."""
    merged = _Summary()
    for record, summary in group:
        _merge(reader, merged, record, summary)
    if not merged.answers_freely():
        return None
    first = min((record for record, _ in group), key=lambda record: record.start_time_ns)
    ends = [record.end_time_ns for record, _ in group if record.end_time_ns is not None]
    stand_in = SpanRecord(
        trace_id=first.trace_id,
        span_id=parent,
        parent_span_id=None,
        name=MISSING_PARENT_NAME,
        start_time_ns=first.start_time_ns,
        end_time_ns=max(ends) if ends else None,
        attributes={},
        resource=first.resource,
        instrumentation_scope=first.instrumentation_scope,
    )
    members = {record.span_id for record, _ in group}
    skip = frozenset(child for child in tree.children.get(parent, ()) if child not in members)
    tree.add(stand_in)
    return TurnRoot(stand_in, skip, missing=True)


def _merge(reader: SpanReader, into: _Summary, child: SpanRecord, below: _Summary) -> None:
    """Fold a child (itself and its subtree's summary) into its parent's summary."""
    if below is not _LEAF:
        _fold(into, below)
    kind = reader.kind(child)
    if kind in _SOURCE_KINDS or (kind == KIND_OTHER and reader.is_context_source(child)):
        end = child.end_time_ns if child.end_time_ns is not None else child.start_time_ns
        into.sources += 1
        into.first_source_end = _min(into.first_source_end, end)
        if child.span_id not in below.roots:
            into.free_sources += 1
            into.free_first_source_end = _min(into.free_first_source_end, end)
    elif kind == KIND_GENERATION:
        into.last_generation_start = _max(into.last_generation_start, child.start_time_ns)
        into.free_last_generation_start = _max(into.free_last_generation_start, child.start_time_ns)


def _fold(into: _Summary, below: _Summary) -> None:
    """Add what a child's subtree saw to its parent's summary."""
    into.sources += below.sources
    into.first_source_end = _min(into.first_source_end, below.first_source_end)
    into.last_generation_start = _max(into.last_generation_start, below.last_generation_start)
    into.free_sources += below.free_sources
    into.free_first_source_end = _min(into.free_first_source_end, below.free_first_source_end)
    into.free_last_generation_start = _max(
        into.free_last_generation_start, below.free_last_generation_start
    )
    into.roots.extend(below.roots)
    into.tool_roots.extend(below.tool_roots)


def _absorb_into_tool(summary: _Summary) -> None:
    """Turns found inside a tool call belong to the turn that called it: everything below the
    tool is free again, and its roots are kept aside in case no turn encloses the tool."""
    summary.tool_roots.extend(summary.roots)
    summary.roots = []
    summary.free_sources = summary.sources
    summary.free_first_source_end = summary.first_source_end
    summary.free_last_generation_start = summary.last_generation_start


def _absorb(summary: _Summary, span_id: str) -> None:
    """`span_id` is the one turn root of its subtree: nothing below it is free any more."""
    summary.roots = [span_id]
    summary.tool_roots = []
    summary.free_sources = 0
    summary.free_first_source_end = None
    summary.free_last_generation_start = None


def _answering(summary: _Summary) -> bool:
    """A model call in the subtree starts after one of its sources ended."""
    return (
        summary.last_generation_start is not None
        and summary.first_source_end is not None
        and summary.last_generation_start >= summary.first_source_end
    )


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
