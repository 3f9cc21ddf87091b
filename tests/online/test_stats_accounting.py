"""`RunnerStats.adds_up()` is false whenever a turn is lost or counted twice."""

from __future__ import annotations

import pytest

from groundwire.runner import RunnerStats


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
