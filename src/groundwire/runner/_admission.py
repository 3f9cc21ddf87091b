"""Admission and counting: which turns get in, the bounded queue, and every turn's count.

The app's thread only samples and appends to an inbox (a full queue drops; nothing blocks or
raises). It takes no lock while a worker is busy: the workers move the inbox into the queue and
keep every count, so a busy worker holding the runner's lock never holds up the app. Turns that
will not be evaluated (sampled out, dropped) are handed over as `Lost` records and counted by a
worker, in metrics too (`_emission`). `plan` then applies the turn filter and per-evaluator
rates on the worker's thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque

from groundwire import semconv
from groundwire._evaluator import AnyEvaluator
from groundwire._types import RagTurn
from groundwire.runner._config import RunnerConfig
from groundwire.runner._emission import Emission
from groundwire.runner._jobs import NO_INLINE, InlineResult, Job, Lost, service_of
from groundwire.runner._sampling import trace_sampled
from groundwire.runner._stats import RunnerStats, TurnCounters

__all__ = ["Admission", "plan"]

logger = logging.getLogger("groundwire.runner")

_DROP_LOG_INTERVAL_S = 10.0
_IDLE_WAKE_S = 1.0
_LOST_WAKE = 1024
"""Sampled-out or dropped turns handed over that wake an idle worker to count them."""


class Admission:
    """The inbox, the queue and the turn counters, under one lock (`cond`)."""

    def __init__(self, config: RunnerConfig, emission: Emission, *, has_work: bool) -> None:
        self.config = config
        self._emission = emission
        self._has_work = has_work
        """Background evaluators are configured (else only inline results are counted)."""
        self._background_names = tuple(e.name for e in config.background_evaluators)
        self.cond = threading.Condition()
        self._inbox: deque[Job] = deque()
        """Jobs appended by the app's threads without the lock; `take_inbox` queues them."""
        self._lost: deque[Lost] = deque()
        """Turns sampled out or dropped on the app's threads, counted by `take_inbox`."""
        self._idle_workers = 0
        """Workers waiting for work: the app's thread notifies (under the lock) only then."""
        self._wake_sent = False
        """A wake-up is on its way: further hand-overs need not take the lock to send one."""
        self._queue: deque[Job] = deque()
        self._active: set[Job] = set()
        self._in_flight = 0
        self._counters = TurnCounters()
        self._closing = False
        self.stopping = False
        """Shutdown took the leftovers: a turn handed over now is counted as dropped."""
        self._last_drop_log = 0.0
        self._deferred: dict[tuple[str, str | None], int] = {}
        """Turns sampled out or dropped on the app's thread, counted in metrics by a worker."""

    # --- the app's thread ------------------------------------------------------------------------

    def admit(self, turn: RagTurn, inline: InlineResult | None) -> bool:
        """Sample, then queue the turn or count it; True when it was queued."""
        if not trace_sampled(turn.trace_id, self.config.sample_rate):
            self._hand_over_lost(Lost(semconv.OUTCOME_SAMPLED_OUT, service_of(turn)))
            return False
        inline = inline or NO_INLINE
        if not (self._has_work or inline.outcomes or inline.sampled_out):
            lost = Lost(semconv.OUTCOME_SAMPLED_OUT, service_of(turn), count_evaluations=False)
            self._hand_over_lost(lost)
            return False
        # Both lengths are read without the lock: threads submitting at the same instant may
        # overshoot the bound by one turn each, never more.
        full = self._closing or len(self._queue) + len(self._inbox) >= self.config.max_queue_size
        if full:
            self._hand_over_lost(Lost(semconv.OUTCOME_DROPPED, service_of(turn)))
            self._emission.record_inline(inline, turn)
            self._log_drop()
            return False
        self._hand_over(Job(turn, inline, set(self._background_names)))
        return True

    def count_dropped_turn(self, inline: InlineResult | None, turn: RagTurn | None) -> None:
        """Count a turn lost before it could be submitted (its root span was dropped)."""
        self._hand_over_lost(Lost(semconv.OUTCOME_DROPPED, service_of(turn)))
        if inline is not None:
            self._emission.record_inline(inline, turn)
        self._log_drop()

    def _hand_over(self, job: Job) -> None:
        """Append to the inbox (atomic; no lock) and wake a worker if one is waiting.

        A worker announces itself idle before it checks the inbox a last time, and this reads
        the idle count after appending, so either the worker sees the job or it is notified.
        """
        self._inbox.append(job)
        if self.stopping:
            self.flush_deferred()  # no worker is left: count it here (as dropped)
        elif self._idle_workers and not self._wake_sent:
            self._wake()

    def _hand_over_lost(self, lost: Lost) -> None:
        """Append a turn to count (no lock; an idle worker counts it within a second or once
        1,024 wait, and `stats()`, `force_flush()` and `shutdown()` count it at once)."""
        self._lost.append(lost)
        if self.stopping:
            self.flush_deferred()
        elif self._idle_workers and not self._wake_sent and len(self._lost) >= _LOST_WAKE:
            self._wake()

    def _wake(self) -> None:
        """Wake one idle worker. Only one wake-up is sent until a worker wakes: app threads
        lining up for the lock would otherwise keep the waking worker from taking it."""
        self._wake_sent = True
        with self.cond:
            self.cond.notify()

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

    def queue_size(self) -> int:
        """Turns waiting in the queue (and handed over, not yet queued)."""
        return len(self._queue) + len(self._inbox)

    # --- the workers -----------------------------------------------------------------------------

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
            if self.stopping:  # handed over while shutdown drained: too late to run
                counters.dropped += 1
                self._defer(semconv.OUTCOME_DROPPED, service_of(job.turn))
                self._emission.record_inline(job.inline, job.turn)
            else:
                self._queue.append(job)
                self._in_flight += 1
                self.cond.notify()

    def _defer(self, outcome: str, service: str | None, turns: int = 1) -> None:
        """Count turns' evaluations as `outcome` later, off the app's thread (lock held)."""
        key = (outcome, service)
        self._deferred[key] = self._deferred.get(key, 0) + turns

    def flush_deferred(self) -> None:
        """Turn the deferred sampled-out/dropped turn counts into metric points."""
        with self.cond:
            self._take_inbox()
            deferred, self._deferred = self._deferred, {}
        self._emission.count_turns(deferred)

    def next_job(self) -> tuple[bool, Job | None]:
        """A worker's wait for work: (False, None) on shutdown, else (True, a job or None).

        Counts what was handed over on the way, waking at least once a second to do so.
        """
        with self.cond:
            self._take_inbox()
            while not self._queue and not self.stopping and not self._deferred:
                self._idle_workers += 1
                try:
                    if not self._inbox:  # the last look, after saying we are idle
                        self.cond.wait(_IDLE_WAKE_S)
                finally:
                    self._idle_workers -= 1
                    self._wake_sent = False
                self._take_inbox()
            if self.stopping:
                return False, None
            job = self._queue.popleft() if self._queue else None
            if job is not None:
                self._active.add(job)
        if self._deferred:
            self.flush_deferred()
        return True, job

    def requeue_first(self, job: Job) -> None:
        """Put an unfinished job back at the head of the queue (its worker was abandoned)."""
        with self.cond:
            if not job.done:
                self._active.discard(job)
                self._queue.appendleft(job)  # the rest of this turn's work goes first
                self.cond.notify()

    def count_finished(self, job: Job, outcome: str) -> None:
        """Count a finished job's turn-level outcome (flushers wait for this)."""
        with self.cond:
            self._active.discard(job)
            self._in_flight -= 1
            self._counters.add(outcome)
            self.cond.notify_all()

    # --- flush and shutdown ----------------------------------------------------------------------

    def stats(self) -> RunnerStats:
        """Turn counts now (they always add up: see `RunnerStats.adds_up`)."""
        with self.cond:
            self._take_inbox()
            return self._counters.snapshot(self._in_flight, len(self._queue))

    def wait_finished(self, deadline: float) -> bool:
        """Wait until no turn is in flight; False when the (monotonic) deadline came first."""
        with self.cond:
            while self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.cond.wait(remaining)
        return True

    def close(self) -> bool:
        """Take no more turns (they are dropped, counted); False when already stopped."""
        with self.cond:
            if self.stopping:
                return False
            self._closing = True
            return True

    def stop(self) -> list[Job]:
        """Stop the workers and take every unfinished job (to count as dropped)."""
        with self.cond:
            self._take_inbox()
            leftovers = list(self._queue) + list(self._active)
            self._queue.clear()
            self.stopping = True  # from here on a handed-over turn is counted as dropped
            self._take_inbox()
            self.cond.notify_all()
        return leftovers


def plan(
    job: Job,
    config: RunnerConfig,
    evaluators: tuple[list[AnyEvaluator], list[AnyEvaluator]],
    emission: Emission,
) -> bool:
    """Apply the turn filter and per-evaluator rates to a job's (sync, async) evaluators;
    False when nothing is left to run (what was left out is counted)."""
    job.planned = True
    if config.turn_filter is not None:
        try:
            keep = bool(config.turn_filter(job.turn))
        except Exception as error:
            logger.warning("turn_filter raised %s: %s", type(error).__name__, error)
            job.failed = True
            emission.count(job.turn, list(job.pending), semconv.OUTCOME_ERROR)
            job.pending.clear()
            return False
        if not keep:
            _sample_out(job, list(job.pending), emission)
            return False
    sync, asynchronous = evaluators
    for evaluator in sync + asynchronous:
        if trace_sampled(job.turn.trace_id, config.rate_for(evaluator.name)):
            (job.asynchronous if evaluator in asynchronous else job.sync).append(evaluator)
        else:
            _sample_out(job, [evaluator.name], emission)
    return bool(job.sync or job.asynchronous)


def _sample_out(job: Job, names: list[str], emission: Emission) -> None:
    """Count evaluations left out by the filter or a per-evaluator rate."""
    for name in names:
        job.pending.discard(name)
    emission.count(job.turn, names, semconv.OUTCOME_SAMPLED_OUT)
