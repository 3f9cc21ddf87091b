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

With a persistent queue each request comes with its row number (`seqs`). The scorer tells the
gateway, through `take_scored`, which requests are done for scoring (every trace they hold
released and its turns finished by the runner, the results flushed downstream) and which trace
ids were scored, so that the gateway can record both durably; a restarted gateway passes the
trace ids scored before (`already_scored`) and their spans are not scored again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable

from groundwire import semconv
from groundwire._types import RagTurn
from groundwire.assembly import turns_from_spans
from groundwire.emit import Emitter
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._signals import CONTENT_PROTOBUF, SIGNALS, MalformedRequestError, decode
from groundwire.offline.readers import spans_from_message
from groundwire.runner import BackgroundRunner, RunnerConfig, RunnerStats
from groundwire.trace_window import ReleasedTrace, TraceWindow

__all__ = ["ScoredReporter", "Scorer", "build_scorer"]

_REMEMBER = 100_000
"""Released trace ids remembered to tell a late request's traces from new ones."""

logger = logging.getLogger("groundwire.gateway")


class Scorer:
    """Groups the spans of fed requests by trace and submits the turns of due traces."""

    def __init__(
        self,
        runner: BackgroundRunner,
        window: TraceWindow,
        metrics: GatewayMetrics,
        *,
        already_scored: Iterable[str] = (),
        flush: Callable[[], object] | None = None,
    ) -> None:
        """Score through `runner`, holding spans in `window`; counts go to `metrics`; the traces
        in `already_scored` are not scored again; `flush` exports the results written so far."""
        self.runner = runner
        self._window = window
        self._metrics = metrics
        self._turns = 0
        self._already = set(already_scored)
        self._flush = flush
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, list[int]] = {}
        """Open trace id -> the queued requests holding its spans."""
        self._left: dict[int, int] = {}
        """Queued request -> its traces not yet released."""
        self._awaiting: deque[tuple[list[str], list[int], list[str]]] = deque()
        """(traces whose turns must finish first, requests done, trace ids scored), in order."""
        self._unfinished: dict[str, int] = {}
        """Trace id -> its turns queued in the runner and not finished (see `turn_finished`)."""
        self._unfinished_lock = threading.Lock()

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

    def add(self, body: bytes, spans: int, received: float, seqs: tuple[int, ...] = ()) -> None:
        """Group the spans of one protobuf traces request (`spans` of them, received at
        monotonic `received`; `seqs`: its rows in the persistent queue); a request that cannot
        be read counts its spans as `not_scored`."""
        try:
            records = spans_from_message(decode(SIGNALS["traces"], body, CONTENT_PROTOBUF))
        except (MalformedRequestError, ValueError, TypeError) as error:
            self._metrics.not_scored(spans, "unreadable")
            logger.warning("a traces request cannot be scored (it was forwarded): %s", error)
            self._note(list(seqs), [])
            return
        if self._already:
            kept = [record for record in records if record.trace_id not in self._already]
            if len(kept) < len(records):
                self._metrics.late_spans(len(records) - len(kept))
            records = kept
        before = self._window.late_spans
        forced = self._window.add(records, time.monotonic(), received)
        late = self._window.late_spans - before
        if late:
            self._metrics.late_spans(late)
        if seqs:
            self._track(seqs, {record.trace_id for record in records})
        if forced:
            self._metrics.evicted(len(forced))
            self._submit(forced)

    def tick(self, now: float) -> None:
        """Submit the traces due at `now` (monotonic seconds)."""
        self._submit(self._window.due(now))

    def _track(self, seqs: tuple[int, ...], trace_ids: set[str]) -> None:
        """Remember which open traces the queued requests `seqs` wait for."""
        fresh = [trace_id for trace_id in trace_ids if trace_id not in self._recent]
        if not fresh:
            self._note(list(seqs), [])
            return
        for seq in seqs:
            self._left[seq] = self._left.get(seq, 0) + len(fresh)
            for trace_id in fresh:
                self._waiting.setdefault(trace_id, []).append(seq)

    def _note(self, done: list[int], trace_ids: list[str]) -> None:
        """Requests done and traces scored once the runner has finished the turns of these
        traces (and of every trace noted before: a request may hold traces of both)."""
        if done or trace_ids:
            self._awaiting.append((trace_ids, done, trace_ids))

    def turn_finished(self, turn: RagTurn, outcome: str) -> None:
        """The runner's `on_finished`: one queued turn of `turn.trace_id` has its results
        emitted. A turn that shutdown's deadline dropped leaves its trace unfinished, so the
        trace is not recorded as scored and a restarted gateway scores it from the queue."""
        if outcome == semconv.OUTCOME_DROPPED:
            return
        key = turn.trace_id or ""
        with self._unfinished_lock:
            left = self._unfinished.get(key, 0) - 1
            if left > 0:
                self._unfinished[key] = left
            else:
                self._unfinished.pop(key, None)

    def _queue_turn(self, turn: RagTurn) -> None:
        """Submit one turn, counting it unfinished for its trace while the runner has it."""
        key = turn.trace_id or ""
        with self._unfinished_lock:
            self._unfinished[key] = self._unfinished.get(key, 0) + 1
        if not self.runner.submit(turn):  # sampled out or dropped at the door: nothing to wait
            self.turn_finished(turn, semconv.OUTCOME_SAMPLED_OUT)

    def take_scored(self) -> tuple[list[int], list[str]]:
        """The queued requests done for scoring and the trace ids scored, whose turns the
        runner has finished since the last call, in the order they were noted (flush their
        results with `flush_results` before recording them). A trace is scored only when every
        one of its turns is finished, whatever order the runner's workers finish them in."""
        done: list[int] = []
        ids: list[str] = []
        while self._awaiting and not self._any_unfinished(self._awaiting[0][0]):
            _, seqs, trace_ids = self._awaiting.popleft()
            done.extend(seqs)
            ids.extend(trace_ids)
        return done, ids

    def _any_unfinished(self, trace_ids: list[str]) -> bool:
        """True while a turn of one of `trace_ids` is still with the runner."""
        with self._unfinished_lock:
            return any(trace_id in self._unfinished for trace_id in trace_ids)

    def flush_results(self) -> None:
        """Export the results written so far (waits for the exporters)."""
        if self._flush is not None:
            self._flush()

    def _submit(self, traces: list[ReleasedTrace]) -> None:
        """Assemble released traces and submit their turns (the runner samples and queues)."""
        now = time.monotonic()
        done: list[int] = []
        for trace in traces:
            turns = turns_from_spans(trace.spans)
            for turn in turns:
                self._queue_turn(turn)
            self._turns += len(turns)
            self._metrics.scoring_lag(now - trace.first_seen)
            self._recent[trace.trace_id] = None
            for seq in self._waiting.pop(trace.trace_id, ()):
                self._left[seq] -= 1
                if not self._left[seq]:
                    del self._left[seq]
                    done.append(seq)
        while len(self._recent) > _REMEMBER:
            self._recent.popitem(last=False)
        self._note(done, [trace.trace_id for trace in traces])

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


def build_scorer(
    config: RunnerConfig,
    emitter: Emitter,
    window: TraceWindow,
    metrics: GatewayMetrics,
    *,
    already_scored: Iterable[str] = (),
    flush: Callable[[], object] | None = None,
) -> Scorer:
    """A `Scorer` and the `BackgroundRunner` behind it, wired so that the scorer hears of each
    finished turn (`Scorer.turn_finished`): a trace counts as scored when its own turns are."""
    scorer: Scorer | None = None

    def finished(turn: RagTurn, outcome: str) -> None:
        if scorer is not None:
            scorer.turn_finished(turn, outcome)

    runner = BackgroundRunner(config, emitter, on_finished=finished)
    scorer = Scorer(runner, window, metrics, already_scored=already_scored, flush=flush)
    return scorer


class ScoredReporter:
    """Reports scored traces once their results are exported, on a thread of its own.

    Waiting for the exporters (seconds while the downstream refuses and they retry) must not
    stop scoring, nor hold back the reports of traces whose results went out: without a
    persistent queue, the longer a result is exported but not recorded, the likelier a crash
    scores its turn twice. With one, `results(trace_ids, everything)` takes the scored traces'
    results (`ResultCapture.take`) and they travel with the report, to be committed with it.
    """

    def __init__(
        self,
        flush: Callable[[], object],
        send: Callable[[list[int], list[str], list[ResultRequest]], None],
        results: Callable[[list[str], bool], list[ResultRequest]] | None = None,
    ) -> None:
        """`flush()` exports the results written so far; `send(requests, trace_ids, results)`
        reports; `results`, when given, takes the results of the reported traces."""
        self._flush = flush
        self._send = send
        self._results = results
        self._items: queue.SimpleQueue[tuple[list[int], list[str]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="gateway-scored", daemon=True)
        self._thread.start()

    def offer(self, done: list[int], trace_ids: list[str]) -> None:
        """Report these once what was written before now is exported."""
        self._items.put((done, trace_ids))

    def _run(self) -> None:
        while True:
            item = self._items.get()
            done: list[int] = []
            ids: list[str] = []
            stop = item is None
            if item is not None:
                done, ids = list(item[0]), list(item[1])
            while not stop and not self._items.empty():  # one flush for everything waiting
                more = self._items.get()
                if more is None:
                    stop = True
                    break
                done.extend(more[0])
                ids.extend(more[1])
            self._report(done, ids, last=stop)
            if stop:
                return

    def _report(self, done: list[int], ids: list[str], *, last: bool) -> None:
        """Flush, then send one report (at the `last` one, with every result still held)."""
        try:
            if ids or (last and self._results is not None):
                self._flush()
            results = [] if self._results is None else self._results(ids, last)
            if done or ids or results:
                self._send(done, ids, results)
        except Exception:
            logger.exception("reporting scored traces failed")

    def close(self, timeout_s: float) -> None:
        """Report what is waiting (within `timeout_s`), then stop."""
        self._items.put(None)
        self._thread.join(timeout_s)
