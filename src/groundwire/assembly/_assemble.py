"""`turns_from_spans` (a finished set of spans) and `TurnAssembler` (spans as they end, live).

Both group spans by trace, apply the same turn-root rule (`_roots.turn_roots`) and build turns
with the same reader, so live scoring and offline re-scoring see the same turns.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from groundwire._types import RagTurn
from groundwire.assembly._build import build_turn, origin_rank
from groundwire.assembly._diagnose import Diagnoses
from groundwire.assembly._dialects import OUTPUT_KEYS, OUTPUT_PREFIXES
from groundwire.assembly._duplicates import DuplicateFilter, drop_duplicates
from groundwire.assembly._events import with_event_content
from groundwire.assembly._kinds import KIND_OTHER
from groundwire.assembly._log_record import LogRecordData
from groundwire.assembly._pass import assemble_tree, record_of
from groundwire.assembly._reader import SpanReader, span_kind
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._roots import turn_roots
from groundwire.assembly._tree import TraceTree
from groundwire.capture import LiveContentStore

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["TurnAssembler", "turns_from_spans"]

logger = logging.getLogger("groundwire.assembly")

_DIAGNOSE_LIMIT: Final = 100
"""Traces without a turn a `TurnAssembler` explains (only while it has found no turn)."""


def turns_from_spans(
    spans: Iterable[ReadableSpan | SpanRecord],
    *,
    live_content: LiveContentStore | None = None,
    logs: Iterable[LogRecordData] = (),
) -> list[RagTurn]:
    """Every RAG turn in `spans` (SDK `ReadableSpan`s or `SpanRecord`s), by trace then start time.

    Traces with a retriever but no answer yet give no turn. Text hidden on spans is taken from
    `live_content` when given (and removed from it); message content a span lacks is taken from
    its correlated log-based events in `logs`. Never raises on malformed attributes.
    """
    records: Iterable[SpanRecord] = map(record_of, spans)
    if logs:
        records = with_event_content(records, logs)
    trees: dict[str, TraceTree] = {}
    for record in records:
        tree = trees.get(record.trace_id)
        if tree is None:
            tree = trees[record.trace_id] = TraceTree()
        tree.add(record)
    # One reader per trace: it caches by span id, which is unique only within a trace.
    readers: dict[str, SpanReader] = {}
    turns: list[RagTurn] = []
    for trace_id, tree in trees.items():
        reader = readers[trace_id] = SpanReader(live_content)
        turns.extend(assemble_tree(tree, reader))
        if live_content is not None:
            reader.release(iter(tree.spans.values()))
    if len(trees) < 2 or len(turns) < 2:
        return turns
    entries = []
    for turn in turns:
        trace_id = turn.trace_id or ""
        root = trees[trace_id].spans[turn.span_id or ""]
        entries.append((turn, root, origin_rank(readers[trace_id].origin(root, "answer"))))
    return drop_duplicates(entries)


class _Pending:
    """One unfinished trace: its spans so far and the facts already read from them."""

    __slots__ = ("reader", "tree")

    def __init__(self, tree: TraceTree, reader: SpanReader) -> None:
        """Spans and their reader."""
        self.tree = tree
        self.reader = reader


class TurnAssembler:
    """Assembles turns from spans as they end, for a live span processor. Thread-safe.

    `add` each ended span. When a local root ends (no parent, or a remote one) its subtree is
    resolved exactly as `turns_from_spans` would, its turns are returned and its spans released.
    `start` each starting span (optional) to let `turn_for` tell a final root from a nested one.
    Memory is bounded: past `max_traces` pending traces or `max_spans` pending spans the oldest
    traces are evicted and counted in `evicted_traces` / `evicted_spans`: dropped, or, with
    `resolve_evicted=True` (streaming a file whose roots have remote parents), resolved as they
    stand and returned by the `add` that evicted them.
    """

    def __init__(
        self,
        *,
        max_traces: int = 1_000,
        max_spans: int = 50_000,
        live_content: LiveContentStore | None = None,
        resolve_evicted: bool = False,
    ) -> None:
        """Set the pending limits; `live_content` supplies text hidden on spans."""
        for name, value in (("max_traces", max_traces), ("max_spans", max_spans)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"TurnAssembler: {name} must be an int of at least 1, got {value!r}"
                )
        self._max_traces = max_traces
        self._max_spans = max_spans
        self._live = live_content
        self._resolve_evicted = resolve_evicted
        self._lock = threading.Lock()
        self._traces: OrderedDict[str, _Pending] = OrderedDict()
        # Keyed by (trace id, span id): a span id is unique only within its trace.
        self._released: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._open: OrderedDict[tuple[str, str], tuple[str | None, str | None]] = OrderedDict()
        self._span_count = 0
        self._duplicates = DuplicateFilter()
        self._found_turn = False
        self.no_turn = Diagnoses(limit=_DIAGNOSE_LIMIT)
        """Why released traces gave no turn, per family, until the first turn is found."""
        self.evicted_traces = 0
        """Traces evicted because the pending limits were reached."""
        self.evicted_spans = 0
        """Spans evicted with those traces."""
        self.late_spans = 0
        """Spans that ended after their local root had ended (ignored)."""

    @property
    def duplicate_turns(self) -> int:
        """Turns dropped because another instrumentor's trace already gave the same run."""
        return self._duplicates.dropped

    @property
    def pending_traces(self) -> int:
        """Traces whose local root has not ended yet."""
        return len(self._traces)

    @property
    def pending_spans(self) -> int:
        """Ended spans held for those traces."""
        return self._span_count

    def add(self, span: SpanRecord) -> list[RagTurn]:
        """Record an ended span; return the turns its ending completed (usually none)."""
        with self._lock:
            self._open.pop((span.trace_id, span.span_id), None)
            parent = (span.trace_id, span.parent_span_id)
            if not span.is_local_root and parent in self._released:
                self.late_spans += 1
                self._mark_released(span.trace_id, [span.span_id])
                return []
            pending = self._traces.get(span.trace_id)
            if pending is None:
                pending = _Pending(TraceTree(), SpanReader(self._live))
                self._traces[span.trace_id] = pending
            before = len(pending.tree)
            pending.tree.add(span)
            self._span_count += len(pending.tree) - before
            if span.is_local_root:
                ready = [self._release_local_root(pending, span)]
            else:
                ready = self._evict()
        return self._resolve(ready)

    def _release_local_root(self, pending: _Pending, root: SpanRecord) -> _Pending:
        """Take a finished local root's subtree out of its trace (lock held)."""
        released = _Pending(pending.tree.split(root.span_id), pending.reader)
        self._span_count -= len(released.tree)
        if not len(pending.tree):
            del self._traces[root.trace_id]
        self._mark_released(root.trace_id, released.tree.spans)
        return released

    def _resolve(self, released: list[_Pending]) -> list[RagTurn]:
        """Assemble released traces (outside the lock) and drop their live content."""
        turns: list[RagTurn] = []
        for pending in released:
            found = assemble_tree(pending.tree, pending.reader)
            if not found and not self._found_turn and len(pending.tree):
                self._diagnose(pending.tree)
            self._found_turn = self._found_turn or bool(found)
            for turn in found:
                root = pending.tree.spans.get(turn.span_id or "")
                if root is None or self._duplicates.keep(turn, root):
                    turns.append(turn)
            pending.reader.release(iter(pending.tree.spans.values()))
            for span_id in pending.tree.spans:
                pending.reader.forget(span_id)
        return turns

    def _diagnose(self, tree: TraceTree) -> None:
        """Until a first turn is found, say once per trace family why a trace gave none."""
        try:
            family = self.no_turn.add(list(tree.spans.values()))
        except Exception:
            logger.debug("a trace could not be diagnosed", exc_info=True)
            return
        if family is not None:
            logger.warning("groundwire has found no RAG turn yet: %s", family.describe(1))

    def _mark_released(self, trace_id: str, span_ids: Iterable[str]) -> None:
        """Remember released spans so that late children are not kept (lock held, bounded)."""
        for span_id in span_ids:
            self._released[(trace_id, span_id)] = None
        while len(self._released) > self._max_spans:
            self._released.popitem(last=False)

    def turn_for(self, span: SpanRecord) -> RagTurn | None:
        """The turn rooted at `span`, built from its ended descendants, without consuming them.

        For a span that is still open (inline evaluation, just before it ends). Returns None
        unless `span` is a turn root when taken as the outermost span of its trace; a nested span
        must also be answering, and (when `start` is called) have no open ancestor from the same
        instrumentation that could still absorb it. See docs/assembly.md, "Live assembly".
        """
        if not _may_be_root(span, self._live):
            return None
        with self._lock:
            pending = self._traces.get(span.trace_id)
            if pending is None or self._inside_same_scope(span):
                return None
            snapshot = TraceTree(pending.tree.spans.values())
        snapshot.add(span)
        reader = pending.reader
        try:
            roots = turn_roots(snapshot, reader, span.span_id)
            if len(roots) != 1 or roots[0].record.span_id != span.span_id:
                return None
            if not span.is_local_root and not snapshot.answering(reader, span.span_id):
                return None  # LCEL's `retriever | format` step: a turn only if nothing encloses it
            return build_turn(snapshot, roots[0], reader)
        finally:
            reader.forget(span.span_id)

    def start(self, span: SpanRecord) -> None:
        """Note a span that just started (from `SpanProcessor.on_start`; optional, cheap)."""
        parent = None if span.parent_is_remote else span.parent_span_id
        with self._lock:
            self._open[(span.trace_id, span.span_id)] = (parent, span.instrumentation_scope)
            while len(self._open) > self._max_spans:
                self._open.popitem(last=False)

    def _inside_same_scope(self, span: SpanRecord) -> bool:
        """True when an open ancestor of `span` came from the same instrumentation (lock held)."""
        parent = span.parent_span_id if not span.parent_is_remote else None
        for _ in range(1_000):
            if parent is None:
                return False
            entry = self._open.get((span.trace_id, parent))
            if entry is None:
                return False
            if entry[1] == span.instrumentation_scope:
                return True
            parent = entry[0]
        return False

    def flush(self) -> list[RagTurn]:
        """Resolve and release every pending trace as it stands (at shutdown)."""
        with self._lock:
            released = list(self._traces.values())
            self._traces.clear()
            self._open.clear()
            self._span_count = 0
        return self._resolve(released)

    def _evict(self) -> list[_Pending]:
        """Evict the oldest traces until both limits hold (lock held); return those to resolve."""
        evicted: list[_Pending] = []
        while self._traces and (
            len(self._traces) > self._max_traces or self._span_count > self._max_spans
        ):
            trace_id, pending = self._traces.popitem(last=False)
            size = len(pending.tree)
            self._span_count -= size
            self.evicted_traces += 1
            self.evicted_spans += size
            logger.debug("trace %s evicted with %d pending spans", trace_id, size)
            evicted.append(pending)
        if self._resolve_evicted:
            return evicted
        for pending in evicted:
            pending.reader.release(iter(pending.tree.spans.values()))
        return []


def _may_be_root(span: SpanRecord, live: LiveContentStore | None) -> bool:
    """Cheap pre-check: a turn root is a non-model span with an output."""
    attributes = span.attributes
    if span_kind(span) != KIND_OTHER:
        return False
    if any(key in attributes for key in OUTPUT_KEYS):
        return True
    if any(key.startswith(OUTPUT_PREFIXES) for key in attributes):  # OpenLLMetry's older spans
        return True
    if live is None or not len(live):
        return False
    content = live.get(span.key)
    return content is not None and content.output is not None
