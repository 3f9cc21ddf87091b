"""The app's hand-off to the background runner: no lock while a worker is busy, nothing lost.

`submit` appends to an inbox that the workers empty and count; these tests pin what that must
keep: the app thread never waits for the runner's lock, every turn handed over is counted
exactly once (also when many threads submit across a shutdown), and the metric points agree.
"""

from __future__ import annotations

import threading
import time

from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig

from .conftest import AnswerLength, Telemetry, make_turn, random_turn


class _Busy:
    """A sync evaluator that says when it started and holds the worker until released."""

    name = "busy"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        """Score the turn once released."""
        self.entered.set()
        self.release.wait(10)
        return Score(name=self.name, value=1.0)


def test_submit_does_not_wait_for_the_runners_lock_while_a_worker_is_busy(
    emitter: Emitter,
) -> None:
    """With the only worker busy and the runner's lock held elsewhere (as a worker holds it to
    record a result), 50 submits still return at once; every turn is then scored and counted."""
    busy = _Busy()
    runner = BackgroundRunner(RunnerConfig([busy], workers=1, max_queue_size=100), emitter)
    lock_taken, lock_release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        """Hold the runner's lock until told to let go."""
        with runner._cond:
            lock_taken.set()
            lock_release.wait(10)

    accepted: list[bool] = []
    holder = threading.Thread(target=hold_lock)
    try:
        assert runner.submit(make_turn(0))
        assert busy.entered.wait(5)
        holder.start()
        assert lock_taken.wait(5)
        submitter = threading.Thread(
            target=lambda: accepted.extend(runner.submit(make_turn(i)) for i in range(1, 51))
        )
        submitter.start()
        submitter.join(2)
        returned = not submitter.is_alive()
    finally:
        lock_release.set()
        holder.join(5)
        busy.release.set()
    assert returned, "submit waited for the runner's lock"
    assert accepted == [True] * 50
    assert runner.force_flush(10)
    stats = runner.stats()
    assert (stats.submitted, stats.scored, stats.in_flight) == (51, 51, 0)
    runner.shutdown(1)


def test_threads_submitting_across_a_shutdown_lose_no_turn(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Four app threads submit without pause (half sampled out, a small queue that drops)
    before, during and after a shutdown: every call is counted once, and the metric points
    per outcome equal the turn counts."""
    config = RunnerConfig([AnswerLength()], workers=1, max_queue_size=20, sample_rate=0.5)
    runner = BackgroundRunner(config, emitter)
    pool = [random_turn() for _ in range(1_000)]
    threads_n = 4
    calls = [0] * threads_n
    start, stop = threading.Barrier(threads_n + 1), threading.Event()

    def app(n: int) -> None:
        """Submit turns until told to stop; count the calls."""
        start.wait()
        while not stop.is_set():
            runner.submit(pool[calls[n] % len(pool)])
            calls[n] += 1

    threads = [threading.Thread(target=app, args=(n,)) for n in range(threads_n)]
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(0.05)
    runner.shutdown(0.05)
    after_shutdown = sum(calls)
    time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert sum(calls) > after_shutdown  # turns really were handed over after the shutdown
    stats = runner.stats()
    assert stats.submitted == sum(calls)
    assert stats.in_flight == 0
    assert stats.scored + stats.dropped + stats.sampled_out == stats.submitted
    # (scored may be 0: four CPU-bound app threads leave the niced worker little time)
    assert stats.dropped > 0 and stats.sampled_out > 0
    expected = {
        ("answer_length", semconv.OUTCOME_OK): stats.scored,
        ("answer_length", semconv.OUTCOME_DROPPED): stats.dropped,
        ("answer_length", semconv.OUTCOME_SAMPLED_OUT): stats.sampled_out,
    }
    assert telemetry.counts() == {key: n for key, n in expected.items() if n}


def test_sampled_out_turns_reach_the_metrics_without_a_flush(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Sampled-out turns wake no worker, yet an idle worker counts them in the metrics within
    about a second, with no call to stats(), force_flush() or shutdown()."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], sample_rate=0.0), emitter)
    try:
        for i in range(10):
            assert runner.submit(make_turn(i)) is False
        deadline = time.monotonic() + 5
        while telemetry.counts() != {("answer_length", semconv.OUTCOME_SAMPLED_OUT): 10}:
            assert time.monotonic() < deadline, telemetry.counts()
            time.sleep(0.05)
    finally:
        runner.shutdown(1)


def test_an_idle_worker_is_woken_by_each_turn(telemetry: Telemetry, emitter: Emitter) -> None:
    """A turn handed to an idle runner is scored at once, not at the worker's next 1 s tick:
    five turns one after another, each scored within 0.4 s (by the metrics alone)."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    try:
        for i in range(5):
            time.sleep(0.05)  # the worker is waiting again
            handed = time.monotonic()
            assert runner.submit(make_turn(i))
            while telemetry.counts().get(("answer_length", semconv.OUTCOME_OK)) != i + 1:
                assert time.monotonic() - handed < 0.4, f"turn {i} not scored within 0.4 s"
                time.sleep(0.005)
    finally:
        runner.shutdown(1)
