"""Where the runner's evaluations run (`runner._execution`, `runner._threads`): the thread pool,
the setup of groundwire's threads, warm-up, and the executors' rules for hung and failed calls."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value

from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig, TokenBudget
from groundwire.runner._threads import (
    ThreadPool,
    background_thread_setup,
    suppress_instrumentation,
    warm_up_evaluators,
)

from .conftest import AnswerLength, Hangs, HasContext, Judge, Telemetry, make_turn

_T = TypeVar("_T")


def _on_thread(target: Callable[[], _T]) -> _T:
    """Run `target` on a fresh thread and return what it returned."""
    result: list[_T] = []
    thread = threading.Thread(target=lambda: result.append(target()))
    thread.start()
    thread.join(5)
    return result[0]


def test_suppress_instrumentation_marks_the_thread_context() -> None:
    """After suppress_instrumentation the thread's context suppresses instrumentation."""

    def check() -> tuple[object, object]:
        before = get_value(_SUPPRESS_INSTRUMENTATION_KEY)
        suppress_instrumentation()
        return before, get_value(_SUPPRESS_INSTRUMENTATION_KEY)

    assert _on_thread(check) == (None, True)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux-only")
def test_background_thread_setup_lowers_the_threads_priority_by_ten() -> None:
    """A groundwire thread runs 10 nice levels below the app (at most 19) and is not traced."""

    def check() -> tuple[int, int, object]:
        thread_id = threading.get_native_id()
        before = os.getpriority(os.PRIO_PROCESS, thread_id)
        background_thread_setup()
        after = os.getpriority(os.PRIO_PROCESS, thread_id)
        return before, after, get_value(_SUPPRESS_INSTRUMENTATION_KEY)

    before, after, suppressed = _on_thread(check)
    assert after == min(19, before + 10)
    assert suppressed is True

    def from_fifteen() -> int:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)
        background_thread_setup()
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    assert _on_thread(from_fifteen) == 19


def test_thread_pool_numbers_its_daemon_workers() -> None:
    """Each started worker runs `work(n)` on a daemon thread named after n, counting up."""
    seen: list[tuple[int, str, bool]] = []
    done = threading.Event()

    def work(worker_id: int) -> None:
        current = threading.current_thread()
        seen.append((worker_id, current.name, current.daemon))
        if len(seen) == 2:
            done.set()

    pool = ThreadPool(work)
    pool.start_worker()
    pool.start_worker()
    assert done.wait(5)
    pool.join(1)
    assert sorted(seen) == [
        (0, "groundwire-worker-0", True),
        (1, "groundwire-worker-1", True),
    ]


def test_thread_pool_join_keeps_one_budget_for_all_threads() -> None:
    """join(budget) waits for quick threads, but gives up on hung ones after the budget in
    all, not per thread; the calling thread itself is skipped."""
    release = threading.Event()
    pool = ThreadPool(lambda worker_id: None)
    quick = pool.spawn(lambda: time.sleep(0.05), "quick")

    def hung() -> None:
        release.wait(10)

    for i in range(3):
        pool.spawn(hung, f"hung-{i}")
    started = time.monotonic()
    pool.join(0.3)
    took = time.monotonic() - started
    release.set()
    assert not quick.is_alive()
    assert 0.25 <= took < 0.8
    inner: list[float] = []
    own = ThreadPool(lambda worker_id: None)

    def join_own() -> None:
        inner.append(_timed(lambda: own.join(5)))

    own.spawn(join_own, "joins-itself").join(5)
    assert inner and inner[0] < 1.0


def _timed(call: Callable[[], object]) -> float:
    """Seconds `call` took."""
    started = time.monotonic()
    call()
    return time.monotonic() - started


class _Ours:
    """A sync evaluator presented as one of groundwire's own (warm-up calls only those)."""

    name = "ours"

    def __init__(self, raises: bool = False) -> None:
        self.calls = 0
        self.raises = raises

    def evaluate(self, turn: RagTurn) -> Score:
        """Count the call; raise when told to."""
        self.calls += 1
        if self.raises:
            raise RuntimeError("not loaded")
        return Score(name=self.name, value=1.0)


_Ours.__module__ = "groundwire.evaluators.test_double"


class _Theirs(_Ours):
    """A user's evaluator (warm-up never calls it)."""

    name = "theirs"


_Theirs.__module__ = "someone_else.evaluators"


class _OursAsync:
    """An async evaluator of groundwire's own (warm-up skips it: it would call a judge)."""

    name = "ours_async"

    def __init__(self) -> None:
        self.calls = 0

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Count the call."""
        self.calls += 1
        return Score(name=self.name, value=1.0)


_OursAsync.__module__ = "groundwire.evaluators.test_double"


def test_warm_up_runs_only_groundwires_own_sync_evaluators(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Our sync evaluators run once (a raising one is logged at debug); users' and async ones
    are never called."""
    ours, failing, theirs, asynchronous = _Ours(), _Ours(raises=True), _Theirs(), _OursAsync()
    failing.name = "failing"
    with caplog.at_level(logging.DEBUG, logger="groundwire.runner"):
        warm_up_evaluators([ours, failing, theirs, asynchronous])
    assert (ours.calls, failing.calls, theirs.calls, asynchronous.calls) == (1, 1, 0, 0)
    assert [r.getMessage() for r in caplog.records if r.name == "groundwire.runner"] == [
        "warm-up of failing raised; it will load on first use"
    ]


def test_a_hung_call_is_scored_as_a_timeout_naming_the_limit(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """The abandoned call's score says it gave no result within the timeout; the warning names
    the evaluator; the turn's next evaluator still runs."""
    hangs = Hangs()
    config = RunnerConfig([hangs, AnswerLength()], workers=1, evaluator_timeout_s=0.2)
    runner = BackgroundRunner(config, emitter)
    try:
        with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
            runner.submit(make_turn(1))
            assert runner.force_flush(5)
        (span,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
        texts = [str(v) for v in (span.attributes or {}).values()]
        texts += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        assert "TimeoutError: no result within 0.2 s" in texts, texts
        assert "evaluator 'hangs' gave no result within 0.2 s; abandoned" in caplog.text
        assert telemetry.counts() == {("hangs", "error"): 1, ("answer_length", "ok"): 1}
        (duration,) = [
            p
            for p in telemetry.points(semconv.METRIC_EVALUATION_DURATION)
            if p.attributes[semconv.GEN_AI_EVALUATION_NAME] == "hangs"
        ]
        assert 0.2 <= duration.sum < 2.0
    finally:
        hangs.release.set()
        runner.shutdown(1)


def test_replacement_workers_stop_at_four_hung_calls_per_worker(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """Each hung call's worker is replaced, up to 4 per configured worker; past that the
    runner says so and starts no more threads."""
    hangs = Hangs()
    config = RunnerConfig([hangs], workers=1, evaluator_timeout_s=0.05)
    before = set(threading.enumerate())
    runner = BackgroundRunner(config, emitter)
    try:
        with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
            for i in range(6):
                runner.submit(make_turn(i))
            deadline = time.monotonic() + 10
            while telemetry.counts().get(("hangs", "error"), 0) < 5:
                assert time.monotonic() < deadline, telemetry.counts()
                time.sleep(0.02)
            time.sleep(0.2)
        workers = [
            t
            for t in threading.enumerate()
            if t not in before and t.name.startswith("groundwire-worker")
        ]
        assert len(workers) == 5  # the first worker and four replacements, all hung
        assert hangs.calls == 5
        assert "too many evaluator calls are hung" in caplog.text
    finally:
        hangs.release.set()
        runner.shutdown(1)


def test_no_worker_is_replaced_once_shutdown_stopped_the_runner(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A call that hangs past shutdown is abandoned without starting a new worker."""
    hangs = Hangs()
    config = RunnerConfig([hangs], workers=1, evaluator_timeout_s=0.3)
    before = set(threading.enumerate())
    runner = BackgroundRunner(config, emitter)
    try:
        runner.submit(make_turn(1))
        deadline = time.monotonic() + 5
        while hangs.calls == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        runner.shutdown(0.05)
        time.sleep(0.6)  # past the timeout: the watchdog (if still running) would act now
        started = [t for t in threading.enumerate() if t not in before]
        assert [t.name for t in started if t.name.startswith("groundwire-worker")] == [
            "groundwire-worker-0"
        ]
    finally:
        hangs.release.set()


def test_without_a_timeout_no_watchdog_is_started(emitter: Emitter) -> None:
    """evaluator_timeout_s=None: nothing watches the calls (there is no deadline)."""
    before = set(threading.enumerate())
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], evaluator_timeout_s=None), emitter)
    try:
        names = {t.name for t in threading.enumerate() if t not in before}
        assert "groundwire-watchdog" not in names
        runner.submit(make_turn(1))
        assert runner.force_flush(5) and runner.stats().scored == 1
    finally:
        runner.shutdown(1)


def test_async_judges_run_on_their_loop_and_sync_ones_first(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A turn with sync and async evaluators gets every result on one carrier span."""
    config = RunnerConfig([AnswerLength(), Judge(), HasContext()])
    runner = BackgroundRunner(config, emitter)
    try:
        for i in range(3):
            runner.submit(make_turn(i))
        assert runner.force_flush(5)
        assert runner.stats().scored == 3
        for span in telemetry.finished(semconv.EVALUATION_SPAN_NAME):
            names = [(e.attributes or {}).get(semconv.GEN_AI_EVALUATION_NAME) for e in span.events]
            assert names == ["answer_length", "has_context", "judge"]
    finally:
        runner.shutdown(1)


def test_a_spent_budget_skips_judges_before_they_wait_for_a_slot(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """With the budget spent, each judge is skipped and counted once; the turn still scores
    its sync evaluators."""
    budget = TokenBudget(100)
    budget.spend(100)
    runner = BackgroundRunner(RunnerConfig([AnswerLength(), Judge()]), emitter, budget=budget)
    try:
        for i in range(4):
            runner.submit(make_turn(i))
        assert runner.force_flush(5)
        assert telemetry.counts() == {
            ("answer_length", semconv.OUTCOME_OK): 4,
            ("judge", semconv.OUTCOME_SKIPPED): 4,
        }
    finally:
        runner.shutdown(1)


def test_judge_tokens_are_spent_from_the_budget(emitter: Emitter) -> None:
    """Each judge call spends its reported tokens (input plus output) from the budget."""
    budget = TokenBudget(10_000)
    runner = BackgroundRunner(RunnerConfig([Judge(tokens=(30, 12))]), emitter, budget=budget)
    try:
        for i in range(3):
            runner.submit(make_turn(i))
        assert runner.force_flush(5)
        assert budget.used() == 3 * 42
    finally:
        runner.shutdown(1)


class _ExitsTheProcess:
    """A sync evaluator that ends the worker process it runs in."""

    name = "exits"

    def evaluate(self, turn: RagTurn) -> Score:
        """End this process at once."""
        os._exit(3)


class _SleepsInTheProcess:
    """A sync evaluator that takes 10 s (past any timeout the test sets)."""

    name = "sleeps"

    def evaluate(self, turn: RagTurn) -> Score:
        """Sleep, then score."""
        time.sleep(10)
        return Score(name=self.name, value=1.0)


@pytest.mark.usefixtures("reaped")
def test_a_dead_worker_process_fails_each_evaluation_of_the_turn_with_its_error(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """When the process dies mid-call, every evaluator of that round trip is scored as failed
    with the process's error; the app's own thread is untouched."""
    config = RunnerConfig([_ExitsTheProcess(), HasContext()], executor="process", workers=1)
    runner = BackgroundRunner(config, emitter)
    try:
        runner.submit(make_turn(1))
        assert runner.force_flush(60)
        assert runner.stats().errored == 1
        assert telemetry.counts() == {("exits", "error"): 1, ("has_context", "error"): 1}
        (span,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
        texts = [str(v) for v in (span.attributes or {}).values()]
        assert "RuntimeError: the evaluation worker process exited" in texts, texts
    finally:
        runner.shutdown(1)


@pytest.mark.usefixtures("reaped")
def test_a_worker_process_call_past_the_timeout_is_a_timeout_naming_the_limit(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A round trip longer than evaluator_timeout_s scores each of its evaluators as a
    TimeoutError that names the limit, with the time waited as its duration."""
    config = RunnerConfig(
        [_SleepsInTheProcess(), HasContext()],
        executor="process",
        workers=1,
        evaluator_timeout_s=0.5,
    )
    runner = BackgroundRunner(config, emitter)
    try:
        runner.submit(make_turn(1))
        assert runner.force_flush(60)
        assert telemetry.counts() == {("sleeps", "error"): 1, ("has_context", "error"): 1}
        (span,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
        texts = [str(v) for v in (span.attributes or {}).values()]
        assert "TimeoutError: no result within 0.5 s" in texts, texts
        durations = telemetry.points(semconv.METRIC_EVALUATION_DURATION)
        assert len(durations) == 2 and all(p.sum >= 0.5 for p in durations)
    finally:
        runner.shutdown(1)


@pytest.mark.usefixtures("reaped")
def test_the_worker_process_runs_only_the_turns_remaining_sync_evaluators(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Sync evaluators go to the process in one round trip, async judges to the loop; a turn
    with none left for the process is not sent there."""
    judge = Judge()
    config = RunnerConfig(
        [HasContext(), judge, AnswerLength()],
        executor="process",
        evaluator_sample_rates={"has_context": 0.0, "answer_length": 0.0},
    )
    runner = BackgroundRunner(config, emitter)
    try:
        runner.submit(make_turn(1))
        assert runner.force_flush(60)
        assert telemetry.counts() == {
            ("has_context", semconv.OUTCOME_SAMPLED_OUT): 1,
            ("answer_length", semconv.OUTCOME_SAMPLED_OUT): 1,
            ("judge", semconv.OUTCOME_OK): 1,
        }
        assert judge.calls == 1
    finally:
        runner.shutdown(1)


def _callback_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Errors of a future's or the event loop's callbacks, and the runner's own (other tests'
    garbage, such as a collected task of a loop closed long ago, is not this test's)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR
        and (
            r.name in ("concurrent.futures", "groundwire.runner")
            or r.getMessage().startswith("Exception in callback")
        )
    ]


class _SlowJudge(Judge):
    """An async judge still waiting when the test shuts the runner down."""

    name = "slow_judge"

    def __init__(self) -> None:
        super().__init__(delay_s=30.0)


def test_the_event_loop_thread_is_named_and_ends_at_shutdown(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """Async judges run on a thread called groundwire-async; shutdown cancels a judge still
    waiting and ends the thread, with nothing logged as an error."""
    before = set(threading.enumerate())
    judge = _SlowJudge()
    runner = BackgroundRunner(RunnerConfig([judge], workers=1), emitter)
    (loop_thread,) = [t for t in threading.enumerate() if t not in before and "async" in t.name]
    assert loop_thread.name == "groundwire-async"
    with caplog.at_level(logging.DEBUG):
        runner.submit(make_turn(1))
        deadline = time.monotonic() + 5
        while judge.calls == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        runner.shutdown(0.1)
        loop_thread.join(2)
    assert not loop_thread.is_alive()
    assert runner.stats().dropped == 1
    assert _callback_errors(caplog) == []


def test_a_turn_whose_judges_were_all_sampled_out_is_finished_by_its_worker(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """With no async evaluation left, the worker thread finishes the turn itself (the event
    loop is not involved); judged turns are finished on the loop, with no callback error."""
    finished_on: dict[str, str] = {}

    def on_finished(turn: RagTurn, outcome: str) -> None:
        finished_on[turn.query] = threading.current_thread().name

    config = RunnerConfig(
        [AnswerLength(), Judge()], workers=1, evaluator_sample_rates={"judge": 0.0}
    )
    runner = BackgroundRunner(config, emitter, on_finished=on_finished)
    judged = BackgroundRunner(RunnerConfig([Judge()], workers=1), emitter, on_finished=on_finished)
    try:
        with caplog.at_level(logging.DEBUG):
            runner.submit(make_turn(1))
            judged.submit(make_turn(2))
            assert runner.force_flush(5) and judged.force_flush(5)
        assert finished_on == {
            "question 1": "groundwire-worker-0",
            "question 2": "groundwire-async",
        }
        assert _callback_errors(caplog) == []
    finally:
        runner.shutdown(1)
        judged.shutdown(1)


def test_a_hung_second_evaluator_is_not_run_again_by_the_replacement_worker(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """The rest of a turn after its hung call resumes past that call: the hung evaluator is
    called once, the one before it is not run twice; the warning says exactly what happened."""
    hangs = Hangs()
    config = RunnerConfig([AnswerLength(), hangs, HasContext()], workers=1, evaluator_timeout_s=0.2)
    runner = BackgroundRunner(config, emitter)
    try:
        with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
            runner.submit(make_turn(1))
            assert runner.force_flush(5)
        assert hangs.calls == 1
        assert telemetry.counts() == {
            ("answer_length", "ok"): 1,
            ("hangs", "error"): 1,
            ("has_context", "ok"): 1,
        }
        assert [r.getMessage() for r in caplog.records if r.name == "groundwire.runner"] == [
            "evaluator 'hangs' gave no result within 0.2 s; abandoned"
        ]
    finally:
        hangs.release.set()
        runner.shutdown(1)


def test_a_judge_waiting_for_a_slot_is_skipped_once_the_budget_is_spent(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """The budget is checked again after the wait for a concurrency slot: the first judge call
    spends it, so the judge queued behind it is skipped, not run."""
    budget = TokenBudget(100)
    config = RunnerConfig([Judge(delay_s=0.2)], workers=1, async_concurrency=1)
    runner = BackgroundRunner(config, emitter, budget=budget)
    try:
        runner.submit(make_turn(1))
        runner.submit(make_turn(2))
        assert runner.force_flush(5)
        assert telemetry.counts() == {
            ("judge", semconv.OUTCOME_OK): 1,
            ("judge", semconv.OUTCOME_SKIPPED): 1,
        }
    finally:
        runner.shutdown(1)


class _ReadsTheTurn:
    """An async evaluator scoring the answer's length (so it must be given the turn)."""

    name = "reads"

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Score len(answer) / 100."""
        return Score(name=self.name, value=len(turn.answer) / 100)


def test_async_evaluators_are_given_the_turn(telemetry: Telemetry, emitter: Emitter) -> None:
    """The event loop passes each async evaluator the turn it scores."""
    runner = BackgroundRunner(RunnerConfig([_ReadsTheTurn()]), emitter)
    try:
        runner.submit(make_turn(1, answer="x" * 42))
        assert runner.force_flush(5)
        (point,) = telemetry.points(semconv.METRIC_EVALUATION_SCORE)
        assert point.sum == 0.42
    finally:
        runner.shutdown(1)


class _SeesTheTurn(_Ours):
    """One of groundwire's own evaluators keeping the turn it was given."""

    name = "sees"

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[RagTurn] = []

    def evaluate(self, turn: RagTurn) -> Score:
        """Keep the turn, then score."""
        self.turns.append(turn)
        return super().evaluate(turn)


_SeesTheTurn.__module__ = "groundwire.evaluators.test_double"


def test_warm_up_goes_past_skipped_evaluators_and_gives_a_real_turn() -> None:
    """A user's or async evaluator first does not end the warm-up; ours gets a made-up turn
    with a query, a context and a quoting answer."""
    sees = _SeesTheTurn()
    warm_up_evaluators([_Theirs(), _OursAsync(), sees])
    (turn,) = sees.turns
    assert turn.query and turn.contexts and '"' in turn.answer
