"""The background runner: scores turns off the app's thread and counts every one.

It puts three parts together, each in its own module:
- admission and counting (`_admission`): sampling, the bounded inbox and queue the app's thread
  appends to without blocking, the turn filter and per-evaluator rates, the turn counters;
- execution (`_execution`): worker threads take jobs from the queue and hand each to the
  executors (sync evaluators on the thread or in a worker process, async ones on an event loop);
- emission (`_emission`): results go out through the Emitter as one evaluation carrier span per
  turn plus metric points.
This module keeps a job's results and finishes it (emit, then count once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from groundwire import semconv
from groundwire._evaluator import AnyEvaluator, EvaluationOutcome, is_async_evaluator
from groundwire._types import RagTurn
from groundwire.emit import Emitter, is_skipped
from groundwire.runner._admission import Admission, plan
from groundwire.runner._budget import TokenBudget
from groundwire.runner._config import RunnerConfig
from groundwire.runner._emission import Emission
from groundwire.runner._execution import Executor, InThread, InWorkerProcess, OnEventLoop, Step
from groundwire.runner._jobs import InlineResult, Job, turn_outcome
from groundwire.runner._sampling import trace_sampled
from groundwire.runner._stats import RunnerStats
from groundwire.runner._threads import (
    ThreadPool,
    background_thread_setup,
    suppress_instrumentation,
    warm_up_evaluators,
)

__all__ = [
    "BackgroundRunner",
    "InlineResult",
    "background_thread_setup",
    "suppress_instrumentation",
    "warm_up_evaluators",
]

logger = logging.getLogger("groundwire.runner")

_JOIN_BUDGET_S = 0.1
"""How long shutdown waits, in all, for the runner's threads to exit once the queue is done."""


class BackgroundRunner:
    """Scores turns off the app's thread; see the module docstring for how its parts fit."""

    def __init__(
        self,
        config: RunnerConfig,
        emitter: Emitter,
        *,
        budget: TokenBudget | None = None,
        on_finished: Callable[[RagTurn, str], None] | None = None,
    ):
        """`on_finished(turn, outcome)` is told of each queued turn once its results are
        emitted and its outcome counted (`scored`, `error`, `dropped`, ...), on the thread that
        finished it: the gateway uses it to know which traces are scored, whatever the order
        turns finish in. It must be quick and not raise (an exception is logged)."""
        self.config = config
        self._on_finished = on_finished
        self._emitter = emitter
        background = config.background_evaluators
        self._sync = [e for e in background if not is_async_evaluator(e)]
        self._async = [e for e in background if is_async_evaluator(e)]
        if budget is None and config.judge_token_budget is not None:
            budget = TokenBudget(config.judge_token_budget)
        self._emission = Emission(
            emitter, tuple(e.name for e in config.evaluators), tuple(e.name for e in background)
        )
        self._admission = Admission(config, self._emission, has_work=bool(background))
        self._cond = self._admission.cond
        self.dropped_at_shutdown = (0, 0)
        """(turns, evaluations) that shutdown's deadline cut, counted as dropped."""
        self._pool = ThreadPool(self._work)
        self._in_process = config.executor == "process" and bool(self._sync)
        self._executors = self._executors_for(config, budget)
        emitter.metrics.watch_queue(self.queue_size)
        for _ in range(config.workers):
            self._pool.start_worker()

    def _executors_for(self, config: RunnerConfig, budget: TokenBudget | None) -> list[Executor]:
        """The sync evaluators' executor (worker threads or the worker process), then the
        event loop's when there are async evaluators."""
        timeout = config.evaluator_timeout_s
        executors: list[Executor] = []
        if self._in_process:
            executors.append(InWorkerProcess(self._sync, self._record, timeout_s=timeout))
        else:
            watch = bool(self._sync)
            executors.append(
                InThread(self._admission, self._pool, self._record, timeout_s=timeout, watch=watch)
            )
        if self._async:
            loop = OnEventLoop(
                self._pool,
                self._record,
                self._finish,
                self._skip,
                concurrency=config.async_concurrency,
                timeout_s=timeout,
                budget=budget,
            )
            executors.append(loop)
        return executors

    def warm_up(self) -> float:
        """Warm groundwire's own sync evaluators up (see `warm_up_evaluators`) where they will
        run: here, or in the worker process (which does it itself when it starts, in the
        background). Returns the seconds it took here."""
        started = time.perf_counter()
        inline = list(self.config.inline_evaluators)
        warm_up_evaluators(inline if self._in_process else list(self.config.evaluators))
        return time.perf_counter() - started

    # --- the app's thread ------------------------------------------------------------------------

    def selects(self, turn: RagTurn) -> bool:
        """True when the turn's trace is inside the sample rate (cheap; deterministic)."""
        return trace_sampled(turn.trace_id, self.config.sample_rate)

    def submit(self, turn: RagTurn, inline: InlineResult | None = None) -> bool:
        """Take a completed turn (and what inline evaluation did); never blocks or raises.

        Returns True when the turn was queued. The app's thread only samples, appends and
        notifies: metric points for sampled-out and dropped turns are added by a worker.
        """
        try:
            return self._admission.admit(turn, inline)
        except Exception:
            logger.exception("could not submit a turn for evaluation")
            return False

    def count_dropped_turn(
        self, inline: InlineResult | None = None, turn: RagTurn | None = None
    ) -> None:
        """Count a turn lost before it could be submitted (its root span was dropped)."""
        self._admission.count_dropped_turn(inline, turn)

    # --- worker threads --------------------------------------------------------------------------

    def _work(self, worker_id: int) -> None:
        """A worker's loop: take a job, run it; exit on shutdown or when abandoned."""
        background_thread_setup()
        while True:
            running, job = self._admission.next_job()
            if not running:
                return
            if job is not None and not self._process(job, worker_id):
                return

    def _process(self, job: Job, worker_id: int) -> bool:
        """Plan the job, then run it through the executors; False when this thread was
        abandoned mid-call."""
        if not job.planned:
            self._emission.record_inline(job.inline, job.turn)
            if not plan(job, self.config, (self._sync, self._async), self._emission):
                self._finish(job)
                return True
        for executor in self._executors:
            step = executor.run(job, worker_id)
            if step is Step.ABANDONED:
                return False
            if step is Step.HANDED_OFF:
                return True
        self._finish(job)
        return True

    def _record(self, job: Job, evaluator: AnyEvaluator, outcome: EvaluationOutcome) -> None:
        """Keep one evaluation's result on its job and record its metric points."""
        with self._cond:
            if job.done:
                return
            job.pending.discard(evaluator.name)
            if not is_skipped(outcome.score):  # "no judge configured": nothing ran, nothing to show
                job.scores.append(outcome.score)
                job.ran += 1
                job.failed = job.failed or not outcome.score.ok
        self._emission.record(job.turn, outcome)

    def _skip(self, job: Job, evaluator: AnyEvaluator) -> None:
        """Count an evaluation skipped because the judge token budget is spent."""
        with self._cond:
            job.pending.discard(evaluator.name)
        self._emission.count(job.turn, [evaluator.name], semconv.OUTCOME_SKIPPED)

    def _finish(self, job: Job, *, dropped: bool = False) -> None:
        """Emit the job's results, then count its outcome once (flushers wait for the count).

        `dropped` (shutdown's deadline) counts the turn as dropped only when an evaluation of
        it is still pending: a turn whose last result landed just before is what it scored.
        """
        with self._cond:
            if job.done:
                return
            job.done = True
            pending, scores = set(job.pending), list(job.scores)
            dropped = dropped and bool(pending)
            outcome = "dropped" if dropped else turn_outcome(job.inline, job.ran, job.failed)
        if dropped:
            self._emission.count(job.turn, pending, semconv.OUTCOME_DROPPED)
        self._emission.emit_span(job.turn, scores)
        self._admission.count_finished(job, outcome)
        if self._on_finished is not None:
            try:
                self._on_finished(job.turn, outcome)
            except Exception:
                logger.exception("the on_finished hook failed")

    def _flush_deferred(self) -> None:
        """Turn the deferred sampled-out/dropped turn counts into metric points."""
        self._admission.flush_deferred()

    # --- lifecycle -------------------------------------------------------------------------------

    def queue_size(self) -> int:
        """Turns waiting in the queue (and handed over, not yet queued)."""
        return self._admission.queue_size()

    def stats(self) -> RunnerStats:
        """Turn counts now (they always add up: see `RunnerStats.adds_up`)."""
        return self._admission.stats()

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued turn is finished; False when the deadline came first."""
        deadline = time.monotonic() + timeout_s
        self._flush_deferred()
        return self._admission.wait_finished(deadline)

    def shutdown(self, timeout_s: float = 30.0, *, report: bool = True) -> bool:
        """Stop taking turns, drain within `timeout_s`, count what is left as dropped.

        `report=False` leaves the warning about dropped work to the caller (`configure()`'s
        shutdown says it once, with the telemetry that was not exported).
        """
        if not self._admission.close():
            return True
        drained = self.force_flush(timeout_s)
        leftovers = self._admission.stop()
        with self._cond:
            evaluations = sum(len(job.pending) for job in leftovers if not job.done)
        for job in leftovers:
            self._finish(job, dropped=True)
        self._flush_deferred()
        self.dropped_at_shutdown = (len(leftovers), evaluations)
        if leftovers and report:
            logger.warning(
                "shutdown deadline %g s: %d turns (%d evaluations) not finished, counted as "
                "dropped",
                timeout_s,
                len(leftovers),
                evaluations,
            )
        for executor in self._executors:
            executor.close()
        self._pool.join(_JOIN_BUDGET_S)
        return drained
