"""The span processor that feeds online evaluation from the app's live spans.

`on_end` hands every ended span to the `TurnAssembler`; each turn it completes goes to the
background runner. With inline evaluators, `_on_ending` asks the assembler for the turn rooted at
the span that is ending, runs those evaluators on the app's thread, and writes their scores onto
that span before it is exported (see `groundwire.runner._inline`). Neither hook raises.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import cast

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from groundwire import semconv
from groundwire._evaluator import EvaluationOutcome, Evaluator, run_evaluator
from groundwire._types import RagTurn
from groundwire.assembly import SpanRecord, TurnAssembler
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.runner._background import BackgroundRunner, InlineResult
from groundwire.runner._inline import write_scores
from groundwire.runner._sampling import trace_sampled

__all__ = ["EvaluationSpanProcessor"]

logger = logging.getLogger("groundwire.runner")

_MAX_PENDING_INLINE = 10_000


class EvaluationSpanProcessor(SpanProcessor):
    """Turns ended spans into turns for the runner; runs inline evaluators as roots end."""

    def __init__(
        self,
        runner: BackgroundRunner,
        emitter: Emitter,
        *,
        assembler: TurnAssembler | None = None,
        shutdown_timeout_s: float = 5.0,
    ) -> None:
        self.runner = runner
        self._emitter = emitter
        self._assembler = (
            assembler if assembler is not None else TurnAssembler(live_content=LIVE_CONTENT)
        )
        self._lock = threading.Lock()
        self._inline = cast(tuple[Evaluator, ...], runner.config.inline_evaluators)
        self._inline_scores: OrderedDict[str, tuple[InlineResult, bool]] = OrderedDict()
        self.shutdown_timeout_s = shutdown_timeout_s
        self._closed = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    @staticmethod
    def _is_ours(span: ReadableSpan) -> bool:
        scope = span.instrumentation_scope
        return scope is not None and scope.name == semconv.INSTRUMENTATION_SCOPE

    def _on_ending(self, span: Span) -> None:
        """Inline evaluation of the turn rooted at `span`, on the app's thread; never raises."""
        if not self._inline or self._closed or self._is_ours(span):
            return
        try:
            self._evaluate_inline(span)
        except Exception:
            logger.exception("inline evaluation failed")

    def _evaluate_inline(self, span: Span) -> None:
        record = SpanRecord.from_readable(span)
        turn = self._assembler.turn_for(record)
        if turn is None or not self.runner.selects(turn):
            return
        result = self._run_inline(turn)
        if result is None:
            return
        written = write_scores(span, result.scores)
        with self._lock:
            self._inline_scores[record.span_id] = (result, written)
            while len(self._inline_scores) > _MAX_PENDING_INLINE:
                self._inline_scores.popitem(last=False)

    def _run_inline(self, turn: RagTurn) -> InlineResult | None:
        """Run the inline evaluators (metrics are recorded later, by a worker)."""
        config = self.runner.config
        if config.turn_filter is not None:
            try:
                if not config.turn_filter(turn):
                    return None
            except Exception as error:
                logger.warning("turn_filter raised %s: %s", type(error).__name__, error)
                return None
        outcomes: list[EvaluationOutcome] = []
        sampled_out: list[str] = []
        for evaluator in self._inline:
            if trace_sampled(turn.trace_id, config.rate_for(evaluator.name)):
                outcomes.append(run_evaluator(evaluator, turn))
            else:
                sampled_out.append(evaluator.name)
        return InlineResult(tuple(outcomes), tuple(sampled_out))

    def on_end(self, span: ReadableSpan) -> None:
        """Assemble; submit each completed turn to the background runner; never raises."""
        if self._closed or self._is_ours(span):
            return
        try:
            record = SpanRecord.from_readable(span)
            turns = self._assembler.add(record)
            if not turns:
                return
            with self._lock:
                inline = [self._inline_scores.pop(t.span_id or "", None) for t in turns]
            for turn, kept in zip(turns, inline, strict=True):
                result: InlineResult | None = None
                if kept is not None:
                    result, written = kept
                    if not written and turn.trace_id and turn.span_id:
                        target = (turn.trace_id, turn.span_id)
                        self._emitter.emit_span(target, result.scores, mode="inline")
                self.runner.submit(turn, result)
        except Exception:
            logger.exception("could not assemble turns from an ended span")

    def close(self) -> None:
        """Stop looking at spans (the tracer provider may outlive groundwire's configuration)."""
        self._closed = True

    def shutdown(self) -> None:
        """Drain the runner (within the shutdown timeout) when the tracer provider shuts down."""
        self.runner.shutdown(self.shutdown_timeout_s)
        self._closed = True

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until the queued turns are scored, up to `timeout_millis`."""
        return self.runner.force_flush(timeout_millis / 1000)
