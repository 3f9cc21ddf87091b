"""The parent's handle on the scoring child (`ScoringProcess`) against a stand-in child: a real
spawned process on the handle's real queues that sends the messages the test scripts
(tests/gateway/_stand_in_child.py), so each test starts in well under a second. What the
handle gives the child, what it does with each message (reports of scored traces, counts,
the final counts), feeding (a full inbox, a stopped or dead child), and shutdown (the stop
carries the time left, waits for room, ends a child that hangs at the deadline). The real
child's tests are test_scoring_process.py and test_scoring_child_life.py."""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.gateway._child import scoring_config
from tests.gateway._stand_in_child import FINAL, command, main

from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._worker import ScoringProcess


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The gateway's log messages (not the exporters' of scorers other tests left running)."""
    return [r.getMessage() for r in caplog.records if r.name == "groundwire.gateway"]


def _until(check: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


class _Handle:
    """A `ScoringProcess` on the stand-in child, with its metrics and the calls of
    `on_scored`."""

    def __init__(self, scored: tuple[str, ...] = (), **flags: Any) -> None:
        self.metrics = GatewayMetrics(None)
        self.calls: list[tuple[Any, ...]] = []
        self.process = ScoringProcess(
            scoring_config(**flags),
            self.metrics,
            scored=scored,
            on_scored=lambda *args: self.calls.append(args),
            main=main,
        )
        _until(lambda: self.calls, "the stand-in child reports its start")

    def feed(self, seqs: tuple[int, ...] = (), spans: int = 1, **what: Any) -> bool:
        """Feed the stand-in child one command."""
        return self.process.feed(command(**what), spans, seqs)

    def wait_calls(self, count: int) -> list[tuple[Any, ...]]:
        _until(lambda: len(self.calls) >= count, f"{count} reports of scored traces")
        return self.calls


@pytest.fixture
def handle() -> Iterator[_Handle]:
    """A handle on a stand-in child with the default config; stopped after the test."""
    started = _Handle()
    yield started
    started.process.shutdown(5.0)


def _counts(scored: int, **counts: Any) -> dict[str, Any]:
    """A counts report (not final) with `scored` turns."""
    return {
        "final": False,
        "drained": True,
        "open_traces": counts.pop("open_traces", 0),
        "counts": counts.pop("counts", {}),
        "lags": counts.pop("lags", []),
        "turns": {"submitted": scored, "scored": scored},
    }


def test_the_child_is_spawned_with_the_config_log_level_and_scored_traces(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The child is a spawned daemon process named `groundwire-gateway-scoring`, given the
    config, the groundwire logger's level and the scored trace ids; a stats reader thread runs
    beside it; before the child's first counts the handle reports nothing started."""
    caplog.set_level(15, logger="groundwire")
    started = _Handle(scored=("b", "a"), scoring_queue_requests=7)
    try:
        assert started.calls[0] == (["spawn", 15, 7], ["a", "b"], [])
        (child,) = [p for p in multiprocessing.active_children() if p.name.endswith("-scoring")]
        assert child.name == "groundwire-gateway-scoring" and child.daemon is True
        (reader,) = [t for t in threading.enumerate() if t.name == "gateway-scoring-stats"]
        assert reader.daemon is True
        assert started.process.alive is True
        assert (started.process.started, started.process.open_traces) == (False, 0)
        assert started.process.last == {"open_traces": 0, "counts": {}, "turns": {}}
    finally:
        started.process.shutdown(5.0)


def test_a_request_fed_reaches_the_child_with_its_spans_time_and_rows(handle: _Handle) -> None:
    """`feed` puts (body, spans, the monotonic time, rows) in the child's inbox."""
    before = time.monotonic()
    assert handle.feed((4, 5), spans=3, echo=True) is True
    after = time.monotonic()
    done, (spans, fed), results = handle.wait_calls(2)[1]
    assert (done, spans, results) == ([4, 5], 3, [])
    assert before <= fed <= after


def test_counts_reports_reach_the_parents_metrics_as_differences(handle: _Handle) -> None:
    """Each counts report adds what changed since the previous one to the parent's metrics
    (late spans, evictions, not scored by reason, lags, scored turns) and becomes `last`;
    a report that counts nothing new adds nothing."""
    handle.feed(send=_counts(1, open_traces=2, counts={"late_spans": 2}, lags=[0.5]))
    _until(lambda: handle.process.started, "the first counts")
    assert handle.process.open_traces == 2
    assert handle.metrics.count("late_spans") == 2 and handle.metrics.count("scored_turns") == 1
    handle.feed(send=_counts(4, counts={"late_spans": 5, "not_scored:unreadable": 3}))
    _until(lambda: handle.metrics.count("scored_turns") == 4, "the second counts")
    assert handle.metrics.count("late_spans") == 5
    assert handle.metrics.count("not_scored:unreadable") == 3
    assert handle.process.open_traces == 0
    same = _counts(4, counts={"late_spans": 5, "not_scored:unreadable": 3}, open_traces=9)
    handle.feed(send=same)
    _until(lambda: handle.process.open_traces == 9, "the third counts")
    assert handle.metrics.count("scored_turns") == 4 and handle.metrics.count("late_spans") == 5
    assert handle.process.last == same


def test_a_report_of_scored_traces_goes_to_on_scored_and_leaves_the_counts(
    handle: _Handle,
) -> None:
    """A report of scored traces (no counts in it) is handed to `on_scored` as it came and
    does not replace the last counts."""
    handle.feed(send=_counts(1, open_traces=1))
    _until(lambda: handle.process.started, "the counts")
    handle.feed(send={"scored": ([], [], [])})
    handle.feed(send={"scored": ([3], ["t1"], ["result"])})
    assert handle.wait_calls(3)[1:] == [([], [], []), ([3], ["t1"], ["result"])]
    assert handle.process.last == _counts(1, open_traces=1)


def test_the_final_counts_end_the_reading_and_are_scored_once(handle: _Handle) -> None:
    """The final message is both: its scored traces go to `on_scored` and its counts become
    `last`; shutdown then says the child ended cleanly."""
    final = FINAL | {"scored": [[8], ["t2"], []], "turns": {"submitted": 2, "scored": 2}}
    handle.feed(at_stop=final)
    started = time.monotonic()
    assert handle.process.shutdown(5.0) is True
    assert time.monotonic() - started < 4.0
    assert handle.calls[-1] == ([8], ["t2"], [])
    assert handle.process.last == final
    assert handle.metrics.count("scored_turns") == 2
    assert handle.process.alive is False


def test_without_a_reader_for_on_scored_the_counts_still_arrive() -> None:
    """With no `on_scored`, reports of scored traces are read past and counts still arrive."""
    metrics = GatewayMetrics(None)
    process = ScoringProcess(scoring_config(), metrics, main=main)
    try:
        process.feed(command(send={"scored": ([1], ["t"], [])}), 1)
        process.feed(command(send=_counts(2)), 1)
        _until(lambda: metrics.count("scored_turns") == 2, "the counts")
    finally:
        assert process.shutdown(5.0) is True


def test_a_full_inbox_refuses_at_once_and_waits_only_when_asked() -> None:
    """The inbox holds `scoring_queue_requests`; beyond, `feed` refuses at once and counts
    the spans as not scored (`scoring_queue_full`); with `wait` it waits for room."""
    small = _Handle(scoring_queue_requests=2)
    try:
        assert small.feed(pause=1.0) is True
        _until(lambda: small.process.queued_requests == 0, "the child takes the pause")
        assert small.feed(echo=True) is True and small.feed(echo=True) is True
        assert small.process.queued_requests == 2
        started = time.monotonic()
        assert small.feed(spans=5, echo=True) is False
        assert time.monotonic() - started < 0.5
        assert small.metrics.count("not_scored:scoring_queue_full") == 5
        assert small.process.feed(command(echo=True), 6, (9,), wait=True) is True
        assert time.monotonic() - started > 0.2
        assert small.wait_calls(4)[3][0] == [9]
    finally:
        assert small.process.shutdown(5.0) is True


def test_a_child_that_exits_is_logged_and_its_spans_counted_as_not_scored(
    handle: _Handle, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that ends on its own is noticed: one error with its exit code says forwarding
    goes on; requests fed afterwards are counted as not scored (`scoring_stopped`), and
    shutdown says it did not end cleanly."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    handle.feed(exit=3)
    _until(lambda: not handle.process.feed(b"", 2), "the parent notices")
    assert handle.process.alive is False
    assert handle.metrics.count("not_scored:scoring_stopped") == 2
    assert _logged(caplog) == [
        "the scoring process exited (code 3); forwarding goes on, traces are no longer scored "
        "(counted as not_scored)"
    ]
    started = time.monotonic()
    assert handle.process.shutdown(5.0) is False
    assert time.monotonic() - started < 2.5  # not the 5 s deadline: the child is gone


def test_a_child_that_exits_at_the_stop_is_not_an_error(
    handle: _Handle, caplog: pytest.LogCaptureFixture
) -> None:
    """A child ending at the stop without its final counts logs no error; shutdown says it
    did not end cleanly, once the reader saw it gone."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    handle.feed(at_stop={"exit": 0})
    assert handle.process.shutdown(5.0) is False
    assert _logged(caplog) == []
    assert handle.metrics.count("not_scored:shutdown") == 0
    assert handle.feed(spans=4, echo=True) is False
    assert handle.metrics.count("not_scored:shutdown") == 4


def test_the_stop_carries_the_time_left_less_half_a_second(handle: _Handle) -> None:
    """The stop gives the child the shutdown's time left less half a second."""
    assert handle.process.shutdown(4.0) is True
    (stop,) = [call for call in handle.calls if call[0] == ["stop"]]
    assert 3.0 < stop[1][0] <= 3.5


def test_a_short_shutdown_still_gives_the_child_half_a_second(handle: _Handle) -> None:
    """However little time is left, the stop gives the child at least half a second."""
    assert handle.process.shutdown(0.8) is True
    (stop,) = [call for call in handle.calls if call[0] == ["stop"]]
    assert stop[1] == [0.5]


def test_a_final_count_not_drained_is_not_a_clean_end(handle: _Handle) -> None:
    """Final counts saying the runner did not drain make shutdown return False."""
    handle.feed(at_stop=FINAL | {"drained": False})
    assert handle.process.shutdown(5.0) is False
    assert handle.process.last["final"] is True


def test_the_stop_waits_for_room_in_a_full_inbox() -> None:
    """A child not reading keeps a one-request inbox full: the stop waits for room and is
    delivered when the child reads again, so it ends cleanly."""
    small = _Handle(scoring_queue_requests=1)
    small.feed(pause=1.0)
    _until(lambda: small.process.queued_requests == 0, "the child takes the pause")
    assert small.feed(echo=True) is True
    started = time.monotonic()
    assert small.process.shutdown(5.0) is True
    assert 0.3 < time.monotonic() - started < 4.0
    assert [call[0] for call in small.calls[1:]] == [[], ["stop"]]


def test_a_child_that_hangs_is_killed_at_the_deadline(caplog: pytest.LogCaptureFixture) -> None:
    """A child that never answers the stop (nor reads a full inbox) is killed when the
    deadline passes, with a warning; shutdown says it did not end cleanly."""
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    for flags, pause in (({}, False), ({"scoring_queue_requests": 1}, True)):
        caplog.clear()
        hung = _Handle(**flags)
        if pause:  # the child stops reading and its one-request inbox is full
            hung.feed(pause=30.0)
            _until(lambda: hung.process.queued_requests == 0, "the child pauses")  # noqa: B023
            assert hung.feed(echo=True) is True
        else:  # the child reads the stop and does not answer it
            hung.feed(at_stop=None)
        started = time.monotonic()
        assert hung.process.shutdown(1.0) is False
        assert 0.9 < time.monotonic() - started < 3.0
        assert hung.process.alive is False
        assert _logged(caplog) == [
            "the scoring process did not finish before the deadline; stopping it"
        ]


def test_a_waiting_feed_gives_up_after_five_seconds() -> None:
    """A replay's feed (`wait`) waits for room at most 5 s, then counts the spans as not
    scored (`scoring_queue_full`) like any full inbox."""
    stuck = _Handle(scoring_queue_requests=1)
    try:
        stuck.feed(pause=30.0)
        _until(lambda: stuck.process.queued_requests == 0, "the child takes the pause")
        assert stuck.feed(echo=True) is True
        started = time.monotonic()
        assert stuck.process.feed(command(echo=True), 7, (), wait=True) is False
        assert 4.9 < time.monotonic() - started < 5.9
        assert stuck.metrics.count("not_scored:scoring_queue_full") == 7
    finally:
        stuck.process.shutdown(0.5)


def test_past_the_deadline_shutdown_waits_no_longer_for_the_final_counts() -> None:
    """When the stop could not be put before the deadline (the inbox stayed full), shutdown
    does not wait on for final counts: it kills the child at once."""
    stuck = _Handle(scoring_queue_requests=1)
    stuck.feed(pause=30.0)
    _until(lambda: stuck.process.queued_requests == 0, "the child takes the pause")
    assert stuck.feed(echo=True) is True
    started = time.monotonic()
    assert stuck.process.shutdown(0.5) is False
    assert time.monotonic() - started < 1.3
    assert stuck.process.alive is False
