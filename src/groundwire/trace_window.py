"""One trace window: hold a trace's spans until it looks complete, within bounds, on any clock.

Spans of one trace arrive spread over many records or requests (the SDK exports spans in batches
as they end; the Collector regroups them), so a trace is whole only once no more of it will come.
Offline reading and the gateway decide that with the same rules, on different clocks: the caller
passes `now` in, counted in records read (`groundwire.offline.TraceWindow`) or in monotonic
seconds (the gateway). `now` must never go backwards.

- A trace is **due** once it holds a local root (a span without a parent, or with a remote one)
  and `quiet` has passed since its last span, or (when `max_wait` is set) once `max_wait` has
  passed since its first span, root or not.
- At most `max_traces` traces and `max_spans` spans are held: `evict` releases the oldest traces
  (by first span) as they stand until both bounds hold again, flagged `forced`.
- A released trace's id is remembered (the last `remember` of them): a span arriving for it later
  is counted in `late_spans` and dropped, so no trace is released twice.
- A span whose id the trace already holds replaces the earlier copy (counted in
  `duplicate_spans`), as the assembler would.

So every span added is released exactly once, or counted late or duplicate. The window is
confined to one thread; its counters may be read from any.

```python
window = TraceWindow(quiet=2.0, max_wait=30.0, max_spans=100_000, max_traces=10_000)
window.add(spans, time.monotonic())          # hold; the traces forced out at a bound
for trace in window.due(time.monotonic()):   # complete ones, least recently touched first
    score(trace.spans)
```
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from groundwire.assembly import SpanRecord

__all__ = ["ReleasedTrace", "TraceWindow"]


@dataclass(eq=False, slots=True)
class _Held:
    """One trace being held: its id and spans by id, its clock readings, whether its root came."""

    trace_id: str
    first_seen: float
    last_seen: float
    received: float
    spans: dict[str, SpanRecord] = field(default_factory=dict)
    rooted: bool = False


class ReleasedTrace(NamedTuple):
    """A trace let out of the window: its spans in the order they first arrived."""

    trace_id: str
    spans: list[SpanRecord]
    first_seen: float
    """When its first span was received (the `received` given to `add`, default `now`)."""
    forced: bool = False
    """True when released at a bound before it looked complete."""


def _check(name: str, value: float, least: float, *, whole: bool) -> None:
    """Refuse a bad bound with a message naming it."""
    kind = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or not value >= least:
        expected = "an int" if whole else "a number"
        raise ValueError(f"TraceWindow: {name} must be {expected} >= {least}, got {value!r}")


class TraceWindow:
    """Holds incomplete traces and releases them when due or at a bound (module docstring)."""

    def __init__(
        self,
        *,
        quiet: float,
        max_spans: int,
        max_traces: int,
        max_wait: float | None = None,
        remember: int = 10_000,
    ) -> None:
        """`quiet` and `max_wait` are in the caller's clock units (records or seconds)."""
        _check("quiet", quiet, 0, whole=False)
        if max_wait is not None:
            _check("max_wait", max_wait, 0, whole=False)
        _check("max_spans", max_spans, 1, whole=True)
        _check("max_traces", max_traces, 1, whole=True)
        _check("remember", remember, 0, whole=True)
        self.quiet = quiet
        self.max_wait = max_wait
        self.max_spans = max_spans
        self.max_traces = max_traces
        self.remember = remember
        self._held: OrderedDict[str, _Held] = OrderedDict()
        """Held traces by first span, oldest first (eviction and `max_wait` order)."""
        self._rooted: OrderedDict[str, None] = OrderedDict()
        """Held traces with a root, least recently touched first (`quiet` order)."""
        self._released: OrderedDict[str, None] = OrderedDict()
        self._spans = 0
        self.traces = 0
        """Traces released so far."""
        self.forced = 0
        """Traces released at a bound, before they looked complete."""
        self.late_spans = 0
        """Spans that arrived after their trace was released (dropped)."""
        self.duplicate_spans = 0
        """Spans that replaced a held span of the same id."""
        self.peak_spans = 0
        """The most spans held at once."""

    @property
    def held_spans(self) -> int:
        """Spans held right now."""
        return self._spans

    @property
    def held_traces(self) -> int:
        """Traces held right now."""
        return len(self._held)

    def hold(self, spans: Iterable[SpanRecord], now: float, received: float | None = None) -> None:
        """Hold `spans` seen at `now` (a trace's quiet period restarts here); `received` is when
        they arrived, if earlier (kept as the trace's `first_seen`; default `now`)."""
        all_held, rooted, released = self._held, self._rooted, self._released
        first = now if received is None else received
        held: _Held | None = None
        for span in spans:
            trace_id = span.trace_id
            if held is None or trace_id != held.trace_id:  # a trace's spans mostly come together
                held = all_held.get(trace_id)
                if held is None:
                    if trace_id in released:
                        self.late_spans += 1
                        continue
                    held = all_held[trace_id] = _Held(trace_id, now, now, first)
                held.last_seen = now
                if held.rooted:
                    rooted.move_to_end(trace_id)
            span_id = span.span_id
            if span_id in held.spans:
                self.duplicate_spans += 1
            else:
                self._spans += 1
            held.spans[span_id] = span
            if not held.rooted and (span.parent_span_id is None or span.parent_is_remote):
                held.rooted = True  # its local root: `SpanRecord.is_local_root`, spelled out
                rooted[trace_id] = None
        self.peak_spans = max(self.peak_spans, self._spans)

    def add(
        self, spans: Iterable[SpanRecord], now: float, received: float | None = None
    ) -> list[ReleasedTrace]:
        """`hold` the spans, then `evict`: the traces forced out at a bound, if any."""
        self.hold(spans, now, received)
        return self.evict()

    def due(self, now: float) -> list[ReleasedTrace]:
        """The traces complete at `now` (rooted and quiet, least recently touched first; then
        those past `max_wait`, oldest first), taken out of the window."""
        out: list[ReleasedTrace] = []
        while self._rooted:
            trace_id = next(iter(self._rooted))
            if now - self._held[trace_id].last_seen < self.quiet:
                break
            out.append(self._release(trace_id, forced=False))
        if self.max_wait is not None:
            while self._held:
                trace_id, held = next(iter(self._held.items()))
                if now - held.first_seen < self.max_wait:
                    break
                out.append(self._release(trace_id, forced=False))
        return out

    def evict(self) -> list[ReleasedTrace]:
        """Release the oldest traces until at most `max_traces` traces and `max_spans` spans
        are held; each is counted in `forced`."""
        out: list[ReleasedTrace] = []
        while self._held and (self._spans > self.max_spans or len(self._held) > self.max_traces):
            out.append(self._release(next(iter(self._held)), forced=True))
        return out

    def flush(self) -> list[ReleasedTrace]:
        """Release every held trace as it stands (end of input, shutdown), oldest first."""
        return [self._release(trace_id, forced=False) for trace_id in list(self._held)]

    def _release(self, trace_id: str, *, forced: bool) -> ReleasedTrace:
        """Stop holding `trace_id` and remember it, so that its late spans are recognised."""
        held = self._held.pop(trace_id)
        self._rooted.pop(trace_id, None)
        self._spans -= len(held.spans)
        if self.remember:
            self._released[trace_id] = None
            while len(self._released) > self.remember:
                self._released.popitem(last=False)
        self.traces += 1
        self.forced += forced
        return ReleasedTrace(trace_id, list(held.spans.values()), held.received, forced)
