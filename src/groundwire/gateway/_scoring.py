"""The scoring side: decoded trace requests in, turns to the background runner, results out.

The receiver hands each decoded traces request to `Scorer.feed`, which only appends to a bounded
queue (a full queue counts the request's spans as `not_scored` and returns; forwarding never
waits for scoring). One thread converts the spans with the offline reader's `spans_from_message`
(the same `SpanRecord`s every other source gives the assembler), groups them by trace
(`TraceGrouper`), assembles the due traces with `turns_from_spans` and submits the turns to the
same `BackgroundRunner` that in-process scoring uses, whose `Emitter` writes the carrier spans,
result events and metrics through providers that export to the gateway's downstream.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Final

from groundwire.assembly import turns_from_spans
from groundwire.gateway._grouping import DueTrace, TraceGrouper
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.offline.readers._otlp_proto import spans_from_message
from groundwire.runner import BackgroundRunner, RunnerStats
from groundwire.runner._background import background_thread_setup

__all__ = ["Scorer"]

logger = logging.getLogger("groundwire.gateway")

_TICK_S: Final = 0.1
_STOP: Final = object()


class Scorer:
    """Groups fed spans by trace and submits the turns of due traces to the runner."""

    def __init__(
        self,
        runner: BackgroundRunner,
        grouper: TraceGrouper,
        metrics: GatewayMetrics,
        *,
        max_pending: int = 1000,
    ) -> None:
        """Score through `runner`; at most `max_pending` requests wait for the scoring thread."""
        self.runner = runner
        self._grouper = grouper
        self._metrics = metrics
        self._queue: queue.Queue[Any] = queue.Queue(max_pending)
        self._closing = False
        self._turns = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="groundwire-gateway-scorer")
        self._thread.daemon = True
        self._thread.start()

    @property
    def open_traces(self) -> int:
        """Traces being grouped."""
        return self._grouper.open_traces

    @property
    def pending_requests(self) -> int:
        """Requests fed but not yet grouped."""
        return self._queue.qsize()

    @property
    def turns_submitted(self) -> int:
        """Turns handed to the runner so far."""
        return self._turns

    def stats(self) -> RunnerStats:
        """The runner's turn counts."""
        return self.runner.stats()

    def feed(self, message: Any, spans: int, received: float | None = None) -> bool:
        """Queue a decoded traces request for scoring; never blocks (False: counted, not queued).

        `received` is when it arrived (monotonic seconds; default now), for the scoring lag.
        """
        if self._closing:
            self._metrics.not_scored(spans, "shutdown")
            return False
        try:
            self._queue.put_nowait((message, time.monotonic() if received is None else received))
        except queue.Full:
            self._metrics.not_scored(spans, "scoring_queue_full")
            return False
        return True

    def _work(self) -> None:
        """The scoring thread: convert, group, hand over due traces, until told to stop."""
        background_thread_setup()
        while True:
            try:
                item = self._queue.get(timeout=_TICK_S)
            except queue.Empty:
                item = None
            if item is _STOP:
                return
            try:
                if item is not None:
                    self._add(*item)
                self._submit(self._grouper.due(time.monotonic()))
            except Exception:
                logger.exception("scoring step failed; the telemetry was still forwarded")

    def _add(self, message: Any, received: float) -> None:
        """Group the spans of one request."""
        try:
            records = spans_from_message(message)
        except (ValueError, TypeError) as error:
            spans = sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
            self._metrics.not_scored(spans, "unreadable")
            logger.warning("a traces request cannot be scored (it was forwarded): %s", error)
            return
        before = self._grouper.late_spans
        evicted = self._grouper.add(records, time.monotonic(), received)
        late = self._grouper.late_spans - before
        if late:
            self._metrics.late_spans(late)
        if evicted:
            self._metrics.evicted(len(evicted))
            self._submit(evicted)

    def _submit(self, traces: list[DueTrace]) -> None:
        """Assemble due traces and submit their turns (the runner samples and queues)."""
        now = time.monotonic()
        for due in traces:
            turns = turns_from_spans(due.spans)
            for turn in turns:
                self.runner.submit(turn)
            with self._lock:
                self._turns += len(turns)
            self._metrics.scoring_lag(now - due.first_seen)

    def shutdown(self, timeout_s: float) -> tuple[int, bool]:
        """Score queued requests and open traces within `timeout_s`; (turns handed, drained)."""
        deadline = time.monotonic() + timeout_s
        self._closing = True
        self._queue.put(_STOP)
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            logger.warning("the scoring thread did not stop before the deadline")
        else:
            self._submit(self._grouper.close_all())
        drained = self.runner.shutdown(max(0.0, deadline - time.monotonic()))
        return self._turns, drained and not self._thread.is_alive()
