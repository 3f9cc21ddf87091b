"""Reassembling traces from a stream of span batches with bounded memory.

A trace's spans may be spread over several records (the SDK exports spans in batches as they end,
and the Collector regroups them), so a trace is complete only when no more of its spans will come.
A file gives no such signal; `TraceWindow` uses the one the SDK's export order gives: a trace is
released once its local root (a span with no parent, or a remote one) has been read and `grace`
further records passed without a span of it. Past `max_spans` held spans or `max_traces` held
traces, the oldest traces are released as they stand (counted in `forced`). A span arriving for a
released trace is counted in `late_spans` and ignored. Released traces go through the same
assembler as live spans (`groundwire.assembly.turns_from_spans`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from groundwire.assembly import SpanRecord

__all__ = ["TraceWindow"]


@dataclass(slots=True)
class _Pending:
    """One held trace: its spans by id, whether its root was read, when it was last touched."""

    spans: dict[str, SpanRecord] = field(default_factory=dict)
    root_seen: bool = False
    last_record: int = 0


class TraceWindow:
    """Holds incomplete traces and releases them (as span lists) once complete, oldest first."""

    def __init__(
        self, *, grace: int = 8, max_spans: int = 200_000, max_traces: int = 20_000
    ) -> None:
        for name, value, least in (
            ("grace", grace, 0),
            ("max_spans", max_spans, 1),
            ("max_traces", max_traces, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"TraceWindow: {name} must be an int >= {least}, got {value!r}")
        self.grace = grace
        self.max_spans = max_spans
        self.max_traces = max_traces
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._rooted: OrderedDict[str, None] = OrderedDict()
        self._released: OrderedDict[str, None] = OrderedDict()
        self._remember = min(max_traces, 10_000)
        """How many released trace ids are remembered to recognise late spans."""
        self._record = 0
        self._held = 0
        self.traces = 0
        """Traces released so far."""
        self.forced = 0
        """Traces released before they looked complete, to keep memory bounded."""
        self.late_spans = 0
        """Spans that arrived after their trace had been released (ignored)."""
        self.peak_spans = 0
        """The most spans held at once."""

    @property
    def held_spans(self) -> int:
        """Spans held right now."""
        return self._held

    def add(self, spans: Iterable[SpanRecord]) -> Iterator[list[SpanRecord]]:
        """Take one record's spans; yield the traces that are now complete."""
        self._record += 1
        for span in spans:
            trace_id = span.trace_id
            pending = self._pending.get(trace_id)
            if pending is None:
                if trace_id in self._released:
                    self.late_spans += 1
                    continue
                pending = self._pending[trace_id] = _Pending()
            if span.span_id not in pending.spans:
                self._held += 1
            pending.spans[span.span_id] = span
            pending.last_record = self._record
            if span.is_local_root and not pending.root_seen:
                pending.root_seen = True
                self._rooted[trace_id] = None
            elif trace_id in self._rooted:
                self._rooted.move_to_end(trace_id)
        self.peak_spans = max(self.peak_spans, self._held)
        yield from self._due()
        while self._pending and (
            self._held > self.max_spans or len(self._pending) > self.max_traces
        ):
            self.forced += 1
            yield self._release(next(iter(self._pending)))

    def _due(self) -> Iterator[list[SpanRecord]]:
        """Rooted traces untouched for `grace` records, least recently touched first."""
        while self._rooted:
            trace_id = next(iter(self._rooted))
            if self._record - self._pending[trace_id].last_record < self.grace:
                return
            yield self._release(trace_id)

    def _release(self, trace_id: str) -> list[SpanRecord]:
        """Stop holding `trace_id`, remember it (for late spans) and return its spans."""
        pending = self._pending.pop(trace_id)
        self._rooted.pop(trace_id, None)
        self._held -= len(pending.spans)
        self._released[trace_id] = None
        while len(self._released) > self._remember:
            self._released.popitem(last=False)
        self.traces += 1
        return list(pending.spans.values())

    def flush(self) -> Iterator[list[SpanRecord]]:
        """Release every held trace (at the end of the input), oldest first."""
        while self._pending:
            yield self._release(next(iter(self._pending)))
