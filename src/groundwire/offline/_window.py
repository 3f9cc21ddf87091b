"""Reassembling traces from a stream of span batches with bounded memory, on a record clock.

A trace's spans may be spread over several records (the SDK exports spans in batches as they end,
and the Collector regroups them), so a trace is complete only when no more of its spans will come.
A file gives no such signal; `TraceWindow` uses the one the SDK's export order gives: a trace is
released once its local root (a span with no parent, or a remote one) has been read and `grace`
further records passed without a span of it. Past `max_spans` held spans or `max_traces` held
traces, the oldest traces are released as they stand (counted in `forced`). A span arriving for a
released trace is counted in `late_spans` and ignored. Released traces go through the same
assembler as live spans (`groundwire.assembly.turns_from_spans`).

The rules are `groundwire.trace_window.TraceWindow`'s (the gateway's too); this class supplies its
clock, the number of records read, and hands out span lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from groundwire.assembly import SpanRecord
from groundwire.trace_window import TraceWindow as _Window

__all__ = ["TraceWindow"]


class TraceWindow:
    """Holds incomplete traces and releases them (as span lists) once complete, oldest first."""

    def __init__(
        self, *, grace: int = 8, max_spans: int = 200_000, max_traces: int = 20_000
    ) -> None:
        if isinstance(grace, bool) or not isinstance(grace, int) or grace < 0:
            raise ValueError(f"TraceWindow: grace must be an int >= 0, got {grace!r}")
        # The shared window checks max_spans and max_traces (its messages name them).
        self._window = _Window(quiet=grace, max_spans=max_spans, max_traces=max_traces)
        self._window.remember = min(max_traces, 10_000)  # released ids kept to see late spans
        self.grace = grace
        self.max_spans = max_spans
        self.max_traces = max_traces
        self._record = 0

    @property
    def held_spans(self) -> int:
        """Spans held right now."""
        return self._window.held_spans

    @property
    def traces(self) -> int:
        """Traces released so far."""
        return self._window.traces

    @property
    def forced(self) -> int:
        """Traces released before they looked complete, to keep memory bounded."""
        return self._window.forced

    @property
    def late_spans(self) -> int:
        """Spans that arrived after their trace had been released (ignored)."""
        return self._window.late_spans

    @property
    def peak_spans(self) -> int:
        """The most spans held at once."""
        return self._window.peak_spans

    def add(self, spans: Iterable[SpanRecord]) -> Iterator[list[SpanRecord]]:
        """Take one record's spans; yield the traces that are now complete, then those released
        at a bound."""
        self._record += 1
        self._window.hold(spans, self._record)
        for trace in self._window.due(self._record) + self._window.evict():
            yield trace.spans

    def flush(self) -> Iterator[list[SpanRecord]]:
        """Release every held trace (at the end of the input), oldest first."""
        for trace in self._window.flush():
            yield trace.spans
