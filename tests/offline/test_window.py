"""TraceWindow: traces split across records are reassembled; memory stays bounded."""

from __future__ import annotations

import pytest

from groundwire.assembly import SpanRecord
from groundwire.offline import TraceWindow


def _span(trace: int, span: int, parent: int | None) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{trace:032x}",
        span_id=f"{span:016x}",
        parent_span_id=None if parent is None else f"{parent:016x}",
        name=f"s{span}",
        start_time_ns=span,
        end_time_ns=span + 1,
    )


def test_root_first_then_children_within_grace_are_one_trace() -> None:
    """A root read before its children is held until `grace` records pass without its spans."""
    window = TraceWindow(grace=2)
    assert list(window.add([_span(1, 1, None)])) == []
    assert list(window.add([_span(1, 2, 1)])) == []
    assert list(window.add([_span(2, 10, None)])) == []
    assert list(window.add([_span(1, 3, 1)])) == []
    (second,) = window.add([])
    assert [s.span_id for s in second] == [f"{10:016x}"]
    (first,) = window.add([])
    assert sorted(s.span_id for s in first) == [f"{i:016x}" for i in (1, 2, 3)]
    assert window.late_spans == 0 and window.forced == 0


def test_span_after_release_is_counted_late() -> None:
    """A span of an already released trace is ignored and counted."""
    window = TraceWindow(grace=0)
    assert len(list(window.add([_span(1, 1, None)]))) == 1
    assert list(window.add([_span(1, 2, 1)])) == []
    assert window.late_spans == 1


def test_rootless_traces_wait_for_flush() -> None:
    """A trace whose root never comes is released at the end, as it stands."""
    window = TraceWindow(grace=0)
    assert list(window.add([_span(1, 2, 1), _span(1, 3, 1)])) == []
    (trace,) = list(window.flush())
    assert len(trace) == 2


def test_memory_is_bounded_by_max_spans() -> None:
    """Past max_spans, the oldest traces are released early; the held count never exceeds it."""
    window = TraceWindow(grace=1_000, max_spans=50, max_traces=1_000)
    released = 0
    for trace in range(200):
        released += len(list(window.add([_span(trace + 1, 1, None), _span(trace + 1, 2, 1)])))
        assert window.held_spans <= 50
    released += len(list(window.flush()))
    assert released == 200
    assert window.forced > 100
    assert window.peak_spans <= 52


def test_bad_limits_are_rejected() -> None:
    """Limits must be positive ints; the message names the parameter."""
    with pytest.raises(ValueError, match="max_spans"):
        TraceWindow(max_spans=0)
