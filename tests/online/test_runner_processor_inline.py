"""`EvaluationSpanProcessor` (`runner._processor`): the rules a first mutation run showed were
not pinned. Counting drops and damaged traces exactly, a dropped root keeping its inline scores,
inline evaluation's guards (closed, groundwire's own spans, spans that are no turn, the sample
rate, a fractional per-evaluator rate by trace id) and where inline results go (span events or
log records, as the emitter says). Fast: well under a second a test."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig, trace_sampled

from .conftest import AnswerLength, HasContext, Telemetry, record_turn

_CHAIN = {
    semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
    semconv.INPUT_VALUE: "Who sat on the mat?",
    semconv.OUTPUT_VALUE: "The cat.",
}


@dataclass
class _Setup:
    """A processor on the test's provider and its runner."""

    processor: EvaluationSpanProcessor
    runner: BackgroundRunner
    telemetry: Telemetry


@pytest.fixture
def make(telemetry: Telemetry) -> Iterator[Callable[..., _Setup]]:
    """Build a processor on the test's tracer provider (shut down afterwards); `emitter`
    options go to its Emitter."""
    built: list[_Setup] = []

    def build(
        *, max_pending_spans: int = 20_000, emitter: dict[str, Any] | None = None, **options: Any
    ) -> _Setup:
        out = Emitter(
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            **(emitter or {}),
        )
        options.setdefault("evaluators", [HasContext(), AnswerLength()])
        runner = BackgroundRunner(RunnerConfig(**options), out)
        processor = EvaluationSpanProcessor(runner, out, max_pending_spans=max_pending_spans)
        telemetry.tracer_provider.add_span_processor(processor)
        built.append(_Setup(processor, runner, telemetry))
        return built[-1]

    yield build
    for setup in built:
        setup.processor.shutdown()


def _recorder() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider of its own (not watched by the processor) and its spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _turn_spans() -> tuple[ReadableSpan, ReadableSpan]:
    """(retriever child, root) of one turn, recorded on a provider of their own."""
    provider, exporter = _recorder()
    record_turn(provider.get_tracer("app"))
    child, root = exporter.get_finished_spans()
    return child, root


def _lone_root() -> ReadableSpan:
    """A chain root span with no child (it makes no turn)."""
    provider, exporter = _recorder()
    with provider.get_tracer("app").start_as_current_span("rag", attributes=_CHAIN):
        pass
    (root,) = exporter.get_finished_spans()
    return root


def _evaluations(span: ReadableSpan) -> list[str]:
    """The `evaluations.*` attribute keys of a span."""
    return [k for k in span.attributes or {} if k.startswith("evaluations.")]


def test_each_dropped_span_is_counted(make: Callable[..., _Setup]) -> None:
    """Two spans dropped by a full queue count two."""
    setup = make(max_pending_spans=1)
    placeholder, _ = _turn_spans()
    first, _ = _turn_spans()
    second, _ = _turn_spans()
    with setup.processor._feed_lock:
        for span in (placeholder, first, second):
            setup.processor.on_end(span)
    assert setup.processor.dropped_spans == 2


def test_a_dropped_roots_trace_is_not_left_damaged(make: Callable[..., _Setup]) -> None:
    """A root dropped by a full queue is counted once: its trace is not left marked damaged,
    so the same root seen again later (with no turn) is not counted a second time."""
    setup = make(max_pending_spans=1)
    placeholder, _ = _turn_spans()
    root = _lone_root()
    with setup.processor._feed_lock:
        setup.processor.on_end(placeholder)
        setup.processor.on_end(root)  # dropped: its turn is counted as dropped
    setup.processor.drain()
    setup.processor.on_end(root)
    assert setup.processor.force_flush(5_000)
    assert setup.runner.stats().dropped == 1


def test_a_root_without_a_turn_in_an_undamaged_trace_is_not_counted(
    make: Callable[..., _Setup],
) -> None:
    """While another trace is damaged, a root of an undamaged trace that makes no turn is not
    counted as a dropped turn."""
    setup = make(max_pending_spans=1)
    placeholder, _ = _turn_spans()
    damaged, _ = _turn_spans()
    with setup.processor._feed_lock:
        setup.processor.on_end(placeholder)
        setup.processor.on_end(damaged)
    setup.processor.drain()
    setup.processor.on_end(_lone_root())
    assert setup.processor.force_flush(5_000)
    assert setup.runner.stats().dropped == 0


def test_a_dropped_root_keeps_its_inline_scores_counted(make: Callable[..., _Setup]) -> None:
    """A root scored inline and then dropped by a full queue: the turn counts as dropped, and
    its inline evaluation still counts as run (its scores are not lost)."""
    setup = make(max_pending_spans=1, inline={"answer_length"})
    provider, exporter = _recorder()
    tracer = provider.get_tracer("app")
    with tracer.start_as_current_span("rag", attributes=_CHAIN) as root:
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
                semconv.document_attribute(
                    semconv.RETRIEVAL_DOCUMENTS_PREFIX, 0, semconv.DOCUMENT_CONTENT
                ): "The cat sat on the mat.",
            },
        ):
            pass
        (child,) = exporter.get_finished_spans()
        setup.processor.on_end(child)
        assert isinstance(root, Span)
        setup.processor._on_ending(root)  # as the SDK does: scores it inline
    placeholder, _ = _turn_spans()
    with setup.processor._feed_lock:
        setup.processor.on_end(placeholder)
        setup.processor.on_end(root)  # dropped
    assert setup.processor.force_flush(5_000)
    assert setup.runner.stats().dropped == 1
    counts = setup.telemetry.counts()
    assert counts[("answer_length", "ok")] == 1
    assert counts[("has_context", semconv.OUTCOME_DROPPED)] == 1


def test_after_close_nothing_is_evaluated_inline(make: Callable[..., _Setup]) -> None:
    """Once closed, a turn's root ends without inline scores."""
    setup = make(inline={"answer_length"})
    setup.processor.close()
    record_turn(setup.telemetry.tracer)
    (root,) = setup.telemetry.finished("rag")
    assert _evaluations(root) == []


def test_a_turn_ending_across_close_is_not_evaluated_inline(make: Callable[..., _Setup]) -> None:
    """A turn whose retrieval ended before close() and whose root ends after it gets no inline
    scores."""
    setup = make(inline={"answer_length"})
    tracer = setup.telemetry.tracer
    with tracer.start_as_current_span("outer", attributes=_CHAIN):
        record_turn(tracer)
        setup.processor.close()
    (outer,) = setup.telemetry.finished("outer")
    assert _evaluations(outer) == []


def test_a_groundwire_root_over_an_app_span_is_not_evaluated_inline(
    make: Callable[..., _Setup],
) -> None:
    """A span of groundwire's own scope is never scored inline, even over an app's retrieval."""
    setup = make(inline={"answer_length"})
    ours = setup.telemetry.tracer_provider.get_tracer(semconv.INSTRUMENTATION_SCOPE)
    with ours.start_as_current_span("rag", attributes=_CHAIN):
        record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (outer,) = [s for s in setup.telemetry.finished("rag") if s.parent is None]
    assert _evaluations(outer) == []


def test_a_span_that_is_no_turn_ends_quietly(
    make: Callable[..., _Setup], caplog: pytest.LogCaptureFixture
) -> None:
    """With inline evaluators, a chain span that makes no turn ends without scores or errors."""
    setup = make(inline={"answer_length"})
    tracer = setup.telemetry.tracer
    with (
        caplog.at_level(logging.WARNING, logger="groundwire.runner"),
        tracer.start_as_current_span("rag", attributes=_CHAIN),
    ):
        pass
    assert [r for r in caplog.records if r.name == "groundwire.runner"] == []
    (root,) = setup.telemetry.finished("rag")
    assert _evaluations(root) == []


def test_a_trace_outside_the_sample_rate_is_not_scored_inline(
    make: Callable[..., _Setup],
) -> None:
    """At sample rate 0 no inline evaluator runs."""
    setup = make(inline={"answer_length"}, sample_rate=0.0)
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    assert _evaluations(root) == []


def test_an_inline_rate_between_zero_and_one_keeps_the_traces_it_selects(
    make: Callable[..., _Setup],
) -> None:
    """At rate 0.5 an inline evaluator scores exactly the traces the trace-id rule selects."""
    setup = make(inline={"answer_length"}, evaluator_sample_rates={"answer_length": 0.5})
    for _ in range(12):
        record_turn(setup.telemetry.tracer)
    for root in setup.telemetry.finished("rag"):
        assert root.context is not None
        selected = trace_sampled(format(root.context.trace_id, "032x"), 0.5)
        assert bool(_evaluations(root)) is selected


def test_inline_results_are_span_events_by_default(make: Callable[..., _Setup]) -> None:
    """With the default emitter the root carries a result event per inline score."""
    setup = make(inline={"answer_length"})
    record_turn(setup.telemetry.tracer)
    (root,) = setup.telemetry.finished("rag")
    assert [e.name for e in root.events] == [semconv.GEN_AI_EVALUATION_RESULT_EVENT]


def test_inline_results_are_log_records_when_the_emitter_says_logs(
    make: Callable[..., _Setup],
) -> None:
    """With `events="logs"` the root gets the attributes but no event, and each inline score is
    a log record on the root marked as inline."""
    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    setup = make(inline={"answer_length"}, emitter={"logger_provider": logs, "events": "logs"})
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    (root,) = setup.telemetry.finished("rag")
    assert _evaluations(root) and not root.events
    inline = [
        r.log_record
        for r in exporter.get_finished_logs()
        if (r.log_record.attributes or {}).get(semconv.GROUNDWIRE_EVALUATION_MODE)
        == semconv.EVALUATION_MODE_INLINE
    ]
    assert [(r.attributes or {})[semconv.GEN_AI_EVALUATION_NAME] for r in inline] == [
        "answer_length"
    ]
    assert root.context is not None and inline[0].span_id == root.context.span_id
    logs.shutdown()


def _asks_about_the_query(turn: RagTurn) -> bool:
    """A turn filter that reads the turn: only questions about dogs are scored."""
    return "dog" in turn.query


def test_the_turn_filter_is_given_the_turn(make: Callable[..., _Setup]) -> None:
    """The filter sees the turn (and rejects this one): inline evaluators are sampled out."""
    setup = make(inline={"answer_length"}, turn_filter=_asks_about_the_query)
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    assert setup.telemetry.counts()[("answer_length", semconv.OUTCOME_SAMPLED_OUT)] == 1


def _raises(turn: RagTurn) -> bool:
    """A turn filter with a bug."""
    raise ValueError("filter bug")


def test_a_raising_filter_fails_inline_evaluations_in_no_time(
    make: Callable[..., _Setup],
) -> None:
    """An inline evaluation failed by the filter records a duration of zero."""
    setup = make(inline={"answer_length"}, turn_filter=_raises)
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    durations = [
        p
        for p in setup.telemetry.points(semconv.METRIC_EVALUATION_DURATION)
        if p.attributes[semconv.GEN_AI_EVALUATION_NAME] == "answer_length"
    ]
    assert [(p.count, p.sum) for p in durations] == [(1, 0.0)]


def test_after_shutdown_ended_spans_are_ignored(make: Callable[..., _Setup]) -> None:
    """After shutdown() the processor takes no spans: nothing is submitted or counted."""
    setup = make()
    setup.processor.shutdown()
    for span in _turn_spans():
        setup.processor.on_end(span)
    setup.processor.drain()
    stats = setup.runner.stats()
    assert (stats.submitted, stats.dropped) == (0, 0)


def test_starts_never_overfill_the_queue(make: Callable[..., _Setup]) -> None:
    """With inline evaluators a start takes a place in the queue, never past its bound."""
    setup = make(max_pending_spans=1, inline={"answer_length"})
    retriever = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER}
    with setup.processor._feed_lock:
        spans = [setup.telemetry.tracer.start_span("r", attributes=retriever) for _ in range(3)]
        assert len(setup.processor._spans) == 1
    for span in spans:
        span.end()


def test_inline_results_written_onto_the_root_get_no_carrier_span(
    make: Callable[..., _Setup],
) -> None:
    """Inline scores written onto the root go out as log records only: no inline carrier span."""
    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider()
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    setup = make(inline={"answer_length"}, emitter={"logger_provider": logs, "events": "logs"})
    record_turn(setup.telemetry.tracer)
    assert setup.processor.force_flush(5_000)
    modes = [
        (s.attributes or {}).get(semconv.GROUNDWIRE_EVALUATION_MODE)
        for s in setup.telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    ]
    assert semconv.EVALUATION_MODE_INLINE not in modes
    logs.shutdown()
