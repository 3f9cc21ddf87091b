"""Trace grouping: hold a trace's spans until it is complete enough to score, within bounds.

Spans of one trace arrive in any order, split over any number of requests. A trace is due when it
holds a local root (a span without a parent, or with a remote one: its process's entry point) and
nothing new arrived for `quiet_period_s`, or when `max_wait_s` passed since its first span,
whichever comes first. At most `max_traces` traces and `max_spans` spans are held: past either
bound the oldest traces are closed early (handed over as they stand, counted as evicted). Spans of
a trace already handed over are late: counted, never grouped again (so never scored twice). The
grouper is confined to one thread; its counters may be read from any.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from groundwire.assembly import SpanRecord

__all__ = ["DueTrace", "TraceGrouper"]


@dataclass(eq=False, slots=True)
class _Open:
    """One trace being grouped."""

    first_seen: float
    last_seen: float
    first_received: float
    spans: list[SpanRecord] = field(default_factory=list)
    rooted: bool = False


@dataclass(frozen=True, slots=True)
class DueTrace:
    """A trace handed over for scoring."""

    trace_id: str
    spans: list[SpanRecord]
    first_seen: float
    """When the gateway received its first span (monotonic seconds), for the scoring lag."""
    evicted: bool = False
    """True when closed early at the open-trace or memory bound."""


class TraceGrouper:
    """Groups spans by trace and says which traces are due (see the module docstring)."""

    def __init__(
        self,
        *,
        quiet_period_s: float,
        max_wait_s: float,
        max_traces: int,
        max_spans: int,
        remember: int = 100_000,
    ) -> None:
        """Set the completion rule and the bounds; `remember` handed-over trace ids are kept."""
        self._quiet = quiet_period_s
        self._max_wait = max_wait_s
        self._max_traces = max_traces
        self._max_spans = max_spans
        self._remember = remember
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._done: OrderedDict[str, None] = OrderedDict()
        self._spans = 0
        self.late_spans = 0
        """Spans that arrived after their trace was handed over."""
        self.evicted_traces = 0
        """Traces closed early at a bound."""

    @property
    def open_traces(self) -> int:
        """Traces being grouped."""
        return len(self._open)

    @property
    def open_spans(self) -> int:
        """Spans held."""
        return self._spans

    def add(
        self, spans: Iterable[SpanRecord], now: float, received: float | None = None
    ) -> list[DueTrace]:
        """Group `spans` seen at `now` (the quiet period counts from here) and `received` by the
        gateway earlier (for the lag metric; default `now`); returns traces closed early at a
        bound, if any."""
        for span in spans:
            trace_id = span.trace_id
            if trace_id in self._done:
                self.late_spans += 1
                continue
            entry = self._open.get(trace_id)
            if entry is None:
                entry = _Open(now, now, now if received is None else received)
                self._open[trace_id] = entry
            entry.spans.append(span)
            entry.last_seen = now
            entry.rooted = entry.rooted or span.is_local_root
            self._spans += 1
        evicted: list[DueTrace] = []
        while self._open and (len(self._open) > self._max_traces or self._spans > self._max_spans):
            trace_id = next(iter(self._open))
            evicted.append(self._close(trace_id, evicted=True))
        self.evicted_traces += len(evicted)
        return evicted

    def due(self, now: float) -> list[DueTrace]:
        """Traces complete enough to score at `now`, oldest first, taken out of the grouper."""
        ready = [
            trace_id
            for trace_id, entry in self._open.items()
            if (entry.rooted and now - entry.last_seen >= self._quiet)
            or now - entry.first_seen >= self._max_wait
        ]
        return [self._close(trace_id) for trace_id in ready]

    def close_all(self) -> list[DueTrace]:
        """Every open trace as it stands (at shutdown)."""
        return [self._close(trace_id) for trace_id in list(self._open)]

    def _close(self, trace_id: str, *, evicted: bool = False) -> DueTrace:
        """Take a trace out and remember it, so that its late spans are recognised."""
        entry = self._open.pop(trace_id)
        self._spans -= len(entry.spans)
        self._done[trace_id] = None
        while len(self._done) > self._remember:
            self._done.popitem(last=False)
        return DueTrace(trace_id, entry.spans, entry.first_received, evicted)
