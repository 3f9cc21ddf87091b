"""`EvaluationSpanProcessor` (`runner._processor`) on a real tracer provider and runner, without
`configure()`: the hand-off queue and its feeder thread, what a full queue drops and counts,
groundwire's own spans, inline evaluation's rules, and the lifecycle calls. A test that needs
the queue to stay full holds the feeder off with the processor's feed lock. Fast: well under a
second a test."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags

from groundwire import RagTurn, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig

from .conftest import AnswerLength, Gate, HasContext, Telemetry, record_turn


@dataclass
class _Setup:
    """A processor on the test's provider, its runner, and the provider's exported spans."""

    processor: EvaluationSpanProcessor
    runner: BackgroundRunner
    telemetry: Telemetry

    def wait(self, condition: Callable[[], bool], limit_s: float = 5.0) -> None:
        """Poll until `condition()` (the feeder thread works on its own), or fail."""
        deadline = time.monotonic() + limit_s
        while not condition():
            assert time.monotonic() < deadline, "timed out waiting"
            time.sleep(0.005)


@pytest.fixture
def make(telemetry: Telemetry, emitter: Emitter) -> Iterator[Callable[..., _Setup]]:
    """Build a processor on the test's tracer provider (shut down afterwards)."""
    built: list[_Setup] = []

    def build(*, max_pending_spans: int = 20_000, **options: Any) -> _Setup:
        options.setdefault("evaluators", [HasContext(), AnswerLength()])
        runner = BackgroundRunner(RunnerConfig(**options), emitter)
        processor = EvaluationSpanProcessor(runner, emitter, max_pending_spans=max_pending_spans)
        telemetry.tracer_provider.add_span_processor(processor)
        built.append(_Setup(processor, runner, telemetry))
        return built[-1]

    yield build
    for setup in built:
        setup.processor.shutdown()


def _spans_of_one_turn() -> tuple[ReadableSpan, ReadableSpan]:
    """(retriever child, root) of one turn, recorded on a provider of their own."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    record_turn(provider.get_tracer("app"))
    child, root = exporter.get_finished_spans()
    assert root.parent is None and child.parent is not None
    return child, root


@pytest.mark.parametrize("bad", [0, -1, True])
def test_the_hand_off_queue_holds_at_least_one_span(emitter: Emitter, bad: int) -> None:
    """max_pending_spans below 1 (or a bool) is refused, naming the option and the value."""
    runner = BackgroundRunner(RunnerConfig([HasContext()]), emitter)
    try:
        with pytest.raises(
            ValueError, match=f"^max_pending_spans must be at least 1, got {bad!r}$"
        ):
            EvaluationSpanProcessor(runner, emitter, max_pending_spans=bad)
    finally:
        runner.shutdown(1)


def test_the_feeder_thread_assembles_turns_on_its_own(make: Callable[..., _Setup]) -> None:
    """Without any flush, the `groundwire-feeder` daemon thread assembles ended spans into
    turns and submits them; close() stops it."""
    before = {t for t in threading.enumerate() if t.name == "groundwire-feeder"}
    setup = make()
    (feeder,) = {t for t in threading.enumerate() if t.name == "groundwire-feeder"} - before
    assert feeder.daemon
    for _ in range(2):
        record_turn(setup.telemetry.tracer)
    setup.wait(lambda: setup.runner.stats().submitted == 2)
    time.sleep(0.5)  # idle: the feeder backs off, and still takes the next turn promptly
    record_turn(setup.telemetry.tracer)
    setup.wait(lambda: setup.runner.stats().submitted == 3, limit_s=1.0)
    setup.processor.close()
    feeder.join(2)
    assert not feeder.is_alive()


def test_groundwires_own_spans_are_never_assembled(make: Callable[..., _Setup]) -> None:
    """Spans of groundwire's instrumentation scope are skipped, even when they look like a turn."""
    setup = make()
    record_turn(setup.telemetry.tracer_provider.get_tracer(semconv.INSTRUMENTATION_SCOPE))
    assert setup.processor.force_flush(5_000)
    assert setup.runner.stats().submitted == 0


def test_a_root_dropped_by_a_full_queue_counts_its_turn_as_dropped(
    make: Callable[..., _Setup],
) -> None:
    """With a one-span queue held full, the turn's root is dropped and counted (no turn is lost
    silently); groundwire's own spans are dropped without counting."""
    setup = make(max_pending_spans=1)
    child, root = _spans_of_one_turn()
    ours = next(
        s
        for s in _own_spans(setup)
        if s.instrumentation_scope and s.instrumentation_scope.name == "groundwire"
    )
    with setup.processor._feed_lock:
        setup.processor.on_end(child)
        setup.processor.on_end(root)
        setup.processor.on_end(ours)
    assert setup.processor.dropped_spans == 1
    assert setup.processor.force_flush(5_000)
    stats = setup.runner.stats()
    assert (stats.submitted, stats.dropped, stats.scored) == (1, 1, 0)


def _own_spans(setup: _Setup) -> list[ReadableSpan]:
    """A span of groundwire's own scope, recorded on a provider not watched by the processor."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer(semconv.INSTRUMENTATION_SCOPE).start_as_current_span("carrier"):
        pass
    return list(exporter.get_finished_spans())


def test_a_trace_that_lost_a_child_and_gave_no_turn_is_counted_dropped(
    make: Callable[..., _Setup],
) -> None:
    """A child dropped by a full queue marks its trace damaged: when the root then arrives and
    no turn can be assembled, the turn it probably was is counted as dropped, once."""
    setup = make(max_pending_spans=1)
    first_child, first_root = _spans_of_one_turn()
    child, root = _spans_of_one_turn()
    with setup.processor._feed_lock:
        setup.processor.on_end(first_child)  # fills the queue
        setup.processor.on_end(child)  # dropped: its trace is damaged
    setup.processor.drain()
    setup.processor.on_end(root)  # a root alone: no turn
    setup.processor.drain()
    setup.processor.on_end(root)  # the same root again: no longer damaged, not counted
    setup.processor.drain()
    setup.processor.on_end(first_root)
    assert setup.processor.force_flush(5_000)
    stats = setup.runner.stats()
    assert setup.processor.dropped_spans == 1
    assert (stats.submitted, stats.dropped, stats.scored) == (2, 1, 1)


def test_a_damaged_trace_whose_turn_still_assembles_is_not_counted(
    make: Callable[..., _Setup],
) -> None:
    """A damaged trace whose root still completes a turn is scored, not counted as dropped."""
    setup = make(max_pending_spans=1)
    other_child, _ = _spans_of_one_turn()
    child, root = _spans_of_one_turn()
    with setup.processor._feed_lock:
        setup.processor.on_end(child)
        setup.processor.on_end(other_child)  # dropped: that trace is damaged
    setup.processor.drain()
    setup.processor.on_end(root)
    assert setup.processor.force_flush(5_000)
    stats = setup.runner.stats()
    assert (stats.submitted, stats.dropped, stats.scored) == (1, 0, 1)


def test_after_close_ended_spans_are_ignored(make: Callable[..., _Setup]) -> None:
    """close() assembles what is pending, then the processor takes no more spans, and a
    full queue after close counts nothing."""
    setup = make(max_pending_spans=2)
    child, root = _spans_of_one_turn()
    with setup.processor._feed_lock:
        setup.processor.on_end(child)
        setup.processor.on_end(root)
    setup.processor.close()
    assert setup.runner.stats().submitted == 1
    for span in [*_spans_of_one_turn(), *_spans_of_one_turn()]:
        setup.processor.on_end(span)
    assert setup.processor.force_flush(5_000)
    assert setup.runner.stats().submitted == 1 and setup.processor.dropped_spans == 0


def test_shutdown_assembles_pending_spans_and_drains_the_runner(
    make: Callable[..., _Setup],
) -> None:
    """shutdown() assembles what the queue holds and scores it before returning."""
    setup = make()
    child, root = _spans_of_one_turn()
    with setup.processor._feed_lock:
        setup.processor.on_end(child)
        setup.processor.on_end(root)
    setup.processor.shutdown()
    stats = setup.runner.stats()
    assert (stats.submitted, stats.scored, stats.in_flight) == (1, 1, 0)
    assert setup.processor.shutdown_timeout_s == 5.0


def test_inline_scores_are_written_onto_the_root_as_it_ends(make: Callable[..., _Setup]) -> None:
    """An inline evaluator scores the turn on the app's thread: its score is on the exported
    root, the background one rides a carrier span."""
    setup = make(inline={"answer_length"})
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    attributes = dict(root.attributes or {})
    assert attributes["evaluations.0.evaluation.name"] == "answer_length"
    assert "evaluations.1.evaluation.name" not in attributes
    assert setup.telemetry.counts() == {("answer_length", "ok"): 1, ("has_context", "ok"): 1}


def test_a_span_ending_inside_an_open_span_is_not_taken_for_a_root(
    make: Callable[..., _Setup],
) -> None:
    """With inline evaluators, starts are queued too: a chain span ending inside an open chain
    span is not scored inline; the outer one, the turn's root, is."""
    setup = make(inline={"answer_length"})
    tracer = setup.telemetry.tracer
    chain = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: "Who sat on the mat?",
        semconv.OUTPUT_VALUE: "The cat.",
    }
    with tracer.start_as_current_span("outer", attributes=chain):
        record_turn(tracer)
    assert setup.processor.force_flush(5_000)
    (inner,) = setup.telemetry.finished("rag")
    (outer,) = setup.telemetry.finished("outer")
    assert not any(k.startswith("evaluations.") for k in inner.attributes or {})
    assert (outer.attributes or {})["evaluations.0.evaluation.name"] == "answer_length"


def test_without_inline_evaluators_starts_are_not_queued(make: Callable[..., _Setup]) -> None:
    """Without inline evaluators a start takes no room in the queue."""
    setup = make(max_pending_spans=1)
    with setup.processor._feed_lock:
        span = setup.telemetry.tracer.start_span("work")
        span.end()
    assert setup.processor.dropped_spans == 0


def test_leaf_spans_are_never_evaluated_inline(make: Callable[..., _Setup]) -> None:
    """A retriever span that is the root of its trace gets no inline scores."""
    setup = make(inline={"answer_length", "has_context"})
    attributes = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER}
    with setup.telemetry.tracer.start_as_current_span("retrieve", attributes=attributes):
        pass
    assert setup.processor.force_flush(5_000)
    (span,) = setup.telemetry.finished("retrieve")
    assert not any(k.startswith("evaluations.") for k in span.attributes or {})


def _rejects(turn: RagTurn) -> bool:
    """A turn filter that rejects every turn."""
    return False


def _raises(turn: RagTurn) -> bool:
    """A turn filter with a bug."""
    raise ValueError("filter bug")


def test_a_turn_the_filter_rejects_is_sampled_out_inline(make: Callable[..., _Setup]) -> None:
    """The filter's False counts each inline evaluator as sampled out, none runs."""
    setup = make(inline={"answer_length"}, turn_filter=_rejects)
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    assert not any(k.startswith("evaluations.") for k in root.attributes or {})
    assert setup.telemetry.counts()[("answer_length", semconv.OUTCOME_SAMPLED_OUT)] == 1


def test_a_raising_filter_fails_the_inline_evaluations_and_says_so(
    make: Callable[..., _Setup], caplog: pytest.LogCaptureFixture
) -> None:
    """A filter that raises is logged with its error; each inline evaluator is an error score
    naming it, and the app's span still ends."""
    setup = make(inline={"answer_length"}, turn_filter=_raises)
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        record_turn(setup.telemetry.tracer)
    assert "turn_filter raised ValueError: filter bug" in caplog.messages
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    attributes = dict(root.attributes or {})
    assert attributes["evaluations.0.evaluation.name"] == "answer_length"
    assert attributes["evaluations.0.evaluation.explanation"] == "ValueError: filter bug"
    assert setup.telemetry.counts()[("answer_length", "error")] == 1


def test_an_inline_evaluator_at_rate_zero_is_sampled_out(make: Callable[..., _Setup]) -> None:
    """An inline evaluator's own rate applies: at 0 it does not run and counts sampled out,
    while the other inline evaluator scores."""
    setup = make(
        inline={"answer_length", "has_context"}, evaluator_sample_rates={"answer_length": 0.0}
    )
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    attributes = dict(root.attributes or {})
    assert attributes["evaluations.0.evaluation.name"] == "has_context"
    assert "evaluations.1.evaluation.name" not in attributes
    assert setup.telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_SAMPLED_OUT): 1,
        ("has_context", "ok"): 1,
    }


_RESOURCE = Resource.create({})


def _children_of_traces(count: int) -> list[ReadableSpan]:
    """A retriever child span in each of `count` traces (ids 1 to count)."""
    return [
        ReadableSpan(
            "retrieve",
            context=SpanContext(trace, 2, False, TraceFlags(1)),
            parent=SpanContext(trace, 1, False, TraceFlags(1)),
            resource=_RESOURCE,
        )
        for trace in range(1, count + 1)
    ]


def _root_of_trace(trace: int) -> ReadableSpan:
    """A chain root span of the trace (alone it makes no turn)."""
    return ReadableSpan(
        "rag",
        context=SpanContext(trace, 1, False, TraceFlags(1)),
        attributes={semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN},
        resource=_RESOURCE,
    )


def test_the_hand_off_queue_holds_twenty_thousand_spans_by_default(
    make: Callable[..., _Setup],
) -> None:
    """By default the 20,001st span waiting in the queue is the first dropped."""
    setup = make()
    (child,) = _children_of_traces(1)
    with setup.processor._feed_lock:
        for _ in range(20_000):
            setup.processor.on_end(child)
        assert setup.processor.dropped_spans == 0
        setup.processor.on_end(child)
        assert setup.processor.dropped_spans == 1
        setup.processor._spans.clear()  # spare the assembler 20,000 copies


def test_ten_thousand_damaged_traces_are_remembered_and_no_more(
    make: Callable[..., _Setup],
) -> None:
    """The damaged traces are a bounded memory of the newest 10,000: the root of the oldest of
    10,000 is still counted as a dropped turn; of 10,001, it is forgotten."""
    for count, dropped in ((10_000, 1), (10_001, 0)):
        setup = make(max_pending_spans=1)
        placeholder, *children = _children_of_traces(count + 1)
        with setup.processor._feed_lock:
            setup.processor.on_end(placeholder)  # fills the queue
            for child in children:
                setup.processor.on_end(child)
        setup.processor.drain()
        setup.processor.on_end(_root_of_trace(2))  # the oldest damaged trace
        assert setup.processor.force_flush(5_000)
        assert setup.runner.stats().dropped == dropped, count


def test_force_flush_waits_at_most_its_milliseconds(make: Callable[..., _Setup]) -> None:
    """force_flush(timeout_millis) gives up after that many milliseconds (False) while a turn
    is still being scored."""
    gate = Gate()
    setup = make(evaluators=[gate])
    threading.Timer(3.0, gate.open.set).start()
    record_turn(setup.telemetry.tracer)
    started = time.monotonic()
    assert setup.processor.force_flush(100) is False
    assert time.monotonic() - started < 2.5
    gate.open.set()
