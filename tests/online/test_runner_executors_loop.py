"""The event-loop and worker-process executors (`runner._execution.OnEventLoop`,
`InWorkerProcess`) driven directly, without a `BackgroundRunner`: real pool, budget, process and
evaluators, with the runner's `record`, `finish` and `skip` replaced by lists the test reads.
Fast (the process tests about a second each), so that mutation testing can run them for each
mutant of the executors."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import time

import pytest

from groundwire import RagTurn, Score
from groundwire._evaluator import AnyEvaluator
from groundwire.emit import Emitter
from groundwire.runner import TokenBudget
from groundwire.runner._execution import InWorkerProcess, OnEventLoop, Step
from groundwire.runner._threads import ThreadPool

from .conftest import AnswerLength, HasContext, Judge, make_turn
from .executor_kit import Seen, planned_job, threads_named, wait_for


def _on_loop(
    emitter: Emitter,
    *,
    concurrency: int = 8,
    budget: TokenBudget | None = None,
    timeout_s: float = 5.0,
) -> tuple[OnEventLoop, Seen]:
    """An OnEventLoop executor over a real pool, and what it hands back."""
    seen = Seen()
    executor = OnEventLoop(
        ThreadPool(seen.work),
        seen.record,
        seen.finish,
        seen.skip,
        concurrency=concurrency,
        timeout_s=timeout_s,
        budget=budget,
    )
    return executor, seen


def test_the_loop_takes_a_job_with_judges_and_finishes_it(emitter: Emitter) -> None:
    """A job with async evaluators is handed off; the loop runs each, records it, spends its
    tokens from the budget and then finishes the job."""
    budget = TokenBudget(10_000)
    executor, seen = _on_loop(emitter, budget=budget)
    judge, other = Judge(tokens=(30, 12)), Judge(tokens=(5, 3))
    other.name = "other"  # type: ignore[misc]
    job = planned_job(make_turn(1), [], [judge, other])
    try:
        assert executor.run(job, 0) is Step.HANDED_OFF
        wait_for(lambda: seen.finished)
        assert seen.finished == [job]
        assert sorted(name for _, name, _ in seen.records) == ["judge", "other"]
        assert all(o.score.value == 0.75 for _, _, o in seen.records)
        assert budget.used() == 42 + 8
        assert seen.skipped == []
    finally:
        executor.close()


def test_the_loop_leaves_jobs_without_judges_or_already_finished(emitter: Emitter) -> None:
    """A job with no async evaluator, or one already done, goes on (CONTINUE), unrun."""
    executor, seen = _on_loop(emitter)
    judge = Judge()
    done = planned_job(make_turn(2), [], [judge])
    done.done = True
    try:
        assert executor.run(planned_job(make_turn(1), [HasContext()], []), 0) is Step.CONTINUE
        assert executor.run(done, 0) is Step.CONTINUE
        time.sleep(0.05)
        assert judge.calls == 0 and seen.finished == []
    finally:
        executor.close()


def test_the_loop_runs_at_most_its_concurrency_at_once(emitter: Emitter) -> None:
    """Judges wait for one of `concurrency` slots."""
    executor, seen = _on_loop(emitter, concurrency=2)
    judge = Judge(delay_s=0.05)
    try:
        for i in range(3):
            executor.run(planned_job(make_turn(i), [], [judge]), 0)
        wait_for(lambda: len(seen.finished) == 3)
        assert judge.peak == 2 and judge.calls == 3
    finally:
        executor.close()


def test_a_spent_budget_skips_the_judge_and_still_finishes(emitter: Emitter) -> None:
    """With no tokens left each judge is counted as skipped, none runs or is recorded, and the
    job is finished."""
    budget = TokenBudget(10)
    budget.spend(10)
    executor, seen = _on_loop(emitter, budget=budget)
    judge = Judge()
    job = planned_job(make_turn(1), [], [judge])
    try:
        executor.run(job, 0)
        wait_for(lambda: seen.finished)
        assert seen.skipped == [(job, "judge")]
        assert seen.records == [] and judge.calls == 0
    finally:
        executor.close()


def test_a_judge_whose_job_finished_while_it_waited_is_not_run(emitter: Emitter) -> None:
    """A judge that gets its slot after its job was finished elsewhere (shutdown) does not run
    and is not recorded."""
    executor, seen = _on_loop(emitter, concurrency=1)
    slow, judge = Judge(delay_s=0.2), Judge()
    first, second = planned_job(make_turn(1), [], [slow]), planned_job(make_turn(2), [], [judge])
    try:
        executor.run(first, 0)
        wait_for(lambda: slow.running)
        executor.run(second, 0)
        second.done = True
        wait_for(lambda: len(seen.finished) == 2)
        assert judge.calls == 0
        assert [name for _, name, _ in seen.records] == ["judge"]
    finally:
        executor.close()


def test_closing_the_loop_cancels_its_judges_and_ends_its_thread(emitter: Emitter) -> None:
    """close() cancels what the loop is running and its `groundwire-async` thread ends; a second
    close() does nothing."""
    before = set(threads_named("groundwire-async"))
    executor, seen = _on_loop(emitter)
    (thread,) = set(threads_named("groundwire-async")) - before
    judge = Judge(delay_s=30.0)
    executor.run(planned_job(make_turn(1), [], [judge]), 0)
    wait_for(lambda: judge.running)
    executor.close()
    thread.join(2.0)
    assert not thread.is_alive()
    assert seen.finished == [] and seen.records == []
    executor.close()


def test_a_score_from_the_loop_carries_its_evaluators_name(emitter: Emitter) -> None:
    """The recorded score is the judge's own."""
    executor, seen = _on_loop(emitter)
    try:
        executor.run(planned_job(make_turn(1), [], [Judge()]), 0)
        wait_for(lambda: seen.records)
        ((_, _, outcome),) = seen.records
        assert outcome.score == Score(
            name="judge", value=0.75, label="grounded", usage={"input": 100, "output": 20}
        )
    finally:
        executor.close()


def _callback_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Errors logged for a future's callbacks."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.getMessage().startswith("exception calling callback")
    ]


def test_a_judge_past_the_timeout_is_a_timeout_naming_the_limit(emitter: Emitter) -> None:
    """An async judge that overruns the evaluator timeout is recorded as a raised TimeoutError
    naming the limit, and the job is finished."""
    executor, seen = _on_loop(emitter, timeout_s=0.1)
    try:
        executor.run(planned_job(make_turn(1), [], [Judge(delay_s=30.0)]), 0)
        wait_for(lambda: seen.finished)
        ((_, name, outcome),) = seen.records
        assert name == "judge" and outcome.raised
        assert outcome.score.error == "TimeoutError: no result within 0.1 s"
    finally:
        executor.close()


def test_finished_and_cancelled_jobs_log_no_callback_errors(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither a job the loop finished nor one close() cancelled makes its future's done
    callback fail."""
    executor, seen = _on_loop(emitter)
    hung = Judge(delay_s=30.0)
    with caplog.at_level(logging.ERROR):
        executor.run(planned_job(make_turn(1), [], [Judge()]), 0)
        wait_for(lambda: seen.finished)
        executor.run(planned_job(make_turn(2), [], [hung]), 0)
        wait_for(lambda: hung.running)
        executor.close()
        time.sleep(0.2)
    assert _callback_errors(caplog) == []


class _AsksForTheLoop:
    """An async evaluator scoring 1 when the event-loop policy gives its thread's current loop
    as the running one (as libraries that look the loop up that way expect)."""

    name = "asks_for_the_loop"

    async def aevaluate(self, turn: RagTurn) -> Score:
        """1.0 when the policy's loop is the running loop."""
        try:
            current = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return Score(name=self.name, value=0.0)
        return Score(name=self.name, value=float(current is asyncio.get_running_loop()))


def test_the_loop_is_its_threads_current_event_loop(emitter: Emitter) -> None:
    """On the loop's thread the policy's current event loop is the loop judges run on."""
    executor, seen = _on_loop(emitter)
    try:
        executor.run(planned_job(make_turn(1), [], [_AsksForTheLoop()]), 0)
        wait_for(lambda: seen.records)
        assert seen.records[0][2].score.value == 1.0
    finally:
        executor.close()


class _EchoesTheQuery:
    """An async evaluator whose explanation is the turn's query."""

    name = "echoes"

    async def aevaluate(self, turn: RagTurn) -> Score:
        """The query as the explanation."""
        return Score(name=self.name, value=1.0, explanation=turn.query)


def test_a_judge_is_given_its_turn_and_recorded_on_its_job(emitter: Emitter) -> None:
    """The loop passes the job's turn to the evaluator and records the outcome on that job."""
    executor, seen = _on_loop(emitter)
    job = planned_job(make_turn(7), [], [_EchoesTheQuery()])
    try:
        executor.run(job, 0)
        wait_for(lambda: seen.finished)
        ((recorded, _, outcome),) = seen.records
        assert recorded is job and outcome.score.explanation == "question 7"
    finally:
        executor.close()


def test_a_judge_that_waited_while_the_budget_ran_out_is_skipped_on_its_job(
    emitter: Emitter,
) -> None:
    """With one slot, a judge waiting behind one that spends the last tokens is skipped (on its
    own job) once it gets the slot."""
    budget = TokenBudget(100)
    executor, seen = _on_loop(emitter, concurrency=1, budget=budget)
    spender, waiter = Judge(delay_s=0.2, tokens=(100, 0)), Judge()
    first, second = (
        planned_job(make_turn(1), [], [spender]),
        planned_job(make_turn(2), [], [waiter]),
    )
    try:
        executor.run(first, 0)
        wait_for(lambda: spender.running)
        executor.run(second, 0)
        wait_for(lambda: len(seen.finished) == 2)
        assert seen.skipped == [(second, "judge")] and waiter.calls == 0
    finally:
        executor.close()


class _ExitsTheProcess:
    """A sync evaluator that ends the worker process it runs in."""

    name = "exits"

    def evaluate(self, turn: RagTurn) -> Score:
        """End this process at once."""
        os._exit(3)


class _Sleeps:
    """A sync evaluator that takes 10 s (past any timeout the test sets)."""

    name = "sleeps"

    def evaluate(self, turn: RagTurn) -> Score:
        """Sleep, then score."""
        time.sleep(10)
        return Score(name=self.name, value=1.0)


def _in_process(
    evaluators: list[AnyEvaluator], timeout_s: float | None
) -> tuple[InWorkerProcess, Seen]:
    """An InWorkerProcess executor (a real worker process) and what it hands back."""
    seen = Seen()
    return InWorkerProcess(evaluators, seen.record, timeout_s=timeout_s), seen


@pytest.mark.usefixtures("reaped")
def test_the_worker_process_runs_the_remaining_sync_evaluators_in_one_trip() -> None:
    """From `next_sync` on, every sync evaluator runs in the process and is recorded in order;
    with none left the job goes on untouched."""
    evaluators: list[AnyEvaluator] = [HasContext(), AnswerLength()]
    executor, seen = _in_process(evaluators, 30.0)
    try:
        job = planned_job(make_turn(1), evaluators, [])
        job.next_sync = 1
        assert executor.run(job, 0) is Step.CONTINUE
        ((recorded, name, outcome),) = seen.records
        assert recorded is job and name == "answer_length" and not outcome.raised
        assert outcome.score.value == 0.09 and job.next_sync == 2
        assert executor.run(job, 0) is Step.CONTINUE
        assert len(seen.records) == 1
    finally:
        executor.close()


@pytest.mark.usefixtures("reaped")
def test_a_worker_process_past_the_timeout_fails_each_evaluator_naming_the_limit() -> None:
    """A round trip longer than the timeout is recorded, for each of its evaluators, as a
    raised TimeoutError naming the limit, with the time waited as its duration."""
    evaluators: list[AnyEvaluator] = [_Sleeps(), HasContext()]
    executor, seen = _in_process(evaluators, 0.3)
    try:
        job = planned_job(make_turn(1), evaluators, [])
        assert executor.run(job, 0) is Step.CONTINUE
        assert [name for _, name, _ in seen.records] == ["sleeps", "has_context"]
        for _, _, outcome in seen.records:
            assert outcome.raised and outcome.duration_s >= 0.3
            assert outcome.score.error == "TimeoutError: no result within 0.3 s"
        assert job.next_sync == 2
    finally:
        executor.close()


@pytest.mark.usefixtures("reaped")
def test_a_dead_worker_process_fails_each_evaluator_with_its_error() -> None:
    """A process that dies mid-call fails every evaluator of the trip with that error."""
    evaluators: list[AnyEvaluator] = [_ExitsTheProcess(), HasContext()]
    executor, seen = _in_process(evaluators, 30.0)
    try:
        job = planned_job(make_turn(1), evaluators, [])
        assert executor.run(job, 0) is Step.CONTINUE
        errors = [(name, o.raised, o.score.error) for _, name, o in seen.records]
        exited = "RuntimeError: the evaluation worker process exited"
        assert errors == [("exits", True, exited), ("has_context", True, exited)]
    finally:
        executor.close()


@pytest.mark.usefixtures("reaped")
def test_closing_the_executor_stops_its_worker_process() -> None:
    """close() ends the worker process."""
    before = set(multiprocessing.active_children())
    executor, _ = _in_process([HasContext()], 30.0)
    (process,) = set(multiprocessing.active_children()) - before
    executor.close()
    process.join(5)
    assert not process.is_alive()


@pytest.mark.usefixtures("reaped")
def test_a_failed_round_trip_records_the_time_it_waited() -> None:
    """Each evaluator a dead process failed is recorded with the time the call waited: no less
    than zero, no more than the test waited."""
    evaluators: list[AnyEvaluator] = [_ExitsTheProcess(), HasContext()]
    executor, seen = _in_process(evaluators, 30.0)
    try:
        started = time.monotonic()
        executor.run(planned_job(make_turn(1), evaluators, []), 0)
        waited = time.monotonic() - started
        assert [0 <= o.duration_s <= waited for _, _, o in seen.records] == [True, True]
    finally:
        executor.close()
