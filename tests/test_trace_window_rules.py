"""The shared trace window's rules case by case, at their exact edges (the Hypothesis properties
are in tests/offline/test_trace_window_properties.py): bounds checked by name, a quiet period
and max wait that end exactly at their length, bounds that hold at their value, a local root
by a remote parent, counters, `received`, and how many released ids are remembered."""

from __future__ import annotations

import dataclasses

import pytest

from groundwire.assembly import SpanRecord
from groundwire.trace_window import ReleasedTrace, TraceWindow


def _span(trace: int, span: int, parent: int | None = None, *, remote: bool = False) -> SpanRecord:
    return SpanRecord(
        trace_id=f"{trace:032x}",
        span_id=f"{span:016x}",
        parent_span_id=None if parent is None else f"{parent:016x}",
        parent_is_remote=remote,
        name=f"s{span}",
        start_time_ns=1,
        end_time_ns=2,
    )


def _ids(traces: list[ReleasedTrace]) -> list[int]:
    return [int(trace.trace_id, 16) for trace in traces]


def _window(**overrides: float | None) -> TraceWindow:
    options: dict[str, float | None] = {"quiet": 1, "max_spans": 100, "max_traces": 100}
    options.update(overrides)
    return TraceWindow(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("quiet", -0.5, "quiet must be a number >= 0, got -0.5"),
        ("quiet", True, "quiet must be a number >= 0, got True"),
        ("quiet", "1", "quiet must be a number >= 0, got '1'"),
        ("max_wait", -1, "max_wait must be a number >= 0, got -1"),
        ("max_spans", 0, "max_spans must be an int >= 1, got 0"),
        ("max_spans", 2.0, "max_spans must be an int >= 1, got 2.0"),
        ("max_traces", 0, "max_traces must be an int >= 1, got 0"),
        ("max_traces", False, "max_traces must be an int >= 1, got False"),
        ("remember", -1, "remember must be an int >= 0, got -1"),
    ],
)
def test_each_bad_bound_is_refused_with_its_name_kind_and_least(
    option: str, value: object, message: str
) -> None:
    """The message says which bound, what kind of value and the least one allowed."""
    with pytest.raises(ValueError, match=r"^TraceWindow: ") as raised:
        _window(**{option: value})  # type: ignore[arg-type]
    assert str(raised.value) == f"TraceWindow: {message}"


def test_the_least_allowed_bounds_are_taken_and_kept() -> None:
    """quiet 0, max_wait 0, one span, one trace, remember 0: each at its least, all accepted."""
    window = TraceWindow(quiet=0, max_wait=0.0, max_spans=1, max_traces=1, remember=0)
    assert (window.quiet, window.max_wait, window.max_spans, window.max_traces) == (0, 0.0, 1, 1)
    assert window.remember == 0
    counters = (window.traces, window.forced, window.late_spans, window.duplicate_spans)
    assert counters == (0, 0, 0, 0)
    assert (window.peak_spans, window.held_spans, window.held_traces) == (0, 0, 0)
    assert TraceWindow(quiet=2.5, max_spans=3, max_traces=4).remember == 10_000


def test_the_quiet_period_ends_exactly_at_its_length_after_the_last_span() -> None:
    """Due when `now - last span` reaches `quiet`, not a moment before."""
    window = _window(quiet=2)
    window.hold([_span(1, 1)], 10)
    window.hold([_span(1, 2, 1)], 11)
    assert window.due(12.9) == []
    assert _ids(window.due(13)) == [1]


def test_max_wait_ends_exactly_at_its_length_after_the_first_span() -> None:
    """A rootless trace is due when `now - first span` reaches `max_wait`, not before, and
    later spans do not push that back."""
    window = _window(max_wait=5)
    window.hold([_span(1, 2, 1)], 10)
    window.hold([_span(1, 3, 1)], 14)
    assert window.due(14.9) == []
    (trace,) = window.due(15)
    assert trace.trace_id == f"{1:032x}" and not trace.forced and len(trace.spans) == 2
    assert window.forced == 0 and window.traces == 1


def test_without_max_wait_a_rootless_trace_waits_for_its_root_or_a_bound() -> None:
    """No `max_wait`: a trace without a root is never due, however long it waits."""
    window = _window()
    window.hold([_span(1, 2, 1)], 0)
    assert window.due(1e12) == []
    assert window.held_traces == 1


def test_a_span_with_a_remote_parent_is_the_local_root() -> None:
    """A parent in another process makes the span this process's root: the trace can be due."""
    window = _window(quiet=0)
    window.hold([_span(1, 2, 1, remote=True)], 0)
    assert _ids(window.due(0)) == [1]


def test_due_traces_come_least_recently_touched_first_then_the_oldest_past_max_wait() -> None:
    """A trace touched again moves behind the others; rooted ones come before waited ones."""
    window = _window(quiet=1, max_wait=10)
    window.hold([_span(9, 2, 1)], 0)  # rootless: due by max_wait only
    window.hold([_span(1, 1)], 1)
    window.hold([_span(2, 1)], 2)
    window.hold([_span(1, 2, 1)], 3)  # trace 1 touched again: now after trace 2
    assert _ids(window.due(20)) == [2, 1, 9]


def test_a_later_span_of_the_same_batch_keeps_its_trace_in_touch_order() -> None:
    """Spans of two traces interleaved in one batch: each trace's last touch counts."""
    window = _window(quiet=1)
    window.hold([_span(1, 1), _span(2, 1)], 0)
    window.hold([_span(2, 2, 1), _span(1, 2, 1)], 1)
    assert _ids(window.due(5)) == [2, 1]


def test_bounds_hold_at_their_value_and_evict_only_past_it() -> None:
    """Exactly `max_spans` spans and `max_traces` traces stay; one more evicts the oldest."""
    window = _window(max_spans=3, max_traces=2)
    assert window.add([_span(1, 1), _span(1, 2, 1)], 0) == []
    assert window.add([_span(2, 1)], 1) == []
    assert (window.held_spans, window.held_traces) == (3, 2)
    (forced,) = window.add([_span(2, 2, 1)], 2)
    assert forced.trace_id == f"{1:032x}" and forced.forced and forced.first_seen == 0
    assert (window.held_spans, window.held_traces, window.forced, window.traces) == (2, 1, 1, 1)


def test_counters_count_each_kind_of_span_once() -> None:
    """Duplicates replace and are counted; peak spans is the most held at once; late spans of a
    released trace are counted and dropped."""
    window = _window(quiet=0)
    window.hold([_span(1, 1), _span(1, 2, 1), _span(1, 2, 1), _span(2, 1)], 0)
    assert (window.held_spans, window.duplicate_spans, window.peak_spans) == (3, 1, 3)
    assert _ids(window.due(0)) == [1, 2]
    assert (window.held_spans, window.peak_spans, window.traces) == (0, 3, 2)
    window.hold([_span(1, 3, 1), _span(2, 3, 1), _span(3, 1)], 1)
    assert (window.late_spans, window.held_spans, window.held_traces) == (2, 1, 1)
    assert window.peak_spans == 3


def test_a_duplicate_span_replaces_the_copy_held() -> None:
    """The later copy of a span id is the one released (as the assembler would keep it)."""
    window = _window(quiet=0)
    first = _span(1, 1)
    second = dataclasses.replace(first, name="again")
    window.hold([first], 0)
    window.hold([second], 0)
    (trace,) = window.due(0)
    assert [span.name for span in trace.spans] == ["again"]


def test_received_is_the_first_seen_but_the_clock_runs_from_now() -> None:
    """`received` (an earlier arrival) is reported as `first_seen`; quiet and max wait count
    from `now`."""
    window = _window(quiet=5, max_wait=8)
    window.hold([_span(1, 2, 1)], 10, received=3)
    window.hold([_span(1, 3, 1)], 12, received=1)  # only the first batch sets first_seen
    assert window.due(17.5) == []
    (trace,) = window.due(18)
    assert trace.first_seen == 3
    window.hold([_span(2, 1)], 20)
    (plain,) = window.due(25)
    assert plain.first_seen == 20


def test_add_holds_with_the_received_time_too() -> None:
    """`add` is `hold` then `evict`: `received` reaches the trace's `first_seen` as well."""
    window = _window(quiet=5)
    assert window.add([_span(3, 1)], 30, received=27) == []
    (added,) = window.due(35)
    assert added.first_seen == 27


def test_flush_releases_everything_oldest_first_as_not_forced() -> None:
    """End of input: every held trace, rooted or not, by first span; none counted as forced."""
    window = _window()
    window.hold([_span(3, 2, 1)], 0)
    window.hold([_span(1, 1)], 1)
    window.hold([_span(3, 3, 1)], 2)
    flushed = window.flush()
    assert _ids(flushed) == [3, 1] and not any(trace.forced for trace in flushed)
    assert (window.forced, window.traces, window.held_spans, window.held_traces) == (0, 2, 0, 0)


@pytest.mark.parametrize(("remember", "late"), [(0, 0), (1, 1), (2, 2)])
def test_exactly_the_last_remember_released_ids_are_known_late(remember: int, late: int) -> None:
    """`remember` released ids are kept, the newest; with 0 none, so a late span opens its
    trace again."""
    window = _window(quiet=0, remember=remember)
    window.hold([_span(1, 1), _span(2, 1)], 0)
    assert _ids(window.due(0)) == [1, 2]
    window.hold([_span(2, 2, 1), _span(1, 2, 1)], 1)
    assert window.late_spans == late and window.held_traces == 2 - late
    assert _ids(window.flush()) == [2, 1][late:]  # the oldest released id is forgotten first
