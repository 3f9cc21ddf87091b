"""Execution: where a job's evaluations run, behind one small interface (`Executor`).

A worker thread hands each job to the runner's executors in turn; each runs its part and says
whether the job goes on to the next (`Step.CONTINUE`), is finished elsewhere (`HANDED_OFF`), or
whether the calling worker thread was abandoned (`ABANDONED`: it must exit). Admission, sampling,
budgets and counting stay in the runner, so a new way to execute is a new executor here.

- `InThread`: sync evaluators on the worker thread itself. A call that overruns its timeout is
  abandoned (Python cannot interrupt a call), counted as an error, and its thread replaced, so one
  hung evaluator cannot stall the rest; the rest of its turn goes back to the head of the queue.
- `InWorkerProcess`: sync evaluators in one worker process (`_process`), one round trip per turn.
- `OnEventLoop`: async (LLM judge) evaluators on one event-loop thread under a concurrency limit
  and the token budget; the loop finishes the job.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol, cast

from groundwire._evaluator import (
    AnyEvaluator,
    EvaluationOutcome,
    Evaluator,
    arun_evaluator,
    run_evaluator,
)
from groundwire._types import Score
from groundwire.runner._admission import Admission
from groundwire.runner._budget import TokenBudget
from groundwire.runner._jobs import Job
from groundwire.runner._process import ProcessExecutor
from groundwire.runner._threads import ThreadPool, background_thread_setup

__all__ = ["Executor", "InThread", "InWorkerProcess", "OnEventLoop", "Step"]

logger = logging.getLogger("groundwire.runner")

_MAX_ABANDONED_PER_WORKER = 4

Record = Callable[[Job, AnyEvaluator, EvaluationOutcome], None]
"""Keeps one evaluation's outcome on its job and counts it (the runner's `_record`)."""


class Step(enum.Enum):
    """What an executor did with a job."""

    CONTINUE = "continue"
    """Its part is done (or it had none): the next executor, or finishing, follows."""
    HANDED_OFF = "handed_off"
    """Another thread carries on and finishes the job."""
    ABANDONED = "abandoned"
    """The calling worker thread was abandoned in a hung call: it must exit now."""


class Executor(Protocol):
    """Runs its part of a job for a worker thread; `close()` at shutdown."""

    def run(self, job: Job, worker_id: int) -> Step:
        """Run this executor's evaluations of `job` (called on worker thread `worker_id`)."""
        ...

    def close(self) -> None:
        """Stop what the executor owns (threads, a process); never waits for a hung call."""
        ...


def _timed_out(timeout_s: float | None) -> TimeoutError:
    """The error an evaluation that overran the evaluator timeout is scored with."""
    return TimeoutError(f"no result within {timeout_s} s")


@dataclass(eq=False, slots=True)
class _Slot:
    """A sync evaluation in progress on one worker thread, watched for its deadline."""

    job: Job
    evaluator: AnyEvaluator
    started: float
    deadline: float
    abandoned: bool = False


class InThread:
    """Sync evaluators on the calling worker thread, watched by a watchdog thread."""

    def __init__(
        self,
        admission: Admission,
        pool: ThreadPool,
        record: Record,
        *,
        timeout_s: float | None,
        watch: bool,
    ) -> None:
        self._admission, self._cond, self._pool = admission, admission.cond, pool
        self._record = record
        self._timeout = timeout_s
        self._slots: dict[int, _Slot] = {}
        self._abandoned = 0
        """Worker threads stuck in a call (replaced up to a bound)."""
        self._stop = threading.Event()
        if watch and timeout_s is not None:
            pool.spawn(self._watchdog, "groundwire-watchdog")

    def run(self, job: Job, worker_id: int) -> Step:
        """Run the job's remaining sync evaluators here, one after another."""
        while job.next_sync < len(job.sync) and not job.done:
            evaluator = job.sync[job.next_sync]
            started = time.monotonic()
            deadline = started + self._timeout if self._timeout is not None else float("inf")
            slot = _Slot(job, evaluator, started, deadline)
            with self._cond:
                self._slots[worker_id] = slot
            outcome = run_evaluator(cast(Evaluator, evaluator), job.turn)
            with self._cond:
                if slot.abandoned:
                    self._abandoned -= 1  # this thread exits: it no longer counts as stuck
                    return Step.ABANDONED
                del self._slots[worker_id]
            job.next_sync += 1
            self._record(job, evaluator, outcome)
        return Step.CONTINUE

    def close(self) -> None:
        """Stop the watchdog."""
        self._stop.set()

    def _watchdog(self) -> None:
        """Abandon sync evaluations that overran their deadline."""
        timeout = self._timeout or 1.0
        tick = min(max(timeout / 10, 0.01), 0.25)
        while not self._stop.wait(tick):
            now = time.monotonic()
            with self._cond:
                overdue = [(k, s) for k, s in self._slots.items() if s.deadline <= now]
                for key, slot in overdue:
                    slot.abandoned = True
                    del self._slots[key]
                    self._abandoned += 1
            for _, slot in overdue:
                self._abandon(slot, now)

    def _abandon(self, slot: _Slot, now: float) -> None:
        """Record a timeout for the stuck call and move the rest of its turn to a new worker."""
        job, name = slot.job, slot.evaluator.name
        logger.warning("evaluator %r gave no result within %s s; abandoned", name, self._timeout)
        job.next_sync += 1
        score = Score.failed(name, _timed_out(self._timeout))
        self._record(job, slot.evaluator, EvaluationOutcome(score, now - slot.started, True))
        self._admission.requeue_first(job)
        with self._cond:
            workers = self._admission.config.workers
            replace = self._abandoned <= _MAX_ABANDONED_PER_WORKER * workers
        if replace and not self._admission.stopping:
            self._pool.start_worker()
        elif not replace:
            logger.error("too many evaluator calls are hung; not starting more worker threads")


class InWorkerProcess:
    """Sync evaluators in one worker process, off the app's GIL (`executor="process"`)."""

    def __init__(
        self, evaluators: Sequence[AnyEvaluator], record: Record, *, timeout_s: float | None
    ) -> None:
        self._process = ProcessExecutor(evaluators)
        self._record = record
        self._timeout = timeout_s

    def run(self, job: Job, worker_id: int) -> Step:
        """Run the job's remaining sync evaluators in the process (one round trip)."""
        evaluators = job.sync[job.next_sync :]
        if not evaluators:
            return Step.CONTINUE
        started = time.monotonic()
        try:
            outcomes = self._process.evaluate([e.name for e in evaluators], job.turn, self._timeout)
        except Exception as error:
            if isinstance(error, TimeoutError):
                error = _timed_out(self._timeout)
            failed = Score.failed
            outcomes = [
                EvaluationOutcome(failed(e.name, error), time.monotonic() - started, True)
                for e in evaluators
            ]
        job.next_sync = len(job.sync)
        for evaluator, outcome in zip(evaluators, outcomes, strict=True):
            self._record(job, evaluator, outcome)
        return Step.CONTINUE

    def close(self) -> None:
        """Stop the worker process."""
        self._process.close()


class OnEventLoop:
    """Async evaluators on one event-loop thread, under a concurrency limit and the budget."""

    def __init__(
        self,
        pool: ThreadPool,
        record: Record,
        finish: Callable[[Job], None],
        skip: Callable[[Job, AnyEvaluator], None],
        *,
        concurrency: int,
        timeout_s: float | None,
        budget: TokenBudget | None,
    ) -> None:
        self._record, self._finish, self._skip = record, finish, skip
        self._timeout = timeout_s
        self._budget = budget
        self._loop = asyncio.new_event_loop()
        self._semaphore = asyncio.Semaphore(concurrency)
        pool.spawn(self._run_loop, "groundwire-async")

    def run(self, job: Job, worker_id: int) -> Step:
        """Hand the job's async evaluators to the loop, which then finishes the job."""
        if not job.asynchronous or job.done:
            return Step.CONTINUE
        future: Future[None] = asyncio.run_coroutine_threadsafe(self._run_all(job), self._loop)
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return Step.HANDED_OFF

    def close(self) -> None:
        """Cancel the loop's tasks and stop it."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_and_stop)

    def _run_loop(self) -> None:
        """The event-loop thread running async evaluators."""
        background_thread_setup()
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    async def _run_all(self, job: Job) -> None:
        """Run a job's async evaluators concurrently, then finish the job."""
        await asyncio.gather(*(self._run_one(job, evaluator) for evaluator in job.asynchronous))
        self._finish(job)

    async def _run_one(self, job: Job, evaluator: AnyEvaluator) -> None:
        """One async evaluation under the concurrency limit and the token budget."""
        if self._over_budget(job, evaluator):
            return
        async with self._semaphore:
            if job.done or self._over_budget(job, evaluator):
                return
            outcome = await arun_evaluator(evaluator, job.turn, timeout_s=self._timeout)
        if self._budget is not None:
            self._budget.spend(sum(outcome.score.usage.values()))
        self._record(job, evaluator, outcome)

    def _over_budget(self, job: Job, evaluator: AnyEvaluator) -> bool:
        """True (and counted as skipped) when the judge token budget is spent."""
        if self._budget is None or self._budget.allows():
            return False
        self._skip(job, evaluator)
        return True

    def _cancel_and_stop(self) -> None:
        """Cancel the loop's tasks and stop it (runs on the loop thread)."""
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        self._loop.call_soon(self._loop.stop)  # one more turn of the loop lets cancellations land
