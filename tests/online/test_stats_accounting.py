"""`RunnerStats.adds_up()` is false whenever a turn is lost or counted twice."""

from __future__ import annotations

import time

import pytest

from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig, RunnerStats

from .conftest import Gate, make_turn


def _stats(**changes: int) -> RunnerStats:
    """A consistent snapshot (10 submitted: 4 scored, 2 errored, 1 dropped, 1 out, 2 in flight)."""
    counts = {
        "submitted": 10,
        "scored": 4,
        "errored": 2,
        "dropped": 1,
        "sampled_out": 1,
        "in_flight": 2,
        "queue_size": 2,
    }
    counts.update(changes)
    return RunnerStats(**counts)


def test_a_consistent_snapshot_adds_up() -> None:
    """Every submitted turn finished or in flight exactly once: adds up."""
    stats = _stats()
    assert stats.finished == 8
    assert stats.adds_up()


@pytest.mark.parametrize(
    "changes",
    [
        {"scored": 3},  # a turn lost
        {"errored": 3},  # a turn counted twice
        {"dropped": 0},
        {"sampled_out": 2},
        {"in_flight": 0},  # still working but reported idle
        {"submitted": 11},
        {"submitted": 0},
    ],
)
def test_a_lost_or_double_counted_turn_does_not_add_up(changes: dict[str, int]) -> None:
    """Any outcome count off by one, or a submission not accounted for, makes `adds_up` false."""
    assert not _stats(**changes).adds_up()


def test_queue_size_is_not_part_of_the_balance() -> None:
    """The queue depth is informative; it never balances the books."""
    assert _stats(queue_size=0).adds_up()
    assert _stats(queue_size=99).adds_up()


def test_stats_report_the_queue_depth_while_the_worker_is_busy(emitter: Emitter) -> None:
    """With one busy worker and a queue of 2, stats show 2 queued and the rest dropped."""
    gate = Gate()
    runner = BackgroundRunner(RunnerConfig([gate], workers=1, max_queue_size=2), emitter)
    try:
        runner.submit(make_turn(0))
        deadline = time.monotonic() + 5
        while runner.stats().queue_size != 0 and time.monotonic() < deadline:
            time.sleep(0.01)  # the worker has taken turn 0 and waits at the gate
        for i in range(1, 6):
            runner.submit(make_turn(i))
        stats = runner.stats()
        assert stats.queue_size == 2
        assert (stats.submitted, stats.in_flight, stats.dropped) == (6, 3, 3)
        gate.open.set()
        assert runner.force_flush(5)
        assert runner.stats().queue_size == 0
    finally:
        gate.open.set()
        runner.shutdown(1)
