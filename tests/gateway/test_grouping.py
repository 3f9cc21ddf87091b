"""The gateway's trace grouping rules, on the shared trace window with a clock in seconds: quiet
period after the root, max wait without one, the open-trace and span bounds, and late spans never
grouped twice (clock passed in, so every case is exact)."""

from __future__ import annotations

from groundwire.assembly import SpanRecord
from groundwire.trace_window import TraceWindow


def _span(trace: int, span: int, parent: int | None = None) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{trace:032x}",
        span_id=f"{span:016x}",
        parent_span_id=None if parent is None else f"{parent:016x}",
        name=f"s{span}",
        start_time_ns=1,
        end_time_ns=2,
    )


def _grouper(**overrides: float) -> TraceWindow:
    """A window set as the gateway sets it (`quiet_period_s`, `max_wait_s` in seconds)."""
    options = {"quiet_period_s": 2.0, "max_wait_s": 30.0, "max_traces": 100, "max_spans": 1000}
    options.update(overrides)
    return TraceWindow(
        quiet=options["quiet_period_s"],
        max_wait=options["max_wait_s"],
        max_traces=int(options["max_traces"]),
        max_spans=int(options["max_spans"]),
    )


def test_a_rooted_trace_is_due_after_the_quiet_period_counted_from_its_last_span() -> None:
    """Children arriving after the root restart the quiet period; then the whole trace is due."""
    grouper = _grouper()
    grouper.add([_span(1, 1)], now=0.0)
    grouper.add([_span(1, 2, parent=1)], now=1.5)
    assert grouper.due(3.0) == []
    (due,) = grouper.due(3.5)
    assert {s.span_id for s in due.spans} == {f"{1:016x}", f"{2:016x}"}
    assert due.first_seen == 0.0 and grouper.held_traces == 0 and grouper.held_spans == 0


def test_a_trace_without_its_root_waits_until_max_wait() -> None:
    """No local root yet: not due after the quiet period, due at max_wait after its first span."""
    grouper = _grouper(max_wait_s=10.0)
    grouper.add([_span(1, 2, parent=1)], now=0.0)
    assert grouper.due(9.9) == []
    assert len(grouper.due(10.0)) == 1


def test_late_spans_of_a_handed_over_trace_are_counted_not_grouped() -> None:
    """A span of a trace already due is counted late and never opens the trace again."""
    grouper = _grouper(quiet_period_s=0.0)
    grouper.add([_span(1, 1)], now=0.0)
    assert len(grouper.due(0.0)) == 1
    grouper.add([_span(1, 3, parent=1), _span(1, 4, parent=1)], now=1.0)
    assert grouper.late_spans == 2 and grouper.held_traces == 0 and grouper.due(100.0) == []


def test_bounds_close_the_oldest_traces_early() -> None:
    """Past max_traces or max_spans the oldest traces are handed over as they stand."""
    grouper = _grouper(max_traces=2, max_spans=5)
    assert grouper.add([_span(1, 1)], now=0.0) == []
    assert grouper.add([_span(2, 1)], now=1.0) == []
    (evicted,) = grouper.add([_span(3, 1)], now=2.0)
    assert evicted.trace_id == f"{1:032x}" and evicted.forced
    evicted_now = grouper.add([_span(4, i, parent=99) for i in range(1, 6)], now=3.0)
    assert [e.trace_id for e in evicted_now] == [f"{2:032x}", f"{3:032x}"]
    assert grouper.forced == 3 and grouper.held_spans == 5
