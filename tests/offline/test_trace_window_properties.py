"""The shared trace window's promises, on any clock and any arrival order (Hypothesis): every
span is released exactly once or counted late (or as a duplicate of a held one), no trace twice;
the bounds hold after every step; `due` leaves nothing due behind and releases nothing early."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwire.assembly import SpanRecord
from groundwire.trace_window import ReleasedTrace, TraceWindow


def _span(trace: int, span: int, root: bool, version: int) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{trace:032x}",
        span_id=f"{span:016x}",
        parent_span_id=None if root else f"{span + 100:016x}",
        name=f"s{span}v{version}",
        start_time_ns=1,
        end_time_ns=2,
    )


_batches = st.lists(st.tuples(st.integers(1, 6), st.integers(1, 5), st.booleans()), max_size=6)
_steps = st.lists(
    st.tuples(_batches, st.integers(0, 3), st.sampled_from(["add", "hold", "due", "evict"])),
    max_size=40,
)


@dataclass
class _Model:
    """What the test saw go in and come out."""

    added: int = 0
    late: int = 0
    open: dict[str, tuple[int, int, bool]] = field(default_factory=dict)
    """Held trace -> (first seen, last seen, rooted), from the spans the test added."""
    released: Counter[str] = field(default_factory=Counter)
    out_spans: Counter[tuple[str, str]] = field(default_factory=Counter)
    last_copy: dict[tuple[str, str], str] = field(default_factory=dict)

    def hold(self, spans: list[SpanRecord], now: int) -> None:
        for span in spans:
            self.added += 1
            if self.released[span.trace_id]:
                self.late += 1
                continue
            first, _, rooted = self.open.get(span.trace_id, (now, now, False))
            self.open[span.trace_id] = (first, now, rooted or span.is_local_root)
            self.last_copy[(span.trace_id, span.span_id)] = span.name

    def release(self, traces: list[ReleasedTrace]) -> None:
        for trace in traces:
            self.released[trace.trace_id] += 1
            self.open.pop(trace.trace_id)
            for span in trace.spans:
                self.out_spans[(span.trace_id, span.span_id)] += 1
                assert self.last_copy[(span.trace_id, span.span_id)] == span.name


def _is_due(window: TraceWindow, entry: tuple[int, int, bool], now: int) -> bool:
    first, last, rooted = entry
    waited = window.max_wait is not None and now - first >= window.max_wait
    return (rooted and now - last >= window.quiet) or waited


@settings(max_examples=300, deadline=None)
@given(
    steps=_steps,
    quiet=st.integers(0, 3),
    max_wait=st.none() | st.integers(0, 6),
    max_spans=st.integers(1, 12),
    max_traces=st.integers(1, 5),
)
def test_every_span_is_released_once_or_counted_and_the_bounds_hold(
    steps: list[tuple[list[tuple[int, int, bool]], int, str]],
    quiet: int,
    max_wait: int | None,
    max_spans: int,
    max_traces: int,
) -> None:
    """Any arrivals, clock steps and calls: spans in = spans out + late + duplicates."""
    window = TraceWindow(
        quiet=quiet, max_wait=max_wait, max_spans=max_spans, max_traces=max_traces, remember=100
    )
    model, now = _Model(), 0
    for version, (batch, advance, call) in enumerate(steps):
        now += advance
        spans = [_span(trace, span, root, version) for trace, span, root in batch]
        if call == "hold":
            model.hold(spans, now)
            window.hold(spans, now)
        if call == "add":
            model.hold(spans, now)
            model.release(window.add(spans, now))
        if call == "evict":
            model.release(window.evict())
        if call in ("add", "evict"):
            assert window.held_spans <= max_spans and window.held_traces <= max_traces
        if call == "due":
            before = dict(model.open)
            released = window.due(now)
            model.release(released)
            assert all(_is_due(window, before[t.trace_id], now) for t in released)
            assert not any(_is_due(window, entry, now) for entry in model.open.values())
        assert window.held_traces == len(model.open)
        assert window.peak_spans >= window.held_spans
    model.release(window.flush())
    assert window.held_spans == 0 and window.held_traces == 0
    assert max(model.released.values(), default=1) == 1  # no trace released twice
    assert max(model.out_spans.values(), default=1) == 1  # no span twice
    assert set(model.out_spans) == set(model.last_copy)  # every span held came out
    assert window.late_spans == model.late
    assert model.added == sum(model.out_spans.values()) + window.late_spans + window.duplicate_spans
    assert window.traces == sum(model.released.values())


def test_spans_of_a_forgotten_trace_open_it_again() -> None:
    """Only the last `remember` released ids are kept: older ones are no longer known as late."""
    window = TraceWindow(quiet=0, max_spans=10, max_traces=10, remember=1)
    window.hold([_span(1, 1, True, 0)], 0)
    window.hold([_span(2, 1, True, 0)], 0)
    assert [t.trace_id for t in window.due(0)] == [f"{1:032x}", f"{2:032x}"]
    window.hold([_span(2, 2, False, 1), _span(1, 2, False, 1)], 1)
    assert window.late_spans == 1 and window.held_traces == 1


@pytest.mark.parametrize(
    ("option", "value"),
    [("quiet", -1), ("max_wait", float("nan")), ("max_spans", 0), ("max_traces", 1.5)],
)
def test_bad_bounds_are_refused_by_name(option: str, value: float) -> None:
    """A bad bound fails at once; the message names it."""
    options: dict[str, float] = {"quiet": 1, "max_spans": 10, "max_traces": 10, option: value}
    with pytest.raises(ValueError, match=f"TraceWindow: {option} must be"):
        TraceWindow(**options)  # type: ignore[arg-type]
