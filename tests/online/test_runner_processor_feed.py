"""`EvaluationSpanProcessor` (`runner._processor`): the feeder thread's pace, a damaged trace
that still assembles its turn, and a span that cannot be assembled. Fast: about a second a
test."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import semconv
from groundwire.assembly import TurnAssembler
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig

from .conftest import HasContext, Telemetry, record_turn


@pytest.fixture
def processor(telemetry: Telemetry, emitter: Emitter) -> Iterator[EvaluationSpanProcessor]:
    """A processor with a one-span queue on the test's provider (shut down afterwards)."""
    runner = BackgroundRunner(RunnerConfig([HasContext()]), emitter)
    made = EvaluationSpanProcessor(runner, emitter, max_pending_spans=1)
    telemetry.tracer_provider.add_span_processor(made)
    yield made
    made.shutdown()


class _CountsWaits(threading.Event):
    """A stop event that keeps each timeout it is waited on with."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        """Note the timeout, then wait."""
        self.timeouts.append(timeout)
        return super().wait(timeout)


def test_the_feeder_backs_off_when_idle_and_hurries_when_spans_arrive(
    processor: EvaluationSpanProcessor,
) -> None:
    """Idle, the feeder doubles its pause up to 200 ms; after a look that found spans it looks
    again after 10 ms."""
    waits = _CountsWaits()
    processor._stop = waits  # the feeder looks its stop event up on each turn
    deadline = time.monotonic() + 5
    while waits.timeouts[-2:] != [0.2, 0.2]:
        assert time.monotonic() < deadline, waits.timeouts
        time.sleep(0.01)
    idle = [t for t in waits.timeouts if t is not None]
    for before, after in itertools.pairwise(idle):
        assert after == pytest.approx(min(before * 2, 0.2)), idle
    seen = len(waits.timeouts)
    for span in _spans_of_one_turn():
        processor.on_end(span)
        while len(processor._spans):
            time.sleep(0.005)
    while len(waits.timeouts) < seen + 2:
        assert time.monotonic() < deadline, waits.timeouts
        time.sleep(0.01)
    assert 0.01 in waits.timeouts[seen:], waits.timeouts
    waits.set()


def _spans_of_one_turn() -> list[ReadableSpan]:
    """The spans of one turn, recorded on a provider of their own."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    record_turn(provider.get_tracer("app"))
    return list(exporter.get_finished_spans())


def _two_retrievals() -> tuple[ReadableSpan, ReadableSpan, ReadableSpan]:
    """(first retriever, second retriever, root) of one turn with two retrievals."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    chain = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: "Who sat on the mat?",
        semconv.OUTPUT_VALUE: 'The text says "the cat sat on the mat".',
    }
    with tracer.start_as_current_span("rag", attributes=chain):
        for i in range(2):
            retrieval = {
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
                semconv.INPUT_VALUE: "Who sat on the mat?",
                semconv.document_attribute(
                    semconv.RETRIEVAL_DOCUMENTS_PREFIX, 0, semconv.DOCUMENT_CONTENT
                ): f"Once upon a time the cat sat on the mat ({i}).",
            }
            with tracer.start_as_current_span(f"retrieve{i}", attributes=retrieval):
                pass
    first, second, root = exporter.get_finished_spans()
    return first, second, root


def test_a_damaged_trace_that_still_makes_its_turn_is_scored_not_dropped(
    processor: EvaluationSpanProcessor,
) -> None:
    """A trace that lost one retrieval to a full queue, and whose other retrieval and root then
    arrive, makes its turn: it is scored, and no turn is counted as dropped."""
    placeholder, _ = _spans_of_one_turn()
    first, second, root = _two_retrievals()
    with processor._feed_lock:
        processor.on_end(placeholder)
        processor.on_end(first)  # dropped: the trace is damaged
    for span in (second, root):
        processor.drain()
        processor.on_end(span)
    assert processor.force_flush(5_000)
    stats = processor.runner.stats()
    assert processor.dropped_spans == 1
    assert (stats.submitted, stats.scored, stats.dropped) == (1, 1, 0)


def test_a_span_that_cannot_be_assembled_is_logged_and_skipped(
    processor: EvaluationSpanProcessor, caplog: pytest.LogCaptureFixture
) -> None:
    """A span with no span context is logged as not assembled; the next turn still scores."""
    with caplog.at_level(logging.ERROR, logger="groundwire.runner"):
        processor.on_end(ReadableSpan("broken", context=None))
        processor.drain()
    assert "could not assemble turns from an ended span" in caplog.messages
    for span in _spans_of_one_turn():
        processor.drain()
        processor.on_end(span)
    assert processor.force_flush(5_000)
    assert processor.runner.stats().scored == 1


def test_a_span_without_context_dropped_by_a_full_queue_is_counted_never_raised(
    processor: EvaluationSpanProcessor,
) -> None:
    """A root with no span context that meets a full queue is counted as a dropped turn; the
    hook does not raise."""
    placeholder, _ = _spans_of_one_turn()
    with processor._feed_lock:
        processor.on_end(placeholder)
        processor.on_end(ReadableSpan("broken", context=None))
    assert processor.dropped_spans == 1
    assert processor.force_flush(5_000)
    assert processor.runner.stats().dropped == 1


def test_the_hand_off_queue_of_a_processor_built_with_defaults_holds_20_000_spans(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Built without max_pending_spans, the 20,001st waiting span is the first dropped."""
    runner = BackgroundRunner(RunnerConfig([HasContext()]), emitter)
    made = EvaluationSpanProcessor(runner, emitter)
    (child, _) = _spans_of_one_turn()
    try:
        with made._feed_lock:
            for _ in range(20_000):
                made.on_end(child)
            assert made.dropped_spans == 0
            made.on_end(child)
            assert made.dropped_spans == 1
            made._spans.clear()  # spare the assembler 20,000 copies
    finally:
        made.shutdown()


def test_a_given_assembler_is_the_one_fed(telemetry: Telemetry, emitter: Emitter) -> None:
    """The processor feeds the assembler it was given."""
    assembler = TurnAssembler()
    runner = BackgroundRunner(RunnerConfig([HasContext()]), emitter)
    made = EvaluationSpanProcessor(runner, emitter, assembler=assembler)
    try:
        child, _ = _spans_of_one_turn()
        made.on_end(child)
        made.drain()
        assert assembler.pending_spans == 1
    finally:
        made.shutdown()
