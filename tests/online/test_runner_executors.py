"""The thread executor (`runner._execution.InThread`) driven directly, without a
`BackgroundRunner`: real admission, thread pool and evaluators, with the runner's `record`
replaced by a list the test reads. Fast (well under a second a test), so that mutation testing
can run them for each mutant of the executor; `test_runner_executors_loop.py` does the same for
the event loop and the worker process."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator

import pytest

from groundwire._evaluator import AnyEvaluator
from groundwire.emit import Emitter
from groundwire.runner import RunnerConfig
from groundwire.runner._admission import Admission
from groundwire.runner._emission import Emission
from groundwire.runner._execution import InThread, Step
from groundwire.runner._jobs import Job
from groundwire.runner._threads import ThreadPool

from .conftest import AnswerLength, Hangs, HasContext, make_turn
from .executor_kit import Seen, planned_job, threads_named, wait_for


def _in_thread(
    emitter: Emitter,
    evaluators: list[AnyEvaluator],
    *,
    timeout_s: float | None,
    watch: bool = True,
    workers: int = 1,
) -> tuple[InThread, Admission, ThreadPool, Seen]:
    """An InThread executor over real admission and pool, and what it hands back."""
    config = RunnerConfig(evaluators, workers=workers, evaluator_timeout_s=timeout_s)
    names = tuple(e.name for e in evaluators)
    admission = Admission(config, Emission(emitter, names, names), has_work=True)
    seen = Seen()
    pool = ThreadPool(seen.work)
    executor = InThread(admission, pool, seen.record, timeout_s=timeout_s, watch=watch)
    return executor, admission, pool, seen


def test_in_thread_runs_the_remaining_sync_evaluators_in_order(emitter: Emitter) -> None:
    """Each evaluator from `next_sync` on runs once, in order, and is recorded with its score;
    the job goes on to the next executor."""
    evaluators: list[AnyEvaluator] = [HasContext(), AnswerLength(), HasContext()]
    evaluators[2].name = "again"  # type: ignore[misc]
    executor, _, _, seen = _in_thread(emitter, evaluators, timeout_s=None)
    job = planned_job(make_turn(1), evaluators, [])
    job.next_sync = 1
    assert executor.run(job, 0) is Step.CONTINUE
    assert [name for _, name, _ in seen.records] == ["answer_length", "again"]
    assert job.next_sync == 3
    assert all(j is job and not o.raised for j, _, o in seen.records)
    assert [o.score.value for _, _, o in seen.records] == [0.09, 1.0]


def test_in_thread_runs_nothing_for_a_finished_job(emitter: Emitter) -> None:
    """A job already finished elsewhere runs no evaluator."""
    executor, _, _, seen = _in_thread(emitter, [HasContext()], timeout_s=None)
    job = planned_job(make_turn(1), [HasContext()], [])
    job.done = True
    assert executor.run(job, 0) is Step.CONTINUE
    assert seen.records == [] and job.next_sync == 0


def test_in_thread_without_a_timeout_or_watch_starts_no_watchdog(emitter: Emitter) -> None:
    """The watchdog thread starts only when asked to watch and there is a timeout."""
    before = len(threads_named("groundwire-watchdog"))
    _in_thread(emitter, [HasContext()], timeout_s=None, watch=True)
    _in_thread(emitter, [HasContext()], timeout_s=5.0, watch=False)
    assert len(threads_named("groundwire-watchdog")) == before


def test_in_thread_watchdog_is_named_and_stops_on_close(emitter: Emitter) -> None:
    """With a timeout the watchdog runs as `groundwire-watchdog` and ends soon after close()."""
    before = set(threads_named("groundwire-watchdog"))
    executor, _, _, _ = _in_thread(emitter, [HasContext()], timeout_s=5.0)
    (watchdog,) = set(threads_named("groundwire-watchdog")) - before
    executor.close()
    watchdog.join(2.0)
    assert not watchdog.is_alive()


@pytest.fixture
def hangs() -> Iterator[Hangs]:
    """A hanging evaluator, released at the end of the test."""
    evaluator = Hangs()
    yield evaluator
    evaluator.release.set()


def _run_on_thread(executor: InThread, job: Job, worker_id: int) -> list[Step]:
    """Start `executor.run(job)` on a thread of its own; its Step lands in the list."""
    steps: list[Step] = []
    threading.Thread(target=lambda: steps.append(executor.run(job, worker_id)), daemon=True).start()
    return steps


def test_a_hung_call_is_abandoned_recorded_requeued_and_replaced(
    emitter: Emitter, hangs: Hangs, caplog: pytest.LogCaptureFixture
) -> None:
    """Past its timeout a sync call is recorded as a raised TimeoutError naming the limit (with
    the time waited), the job moves past it to the head of the queue, a new worker starts, and
    the stuck thread returns ABANDONED (without recording) once the call comes back."""
    executor, admission, _, seen = _in_thread(emitter, [hangs, HasContext()], timeout_s=0.1)
    job = planned_job(make_turn(1), [hangs, HasContext()], [])
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        started = time.monotonic()
        steps = _run_on_thread(executor, job, 7)
        wait_for(lambda: seen.workers)
    waited = time.monotonic() - started
    ((recorded_job, name, outcome),) = seen.records
    assert recorded_job is job and name == "hangs" and outcome.raised
    assert outcome.score.error == "TimeoutError: no result within 0.1 s"
    assert math.isnan(outcome.score.value)
    assert 0.1 <= outcome.duration_s <= waited
    assert job.next_sync == 1 and admission.queue_size() == 1
    assert seen.workers == [0]
    assert "evaluator 'hangs' gave no result within 0.1 s; abandoned" in caplog.messages
    assert steps == []
    hangs.release.set()
    wait_for(lambda: steps)
    assert steps == [Step.ABANDONED] and len(seen.records) == 1 and job.next_sync == 1
    executor.close()


def test_the_watchdog_looks_often_for_a_short_timeout(emitter: Emitter, hangs: Hangs) -> None:
    """A call is abandoned within a few tenths of a second of its timeout (the watchdog looks
    every tenth of the timeout, never less than every 10 ms or more than every 250 ms)."""
    executor, _, _, seen = _in_thread(emitter, [hangs], timeout_s=0.05)
    started = time.monotonic()
    _run_on_thread(executor, planned_job(make_turn(1), [hangs], []), 0)
    wait_for(lambda: seen.records)
    assert time.monotonic() - started < 1.0
    executor.close()


def test_a_thread_back_from_a_hung_call_no_longer_counts_as_stuck(
    emitter: Emitter, hangs: Hangs
) -> None:
    """Workers are replaced for up to four stuck calls per worker: one that came back (and
    exited) frees its place, so hang-and-return forever keeps being replaced."""
    executor, _, _, seen = _in_thread(emitter, [hangs], timeout_s=0.05)
    for round_ in range(1, 4):
        hangs.release.clear()
        steps = _run_on_thread(executor, planned_job(make_turn(round_), [hangs], []), round_)
        wait_for(lambda: len(seen.workers) == round_)  # noqa: B023 - used at once
        hangs.release.set()
        wait_for(lambda: steps)  # noqa: B023 - used at once
    assert seen.workers == [0, 1, 2]
    executor.close()


def test_past_four_stuck_calls_per_worker_no_worker_is_started_and_it_is_logged(
    emitter: Emitter, hangs: Hangs, caplog: pytest.LogCaptureFixture
) -> None:
    """With one worker, four calls stuck one after another are each replaced; the fifth is
    abandoned and recorded, but not replaced, and an error says why (once)."""
    executor, _, _, seen = _in_thread(emitter, [hangs], timeout_s=0.05)
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        for i in range(5):
            _run_on_thread(executor, planned_job(make_turn(i), [hangs], []), i)
            wait_for(lambda: len(seen.records) == i + 1)  # noqa: B023 - used at once
    assert seen.workers == [0, 1, 2, 3]
    too_many = "too many evaluator calls are hung; not starting more worker threads"
    assert caplog.messages.count(too_many) == 1
    executor.close()


def test_a_hung_call_after_shutdown_started_is_not_replaced(emitter: Emitter, hangs: Hangs) -> None:
    """Once shutdown stopped admission no replacement worker starts; the call is still
    recorded as a timeout."""
    executor, admission, _, seen = _in_thread(emitter, [hangs], timeout_s=0.05)
    admission.stop()
    _run_on_thread(executor, planned_job(make_turn(1), [hangs], []), 0)
    wait_for(lambda: seen.records)
    time.sleep(0.1)
    assert seen.workers == []
    executor.close()


def test_a_stuck_thread_that_returns_frees_exactly_one_place(emitter: Emitter) -> None:
    """Four calls stuck at once on one worker are each replaced; when one of them returns, one
    more stuck call is replaced and the one after it is not (the bound is four stuck at once)."""
    stuck = [Hangs() for _ in range(6)]
    executor, _, _, seen = _in_thread(emitter, list(stuck[:1]), timeout_s=0.05)
    try:
        for i in range(4):
            _run_on_thread(executor, planned_job(make_turn(i), [stuck[i]], []), i)
            wait_for(lambda: len(seen.records) == i + 1)  # noqa: B023 - used at once
        stuck[0].release.set()
        time.sleep(0.1)  # its thread comes back and exits
        for i in (4, 5):
            _run_on_thread(executor, planned_job(make_turn(i), [stuck[i]], []), i)
            wait_for(lambda: len(seen.records) == i + 1)  # noqa: B023 - used at once
        assert seen.workers == [0, 1, 2, 3, 4]
    finally:
        for hung in stuck:
            hung.release.set()
        executor.close()


def test_the_bound_on_stuck_calls_grows_with_the_workers(emitter: Emitter, hangs: Hangs) -> None:
    """Four stuck calls per configured worker: with two workers, eight are replaced, not the
    ninth."""
    executor, _, _, seen = _in_thread(emitter, [hangs], timeout_s=0.05, workers=2)
    try:
        for i in range(9):
            _run_on_thread(executor, planned_job(make_turn(i), [hangs], []), i)
            wait_for(lambda: len(seen.records) == i + 1)  # noqa: B023 - used at once
        assert seen.workers == list(range(8))
    finally:
        executor.close()


class _CountsWaits(threading.Event):
    """A stop event that keeps each timeout it is waited on with."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        """Note the timeout, then wait."""
        self.timeouts.append(timeout)
        return super().wait(timeout)


@pytest.mark.parametrize(
    ("timeout_s", "tick_s"), [(0.05, 0.01), (0.001, 0.01), (1.0, 0.1), (10.0, 0.25)]
)
def test_the_watchdog_looks_every_tenth_of_the_timeout_within_bounds(
    emitter: Emitter, timeout_s: float, tick_s: float
) -> None:
    """The watchdog wakes every tenth of the evaluator timeout, but never more often than every
    10 ms nor less often than every 250 ms (so a hung call is noticed promptly, cheaply)."""
    executor, _, _, _ = _in_thread(emitter, [HasContext()], timeout_s=timeout_s)
    counting = _CountsWaits()
    executor._stop = counting  # the watchdog looks its stop event up on each turn
    try:
        wait_for(lambda: len(counting.timeouts) >= 1)
        assert counting.timeouts[0] == pytest.approx(tick_s)
    finally:
        counting.set()
        executor.close()


def test_each_sync_evaluator_runs_once_then_the_job_goes_on(emitter: Emitter) -> None:
    """Three evaluators from the start: three records, and run() returns (it never runs one
    evaluator again)."""
    evaluators: list[AnyEvaluator] = [HasContext(), AnswerLength()]
    executor, _, _, seen = _in_thread(emitter, evaluators, timeout_s=None)
    job = planned_job(make_turn(1), [*evaluators, evaluators[0]], [])
    steps = _run_on_thread(executor, job, 0)
    wait_for(lambda: steps, limit_s=2.0)
    assert [name for _, name, _ in seen.records] == ["has_context", "answer_length", "has_context"]
    assert job.next_sync == 3
