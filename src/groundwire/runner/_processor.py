"""The span processor that feeds online evaluation from the app's live spans.

`on_end` only appends the ended span to a bounded hand-off queue (a full queue drops the span and,
for a turn's root, counts the turn as dropped). A feeder thread drains that queue into the
`TurnAssembler` and submits each completed turn to the background runner, so assembling turns
costs the app's thread nothing. With inline evaluators, `_on_ending` drains the queue on the app's
thread, asks the assembler for the turn rooted at the span that is ending, runs those evaluators
and writes their scores onto that span before it is exported (see `groundwire.runner._inline`).
No hook raises.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from typing import cast

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from groundwire import semconv
from groundwire._evaluator import EvaluationOutcome, Evaluator, run_evaluator
from groundwire._types import RagTurn, Score
from groundwire.assembly import SpanRecord, TurnAssembler
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.runner._background import BackgroundRunner
from groundwire.runner._inline import write_scores
from groundwire.runner._jobs import InlineResult
from groundwire.runner._sampling import trace_sampled
from groundwire.runner._threads import background_thread_setup

__all__ = ["EvaluationSpanProcessor"]

logger = logging.getLogger("groundwire.runner")

_MAX_PENDING_INLINE = 10_000
_FEED_INTERVAL_S = 0.01
_FEED_IDLE_INTERVAL_S = 0.2
_MAX_DAMAGED_TRACES = 10_000
_LEAF_KINDS = frozenset(
    {
        semconv.SPAN_KIND_RETRIEVER,
        semconv.SPAN_KIND_RERANKER,
        semconv.SPAN_KIND_LLM,
        semconv.SPAN_KIND_EMBEDDING,
        semconv.SPAN_KIND_TOOL,
        semconv.SPAN_KIND_EVALUATOR,
    }
)
"""Span kinds that never root a turn: inline mode does not look at them."""


class _Started:
    """A span that started, queued in order with ended spans (used with inline evaluators)."""

    __slots__ = ("span",)

    def __init__(self, span: Span) -> None:
        self.span = span


def _is_local_root(span: ReadableSpan) -> bool:
    """True for the outermost span this process recorded in its trace."""
    parent = span.parent
    return parent is None or parent.is_remote


class EvaluationSpanProcessor(SpanProcessor):
    """Turns ended spans into turns for the runner; runs inline evaluators as roots end."""

    def __init__(
        self,
        runner: BackgroundRunner,
        emitter: Emitter,
        *,
        assembler: TurnAssembler | None = None,
        max_pending_spans: int = 20_000,
        shutdown_timeout_s: float = 5.0,
    ) -> None:
        if isinstance(max_pending_spans, bool) or max_pending_spans < 1:
            raise ValueError(f"max_pending_spans must be at least 1, got {max_pending_spans!r}")
        self.runner = runner
        self._emitter = emitter
        self._assembler = (
            assembler if assembler is not None else TurnAssembler(live_content=LIVE_CONTENT)
        )
        self._inline = cast(tuple[Evaluator, ...], runner.config.inline_evaluators)
        self._inline_scores: OrderedDict[str, tuple[InlineResult, bool]] = OrderedDict()
        self._inline_lock = threading.Lock()
        self._spans: deque[ReadableSpan | _Started] = deque()
        self._max_pending_spans = max_pending_spans
        self._dropped_spans = 0
        self._drop_lock = threading.Lock()
        self._damaged: OrderedDict[int, None] = OrderedDict()
        """Traces that lost a span to a full hand-off queue (bounded)."""
        self._feed_lock = threading.Lock()
        self._stop = threading.Event()
        self.shutdown_timeout_s = shutdown_timeout_s
        self._closed = False
        self._feeder = threading.Thread(target=self._feed, name="groundwire-feeder", daemon=True)
        self._feeder.start()

    # --- the app's thread ------------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """With inline evaluators, note the start (one append) so that a span nested in an open
        span of the same instrumentation is never taken for a turn root when it ends."""
        if self._inline and not self._closed and len(self._spans) < self._max_pending_spans:
            self._spans.append(_Started(span))

    @staticmethod
    def _is_ours(span: ReadableSpan) -> bool:
        """True for spans groundwire itself emitted (never assembled into turns)."""
        scope = span.instrumentation_scope
        return scope is not None and scope.name == semconv.INSTRUMENTATION_SCOPE

    def on_end(self, span: ReadableSpan) -> None:
        """Hand the ended span to the feeder thread: one append; never blocks or raises."""
        spans = self._spans
        if len(spans) < self._max_pending_spans:
            if not self._closed:
                spans.append(span)  # groundwire's own spans are skipped by the feeder
            return
        if self._closed or self._is_ours(span):
            return
        context = span.context
        trace_id = context.trace_id if context is not None else 0
        with self._drop_lock:
            self._dropped_spans += 1
            self._damaged[trace_id] = None
            while len(self._damaged) > _MAX_DAMAGED_TRACES:
                self._damaged.popitem(last=False)
        if _is_local_root(span):
            with self._drop_lock:
                self._damaged.pop(trace_id, None)
            key = format(context.span_id, "016x") if context is not None else ""
            with self._inline_lock:
                kept = self._inline_scores.pop(key, None)
            self.runner.count_dropped_turn(kept[0] if kept is not None else None)

    def _on_ending(self, span: Span) -> None:
        """Inline evaluation of the turn rooted at `span`, on the app's thread; never raises."""
        if not self._inline or self._closed or self._is_ours(span):
            return
        attributes = span.attributes or {}
        if attributes.get(semconv.OPENINFERENCE_SPAN_KIND) in _LEAF_KINDS:
            return
        try:
            self._evaluate_inline(span)
        except Exception:
            logger.exception("inline evaluation failed")

    def _evaluate_inline(self, span: Span) -> None:
        """Assemble the ending span's turn, run inline evaluators, write the scores."""
        self.drain()  # the turn's children may still wait in the hand-off queue
        record = SpanRecord.from_readable(span)
        turn = self._assembler.turn_for(record)
        if turn is None or not self.runner.selects(turn):
            return
        result = self._run_inline(turn)
        if result is None:
            return
        written = write_scores(span, result.scores, events=self._emitter.span_events)
        with self._inline_lock:
            self._inline_scores[record.span_id] = (result, written)
            while len(self._inline_scores) > _MAX_PENDING_INLINE:
                self._inline_scores.popitem(last=False)

    def _run_inline(self, turn: RagTurn) -> InlineResult | None:
        """Run the inline evaluators (metrics are recorded later, by a worker)."""
        config = self.runner.config
        names = tuple(evaluator.name for evaluator in self._inline)
        if config.turn_filter is not None:
            try:
                if not config.turn_filter(turn):
                    return InlineResult(sampled_out=names)
            except Exception as error:
                logger.warning("turn_filter raised %s: %s", type(error).__name__, error)
                failed = (EvaluationOutcome(Score.failed(n, error), 0.0, True) for n in names)
                return InlineResult(outcomes=tuple(failed))
        outcomes: list[EvaluationOutcome] = []
        sampled_out: list[str] = []
        for evaluator in self._inline:
            if trace_sampled(turn.trace_id, config.rate_for(evaluator.name)):
                outcomes.append(run_evaluator(evaluator, turn))
            else:
                sampled_out.append(evaluator.name)
        return InlineResult(tuple(outcomes), tuple(sampled_out))

    # --- the feeder thread -----------------------------------------------------------------------

    def _feed(self) -> None:
        """The feeder thread: drain the hand-off queue every 10 ms while spans arrive, backing
        off to every 200 ms when idle (the app's thread never has to wake it)."""
        background_thread_setup()
        interval = _FEED_INTERVAL_S
        while not self._stop.wait(interval):
            busy = bool(self._spans)
            self.drain()
            interval = _FEED_INTERVAL_S if busy else min(interval * 2, _FEED_IDLE_INTERVAL_S)

    def drain(self) -> None:
        """Assemble every span waiting in the hand-off queue and submit the turns they complete."""
        with self._feed_lock:
            while True:
                try:
                    span = self._spans.popleft()
                except IndexError:
                    return
                self._assemble(span)

    def _assemble(self, item: ReadableSpan | _Started) -> None:
        """Feed one span to the assembler; submit the turns it completes."""
        if isinstance(item, _Started):
            if not self._is_ours(item.span):
                self._assembler.start(SpanRecord.from_readable(item.span))
            return
        span = item
        if self._is_ours(span):
            return
        try:
            turns = self._assembler.add(SpanRecord.from_readable(span))
            if _is_local_root(span) and self._damaged:
                self._settle_damaged(span, bool(turns))
            if not turns:
                return
            with self._inline_lock:
                inline = [self._inline_scores.pop(t.span_id or "", None) for t in turns]
            for turn, kept in zip(turns, inline, strict=True):
                result: InlineResult | None = None
                if kept is not None:
                    result, written = kept
                    if turn.trace_id and turn.span_id:
                        self._emit_inline(turn.trace_id, turn.span_id, result, written)
                self.runner.submit(turn, result)
        except Exception:
            logger.exception("could not assemble turns from an ended span")

    def _emit_inline(
        self, trace_id: str, span_id: str, result: InlineResult, written: bool
    ) -> None:
        """Inline scores as log records on the turn's root span, or on a carrier span when they
        could not be written onto it. Runs where turns are assembled (the feeder thread, unless
        the app's thread drained the hand-off queue), never in the inline hook itself."""
        target = (trace_id, span_id)
        mode = semconv.EVALUATION_MODE_INLINE
        if written:
            self._emitter.emit_logs(target, result.scores, mode=mode)
        else:
            self._emitter.emit_span(target, result.scores, mode=mode)

    def _settle_damaged(self, root: ReadableSpan, assembled: bool) -> None:
        """A trace that lost spans to a full hand-off queue and then gave no turn: count the
        turn it probably was as dropped (never lose one silently)."""
        trace_id = root.context.trace_id if root.context is not None else 0
        with self._drop_lock:
            damaged = self._damaged.pop(trace_id, False) is None
        if damaged and not assembled:
            self.runner.count_dropped_turn()

    @property
    def dropped_spans(self) -> int:
        """Spans dropped because the hand-off queue was full."""
        return self._dropped_spans

    # --- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Assemble what is pending, then stop looking at spans (the provider may outlive us)."""
        self.drain()
        self._closed = True
        self._stop.set()

    def shutdown(self) -> None:
        """On the tracer provider's shutdown: assemble what is pending and drain the runner."""
        self.drain()
        self.runner.shutdown(self.shutdown_timeout_s)
        self._closed = True
        self._stop.set()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Assemble pending spans and wait until the queued turns are scored."""
        self.drain()
        return self.runner.force_flush(timeout_millis / 1000)
