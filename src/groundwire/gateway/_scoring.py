"""The scoring side, in the scoring process: request bytes in, turns to the runner, results out.

`Scorer.add` takes one traces request as protobuf bytes (those that arrived at the gateway, or
the one encoding of an OTLP/JSON request) with the span count the receiver took, decodes it with
the receiver's own `decode` and reads its spans with the offline reader's `spans_from_message`
(the same `SpanRecord`s every other source gives the assembler). The spans are held in the shared
trace window (`groundwire.trace_window.TraceWindow`, on the monotonic clock); `tick` hands the due
traces, and `add` those forced out at a bound, to `turns_from_spans` and submits each turn to the
same `BackgroundRunner` that in-process scoring uses, whose `Emitter` writes the carrier spans,
result events and metrics through providers that export to the gateway's downstream. Everything
here runs on the scoring process's one loop (`_worker.scoring_main`); the runner's own threads
score.
"""

from __future__ import annotations

import logging
import time

from groundwire.assembly import turns_from_spans
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._signals import CONTENT_PROTOBUF, SIGNALS, MalformedRequestError, decode
from groundwire.offline.readers import spans_from_message
from groundwire.runner import BackgroundRunner, RunnerStats
from groundwire.trace_window import ReleasedTrace, TraceWindow

__all__ = ["Scorer"]

logger = logging.getLogger("groundwire.gateway")


class Scorer:
    """Groups the spans of fed requests by trace and submits the turns of due traces."""

    def __init__(
        self, runner: BackgroundRunner, window: TraceWindow, metrics: GatewayMetrics
    ) -> None:
        """Score through `runner`, holding spans in `window`; counts go to `metrics`."""
        self.runner = runner
        self._window = window
        self._metrics = metrics
        self._turns = 0

    @property
    def open_traces(self) -> int:
        """Traces being grouped."""
        return self._window.held_traces

    @property
    def turns_submitted(self) -> int:
        """Turns handed to the runner so far."""
        return self._turns

    def stats(self) -> RunnerStats:
        """The runner's turn counts."""
        return self.runner.stats()

    def add(self, body: bytes, spans: int, received: float) -> None:
        """Group the spans of one protobuf traces request (`spans` of them, received at
        monotonic `received`); a request that cannot be read counts its spans as `not_scored`."""
        try:
            records = spans_from_message(decode(SIGNALS["traces"], body, CONTENT_PROTOBUF))
        except (MalformedRequestError, ValueError, TypeError) as error:
            self._metrics.not_scored(spans, "unreadable")
            logger.warning("a traces request cannot be scored (it was forwarded): %s", error)
            return
        before = self._window.late_spans
        forced = self._window.add(records, time.monotonic(), received)
        late = self._window.late_spans - before
        if late:
            self._metrics.late_spans(late)
        if forced:
            self._metrics.evicted(len(forced))
            self._submit(forced)

    def tick(self, now: float) -> None:
        """Submit the traces due at `now` (monotonic seconds)."""
        self._submit(self._window.due(now))

    def _submit(self, traces: list[ReleasedTrace]) -> None:
        """Assemble released traces and submit their turns (the runner samples and queues)."""
        now = time.monotonic()
        for trace in traces:
            turns = turns_from_spans(trace.spans)
            for turn in turns:
                self.runner.submit(turn)
            self._turns += len(turns)
            self._metrics.scoring_lag(now - trace.first_seen)

    def shutdown(self, timeout_s: float) -> tuple[int, bool]:
        """Score every open trace as it stands and drain the runner within `timeout_s`;
        (turns handed to the runner, drained in time)."""
        deadline = time.monotonic() + timeout_s
        try:
            self._submit(self._window.flush())
        except Exception:
            logger.exception("scoring the open traces at shutdown failed")
        drained = self.runner.shutdown(max(0.0, deadline - time.monotonic()))
        return self._turns, drained
