"""The background runner: a bounded queue of turns, worker threads, and one asyncio loop.

The app's thread only samples and appends to an inbox (a full queue drops; nothing blocks or
raises). It takes no lock while a worker is busy: the workers move the inbox into the queue and
keep every count, so a busy worker holding the runner's lock never holds up the app. Worker
threads run sync evaluators; a call that overruns its timeout is abandoned, counted as an error,
and its thread replaced, so one hung evaluator cannot stall the rest. Async (LLM judge)
evaluators run on one event-loop thread under a concurrency limit and the token budget.
Results go out through the Emitter as one evaluation carrier span per turn plus metric points.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import threading
import time
from collections import Counter, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value

from groundwire import semconv
from groundwire._evaluator import (
    AnyEvaluator,
    EvaluationOutcome,
    Evaluator,
    arun_evaluator,
    is_async_evaluator,
    run_evaluator,
)
from groundwire._types import RagTurn, Score
from groundwire.emit import Emitter, is_skipped
from groundwire.runner._budget import TokenBudget
from groundwire.runner._config import RunnerConfig
from groundwire.runner._process import ProcessExecutor
from groundwire.runner._sampling import trace_sampled
from groundwire.runner._stats import RunnerStats, TurnCounters

__all__ = [
    "BackgroundRunner",
    "InlineResult",
    "background_thread_setup",
    "suppress_instrumentation",
    "warm_up_evaluators",
]

logger = logging.getLogger("groundwire.runner")

_DROP_LOG_INTERVAL_S = 10.0
_IDLE_WAKE_S = 1.0
_LOST_WAKE = 1024
"""Sampled-out or dropped turns handed over that wake an idle worker to count them."""
_NICE = 10
"""Added to the nice value of groundwire's threads on Linux."""
_MAX_ABANDONED_PER_WORKER = 4
_JOIN_BUDGET_S = 0.1
"""How long shutdown waits, in all, for the runner's threads to exit once the queue is done."""


class _Lost(NamedTuple):
    """A submitted turn that will not be evaluated (sampled out or dropped), to be counted.

    A tuple, so that a backlog of them is counted by `collections.Counter` in C.
    """

    outcome: str
    """`semconv.OUTCOME_SAMPLED_OUT` or `semconv.OUTCOME_DROPPED`."""
    service: str | None
    """The turn's app (`_service`); the turn itself is not kept."""
    count_evaluations: bool = True
    """False when no evaluation was configured for the turn (nothing to count in metrics)."""


@dataclass(frozen=True, slots=True)
class InlineResult:
    """What inline evaluation did for a turn, handed to the runner to count and to finish."""

    outcomes: tuple[EvaluationOutcome, ...] = ()
    sampled_out: tuple[str, ...] = ()
    """Inline evaluators left out by their per-evaluator rate."""

    @property
    def scores(self) -> tuple[Score, ...]:
        """The inline scores."""
        return tuple(outcome.score for outcome in self.outcomes)


@dataclass(eq=False, slots=True)
class _Job:
    """One turn's background work and what came of it so far."""

    turn: RagTurn
    inline: InlineResult
    pending: set[str]
    """Background evaluators with no outcome yet (counted as dropped if the job is dropped)."""
    planned: bool = False
    sync: list[AnyEvaluator] = field(default_factory=list)
    asynchronous: list[AnyEvaluator] = field(default_factory=list)
    next_sync: int = 0
    scores: list[Score] = field(default_factory=list)
    ran: int = 0
    failed: bool = False
    done: bool = False


@dataclass(eq=False, slots=True)
class _Slot:
    """A sync evaluation in progress on one worker thread, watched for its deadline."""

    job: _Job
    evaluator: AnyEvaluator
    started: float
    deadline: float
    abandoned: bool = False


_NO_INLINE = InlineResult()
_WARM_UP_TURN = RagTurn(
    query="Where did the cat sit?",
    contexts=["Once upon a time the cat sat on the mat, and the dog slept by the door."],
    answer='The story says "the cat sat on the mat" and "the dog slept by the door".',
)


def warm_up_evaluators(evaluators: list[AnyEvaluator]) -> None:
    """Run each of groundwire's own sync evaluators once on a small made-up turn, so that lazy
    imports, index structures and the embedding model load now rather than on the first turns,
    beside the app. Scores are discarded, nothing is counted; evaluators from other packages are
    not called (their side effects are unknown)."""
    for evaluator in evaluators:
        if is_async_evaluator(evaluator) or not type(evaluator).__module__.startswith(
            "groundwire."
        ):
            continue
        outcome = run_evaluator(cast(Evaluator, evaluator), _WARM_UP_TURN)
        if outcome.raised:
            logger.debug("warm-up of %s raised; it will load on first use", evaluator.name)


def suppress_instrumentation() -> None:
    """Suppress instrumentation for the rest of this (groundwire-owned) thread: never trace us."""
    attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))


def background_thread_setup() -> None:
    """Start of every groundwire thread: no self-tracing, and a lower OS priority where the
    platform allows it (Linux: a per-thread nice value), so the app's threads win the CPU."""
    suppress_instrumentation()
    if sys.platform.startswith("linux"):
        thread_id = threading.get_native_id()
        with contextlib.suppress(OSError):
            nice = os.getpriority(os.PRIO_PROCESS, thread_id)
            os.setpriority(os.PRIO_PROCESS, thread_id, min(19, nice + _NICE))


def _service(turn: RagTurn | None) -> str | None:
    """The turn's `service.name` (which app it came from), when known."""
    if turn is None:
        return None
    service = turn.attributes.get(semconv.SERVICE_NAME)
    return service if isinstance(service, str) else None


class BackgroundRunner:
    """Scores turns off the app's thread; see the module docstring for the threading model."""

    def __init__(
        self, config: RunnerConfig, emitter: Emitter, *, budget: TokenBudget | None = None
    ):
        self.config = config
        self._emitter = emitter
        background = config.background_evaluators
        self._sync = [e for e in background if not is_async_evaluator(e)]
        self._async = [e for e in background if is_async_evaluator(e)]
        self._background_names = tuple(e.name for e in background)
        self._all_names = tuple(e.name for e in config.evaluators)
        if budget is None and config.judge_token_budget is not None:
            budget = TokenBudget(config.judge_token_budget)
        self._budget = budget
        self._timeout = config.evaluator_timeout_s
        self._cond = threading.Condition()
        self._inbox: deque[_Job] = deque()
        """Jobs appended by the app's threads without the lock; `_take_inbox` queues them."""
        self._lost: deque[_Lost] = deque()
        """Turns sampled out or dropped on the app's threads, counted by `_take_inbox`."""
        self._idle_workers = 0
        """Workers waiting for work: the app's thread notifies (under the lock) only then."""
        self._wake_sent = False
        """A wake-up is on its way: further hand-overs need not take the lock to send one."""
        self._queue: deque[_Job] = deque()
        self._active: set[_Job] = set()
        self._in_flight = 0
        self._counters = TurnCounters()
        self._closing = False
        self._stopping = False
        self._slots: dict[int, _Slot] = {}
        self._abandoned = 0
        self._ids = itertools.count()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._last_drop_log = 0.0
        self.dropped_at_shutdown = (0, 0)
        """(turns, evaluations) that shutdown's deadline cut, counted as dropped."""
        self._deferred: dict[tuple[str, str | None], int] = {}
        """Turns sampled out or dropped on the app's thread, counted in metrics by a worker."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._remote: ProcessExecutor | None = None
        if config.executor == "process" and self._sync:
            self._remote = ProcessExecutor(self._sync)
        emitter.metrics.watch_queue(self.queue_size)
        for _ in range(config.workers):
            self._start_worker()
        if self._sync and self._timeout is not None and self._remote is None:
            self._spawn(self._watchdog, "groundwire-watchdog")
        if self._async:
            self._loop = asyncio.new_event_loop()
            self._semaphore = asyncio.Semaphore(config.async_concurrency)
            self._spawn(self._run_loop, "groundwire-async")

    # --- warm-up ---------------------------------------------------------------------------------

    def warm_up(self) -> float:
        """Warm groundwire's own sync evaluators up (see `warm_up_evaluators`) where they will
        run: here, or in the worker process (which does it itself when it starts, in the
        background). Returns the seconds it took here."""
        started = time.perf_counter()
        inline = list(self.config.inline_evaluators)
        warm_up_evaluators(inline if self._remote is not None else list(self.config.evaluators))
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
            return self._submit(turn, inline)
        except Exception:
            logger.exception("could not submit a turn for evaluation")
            return False

    def _submit(self, turn: RagTurn, inline: InlineResult | None) -> bool:
        """Sample, then queue the turn or count it (the body of `submit`)."""
        if not self.selects(turn):
            self._hand_over_lost(_Lost(semconv.OUTCOME_SAMPLED_OUT, _service(turn)))
            return False
        inline = inline or _NO_INLINE
        if not (self._sync or self._async or inline.outcomes or inline.sampled_out):
            lost = _Lost(semconv.OUTCOME_SAMPLED_OUT, _service(turn), count_evaluations=False)
            self._hand_over_lost(lost)
            return False
        # Both lengths are read without the lock: threads submitting at the same instant may
        # overshoot the bound by one turn each, never more.
        full = self._closing or len(self._queue) + len(self._inbox) >= self.config.max_queue_size
        if full:
            self._hand_over_lost(_Lost(semconv.OUTCOME_DROPPED, _service(turn)))
            self._record_inline(inline, turn)
            self._log_drop()
            return False
        self._hand_over(_Job(turn, inline, set(self._background_names)))
        return True

    def _hand_over(self, job: _Job) -> None:
        """Append to the inbox (atomic; no lock) and wake a worker if one is waiting.

        A worker announces itself idle before it checks the inbox a last time, and this reads
        the idle count after appending, so either the worker sees the job or it is notified.
        """
        self._inbox.append(job)
        if self._stopping:
            self._flush_deferred()  # no worker is left: count it here (as dropped)
        elif self._idle_workers and not self._wake_sent:
            self._wake()

    def _hand_over_lost(self, lost: _Lost) -> None:
        """Append a turn to count (no lock; an idle worker counts it within a second or once
        1,024 wait, and `stats()`, `force_flush()` and `shutdown()` count it at once)."""
        self._lost.append(lost)
        if self._stopping:
            self._flush_deferred()
        elif self._idle_workers and not self._wake_sent and len(self._lost) >= _LOST_WAKE:
            self._wake()

    def _wake(self) -> None:
        """Wake one idle worker. Only one wake-up is sent until a worker wakes: app threads
        lining up for the lock would otherwise keep the waking worker from taking it."""
        self._wake_sent = True
        with self._cond:
            self._cond.notify()

    def _take_inbox(self) -> None:
        """Count what the app's threads handed over and queue its jobs (lock held)."""
        counters, lost, inbox = self._counters, self._lost, self._inbox
        # Only what is there now: app threads appending faster than this drains must not keep
        # it (and the lock) forever.
        for item, turns in Counter(lost.popleft() for _ in range(len(lost))).items():
            counters.submitted += turns
            counters.add(item.outcome, turns)
            if item.count_evaluations:
                self._defer(item.outcome, item.service, turns)
        for _ in range(len(inbox)):
            job = inbox.popleft()
            counters.submitted += 1
            if self._stopping:  # handed over while shutdown drained: too late to run
                counters.dropped += 1
                self._defer(semconv.OUTCOME_DROPPED, _service(job.turn))
                self._record_inline(job.inline, job.turn)
            else:
                self._queue.append(job)
                self._in_flight += 1
                self._cond.notify()

    def count_dropped_turn(
        self, inline: InlineResult | None = None, turn: RagTurn | None = None
    ) -> None:
        """Count a turn lost before it could be submitted (its root span was dropped)."""
        self._hand_over_lost(_Lost(semconv.OUTCOME_DROPPED, _service(turn)))
        if inline is not None:
            self._record_inline(inline, turn)
        self._log_drop()

    def _emitter_for(self, turn: RagTurn | None) -> Emitter:
        """The emitter of the turn's app (`Emitter.for_service`; one app: the runner's own)."""
        return self._emitter.for_service(_service(turn))

    def _defer(self, outcome: str, service: str | None, turns: int = 1) -> None:
        """Count turns' evaluations as `outcome` later, off the app's thread (lock held)."""
        key = (outcome, service)
        self._deferred[key] = self._deferred.get(key, 0) + turns

    def _flush_deferred(self) -> None:
        """Turn the deferred sampled-out/dropped turn counts into metric points."""
        with self._cond:
            self._take_inbox()
            deferred, self._deferred = self._deferred, {}
        for (outcome, service), turns in deferred.items():
            names = self._all_names if outcome == semconv.OUTCOME_SAMPLED_OUT else None
            emitter = self._emitter.for_service(service)
            for name in names or self._background_names:
                emitter.record_outcome(name, outcome, turns)

    def _record_inline(self, inline: InlineResult, turn: RagTurn | None) -> None:
        """Metric points for what inline evaluation did to one turn."""
        emitter = self._emitter_for(turn)
        for outcome in inline.outcomes:
            emitter.record(outcome.score, outcome.duration_s)
        for name in inline.sampled_out:
            emitter.record_outcome(name, semconv.OUTCOME_SAMPLED_OUT)

    def _count_dropped(self, names: set[str], turn: RagTurn) -> None:
        """Count each named evaluation as dropped."""
        emitter = self._emitter_for(turn)
        for name in names:
            emitter.record_outcome(name, semconv.OUTCOME_DROPPED)

    def _log_drop(self) -> None:
        """Warn about dropped turns, at most once every 10 s."""
        now = time.monotonic()
        if now - self._last_drop_log >= _DROP_LOG_INTERVAL_S:
            self._last_drop_log = now
            logger.warning(
                "evaluation queue full (max_queue_size=%d) or shut down: dropping turns "
                "(counted in groundwire.evaluations{groundwire.outcome=dropped})",
                self.config.max_queue_size,
            )

    # --- worker threads --------------------------------------------------------------------------

    def _spawn(self, target: object, name: str) -> threading.Thread:
        """Start a daemon thread owned by the runner."""
        thread = threading.Thread(target=target, name=name, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)
        return thread

    def _start_worker(self) -> None:
        """Start one more worker thread."""
        worker_id = next(self._ids)
        self._spawn(lambda: self._work(worker_id), f"groundwire-worker-{worker_id}")

    def _work(self, worker_id: int) -> None:
        """A worker's loop: take a job, run it; exit on shutdown or when abandoned."""
        background_thread_setup()
        while True:
            with self._cond:
                self._take_inbox()
                while not self._queue and not self._stopping and not self._deferred:
                    self._idle_workers += 1
                    try:
                        if not self._inbox:  # the last look, after saying we are idle
                            self._cond.wait(_IDLE_WAKE_S)
                    finally:
                        self._idle_workers -= 1
                        self._wake_sent = False
                    self._take_inbox()
                if self._stopping:
                    return
                job = self._queue.popleft() if self._queue else None
                if job is not None:
                    self._active.add(job)
            if self._deferred:
                self._flush_deferred()
            if job is not None and not self._process(job, worker_id):
                with self._cond:
                    self._abandoned -= 1
                return

    def _process(self, job: _Job, worker_id: int) -> bool:
        """Run the job's sync evaluators; False when this thread was abandoned mid-call."""
        if not job.planned:
            self._record_inline(job.inline, job.turn)
        if not job.planned and not self._plan(job):
            self._finish(job)
            return True
        if self._remote is not None and job.next_sync < len(job.sync):
            self._run_remote(job, self._remote)
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
                    return False
                del self._slots[worker_id]
            job.next_sync += 1
            self._record(job, evaluator, outcome)
        if job.asynchronous and not job.done and self._loop is not None:
            future: Future[None] = asyncio.run_coroutine_threadsafe(
                self._run_async(job), self._loop
            )
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            return True
        self._finish(job)
        return True

    def _run_remote(self, job: _Job, remote: ProcessExecutor) -> None:
        """Run the job's sync evaluators in the worker process (one round trip per turn)."""
        evaluators = job.sync[job.next_sync :]
        started = time.monotonic()
        try:
            outcomes = remote.evaluate([e.name for e in evaluators], job.turn, self._timeout)
        except Exception as error:
            if isinstance(error, TimeoutError):
                error = TimeoutError(f"no result within {self._timeout} s")
            failed = Score.failed
            outcomes = [
                EvaluationOutcome(failed(e.name, error), time.monotonic() - started, True)
                for e in evaluators
            ]
        job.next_sync = len(job.sync)
        for evaluator, outcome in zip(evaluators, outcomes, strict=True):
            self._record(job, evaluator, outcome)

    def _plan(self, job: _Job) -> bool:
        """Apply the turn filter and per-evaluator rates; False when nothing is left to run."""
        job.planned = True
        turn_filter = self.config.turn_filter
        if turn_filter is not None:
            try:
                keep = bool(turn_filter(job.turn))
            except Exception as error:
                logger.warning("turn_filter raised %s: %s", type(error).__name__, error)
                job.failed = True
                for name in job.pending:
                    self._emitter_for(job.turn).record_outcome(name, semconv.OUTCOME_ERROR)
                job.pending.clear()
                return False
            if not keep:
                self._sample_out(job, list(job.pending))
                return False
        for evaluator in self._sync + self._async:
            if trace_sampled(job.turn.trace_id, self.config.rate_for(evaluator.name)):
                (job.asynchronous if evaluator in self._async else job.sync).append(evaluator)
            else:
                self._sample_out(job, [evaluator.name])
        return bool(job.sync or job.asynchronous)

    def _sample_out(self, job: _Job, names: list[str]) -> None:
        """Count evaluations left out by the filter or a per-evaluator rate."""
        emitter = self._emitter_for(job.turn)
        for name in names:
            job.pending.discard(name)
            emitter.record_outcome(name, semconv.OUTCOME_SAMPLED_OUT)

    def _record(self, job: _Job, evaluator: AnyEvaluator, outcome: EvaluationOutcome) -> None:
        """Keep one evaluation's result on its job and record its metric points."""
        with self._cond:
            if job.done:
                return
            job.pending.discard(evaluator.name)
            if not is_skipped(outcome.score):  # "no judge configured": nothing ran, nothing to show
                job.scores.append(outcome.score)
                job.ran += 1
                job.failed = job.failed or not outcome.score.ok
        self._emitter_for(job.turn).record(outcome.score, outcome.duration_s)

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
        error = TimeoutError(f"no result within {self._timeout} s")
        job.next_sync += 1
        self._record(
            job,
            slot.evaluator,
            EvaluationOutcome(Score.failed(name, error), now - slot.started, True),
        )
        with self._cond:
            if not job.done:
                self._active.discard(job)
                self._queue.appendleft(job)  # the rest of this turn's work goes first
                self._cond.notify()
            replace = self._abandoned <= _MAX_ABANDONED_PER_WORKER * self.config.workers
        if replace and not self._stopping:
            self._start_worker()
        elif not replace:
            logger.error("too many evaluator calls are hung; not starting more worker threads")

    # --- the event loop --------------------------------------------------------------------------

    def _run_loop(self) -> None:
        """The event-loop thread running async evaluators."""
        background_thread_setup()
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _run_async(self, job: _Job) -> None:
        """Run a job's async evaluators concurrently, then finish the job."""
        await asyncio.gather(*(self._run_one(job, evaluator) for evaluator in job.asynchronous))
        self._finish(job)

    async def _run_one(self, job: _Job, evaluator: AnyEvaluator) -> None:
        """One async evaluation under the concurrency limit and the token budget."""
        assert self._semaphore is not None
        if self._over_budget(job, evaluator):
            return
        async with self._semaphore:
            if job.done or self._over_budget(job, evaluator):
                return
            outcome = await arun_evaluator(evaluator, job.turn, timeout_s=self._timeout)
        if self._budget is not None:
            self._budget.spend(sum(outcome.score.usage.values()))
        self._record(job, evaluator, outcome)

    def _over_budget(self, job: _Job, evaluator: AnyEvaluator) -> bool:
        """True (and counted as skipped) when the judge token budget is spent."""
        if self._budget is None or self._budget.allows():
            return False
        with self._cond:
            job.pending.discard(evaluator.name)
        self._emitter_for(job.turn).record_outcome(evaluator.name, semconv.OUTCOME_SKIPPED)
        return True

    # --- outcomes --------------------------------------------------------------------------------

    @staticmethod
    def _turn_outcome(inline: InlineResult, ran: int, failed: bool) -> str:
        """The turn-level outcome: errored, scored or sampled_out."""
        if failed or any(not outcome.score.ok for outcome in inline.outcomes):
            return "errored"
        return "scored" if ran or inline.outcomes else "sampled_out"

    def _finish(self, job: _Job, *, dropped: bool = False) -> None:
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
            outcome = "dropped" if dropped else self._turn_outcome(job.inline, job.ran, job.failed)
        if dropped:
            self._count_dropped(pending, job.turn)
        turn = job.turn
        if scores and turn.trace_id is not None and turn.span_id is not None:
            try:
                self._emitter_for(turn).emit_span((turn.trace_id, turn.span_id), scores)
            except Exception:
                logger.warning("could not emit the evaluation span", exc_info=True)
        with self._cond:
            self._active.discard(job)
            self._in_flight -= 1
            self._counters.add(outcome)
            self._cond.notify_all()

    # --- lifecycle -------------------------------------------------------------------------------

    def queue_size(self) -> int:
        """Turns waiting in the queue (and handed over, not yet queued)."""
        return len(self._queue) + len(self._inbox)

    def stats(self) -> RunnerStats:
        """Turn counts now (they always add up: see `RunnerStats.adds_up`)."""
        with self._cond:
            self._take_inbox()
            return self._counters.snapshot(self._in_flight, len(self._queue))

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued turn is finished; False when the deadline came first."""
        deadline = time.monotonic() + timeout_s
        self._flush_deferred()
        with self._cond:
            while self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def shutdown(self, timeout_s: float = 30.0, *, report: bool = True) -> bool:
        """Stop taking turns, drain within `timeout_s`, count what is left as dropped.

        `report=False` leaves the warning about dropped work to the caller (`configure()`'s
        shutdown says it once, with the telemetry that was not exported).
        """
        with self._cond:
            if self._stopping:
                return True
            self._closing = True
        drained = self.force_flush(timeout_s)
        with self._cond:
            self._take_inbox()
            leftovers = list(self._queue) + list(self._active)
            self._queue.clear()
            self._stopping = True  # from here on a handed-over turn is counted as dropped
            self._take_inbox()
            self._cond.notify_all()
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
        self._stop.set()
        if self._remote is not None:
            self._remote.close()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_and_stop)
        joined_by = time.monotonic() + _JOIN_BUDGET_S  # one budget for all: a hung call's
        for thread in self._threads:  # thread is abandoned, never waited for one by one
            if thread is not threading.current_thread():
                thread.join(max(0.0, joined_by - time.monotonic()))
        return drained

    def _cancel_and_stop(self) -> None:
        """Cancel the loop's tasks and stop it (runs on the loop thread)."""
        loop = self._loop
        assert loop is not None
        for task in asyncio.all_tasks(loop):
            task.cancel()
        loop.call_soon(loop.stop)  # one more turn of the loop lets the cancellations land
