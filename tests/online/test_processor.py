"""configure() on the app's own providers: inline scores, carrier spans, hidden text, LangChain."""

from __future__ import annotations

import pytest
from opentelemetry.trace import Tracer

import groundwire
from groundwire import RagTurn, Score, semconv
from groundwire.capture import LIVE_CONTENT, LiveContent

from .conftest import AnswerLength, HasContext, Raises, Telemetry, hex_ids, record_turn

pytestmark = pytest.mark.usefixtures("online_cleanup")


def _configure(telemetry: Telemetry, **options: object) -> groundwire._configure.OnlineEvaluation:
    """configure() on the test's providers, integrations off."""
    return telemetry.configure(instrument=False, **options)


def test_inline_scores_are_on_the_root_span_when_it_is_exported(telemetry: Telemetry) -> None:
    """Inline evaluators' results are events and evaluations.{i} attributes of the turn's root."""
    online = _configure(
        telemetry,
        evaluators=[AnswerLength(), HasContext()],
        inline=["answer_length", "has_context"],
    )
    record_turn(telemetry.tracer)
    assert online.force_flush(5)
    (root,) = telemetry.finished("rag")
    attributes = dict(root.attributes or {})
    assert attributes["evaluations.0.evaluation.name"] == "answer_length"
    assert attributes["evaluations.0.evaluation.score"] == pytest.approx(0.47)
    assert attributes["evaluations.0.evaluation.label"] == "measured"
    assert attributes["evaluations.1.evaluation.name"] == "has_context"
    assert attributes["evaluations.1.evaluation.score"] == 1.0
    events = [(e.name, dict(e.attributes or {})) for e in root.events]
    assert events == [
        (
            semconv.GEN_AI_EVALUATION_RESULT_EVENT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "answer_length",
                semconv.GEN_AI_EVALUATION_SCORE_VALUE: pytest.approx(0.47),
                semconv.GEN_AI_EVALUATION_SCORE_LABEL: "measured",
            },
        ),
        (
            semconv.GEN_AI_EVALUATION_RESULT_EVENT,
            {
                semconv.GEN_AI_EVALUATION_NAME: "has_context",
                semconv.GEN_AI_EVALUATION_SCORE_VALUE: 1.0,
            },
        ),
    ]
    assert all(e.timestamp == root.end_time for e in root.events)
    assert telemetry.finished(semconv.EVALUATION_SPAN_NAME) == []
    assert online.stats().scored == 1
    assert telemetry.counts() == {("answer_length", "ok"): 1, ("has_context", "ok"): 1}


def test_background_results_ride_a_carrier_span_under_the_turn(telemetry: Telemetry) -> None:
    """Background results: one EVALUATOR span, child of the root, one link to it, one event each."""
    online = _configure(
        telemetry, evaluators=[AnswerLength(), HasContext()], inline=["answer_length"]
    )
    record_turn(telemetry.tracer)
    assert online.force_flush(5)
    (root,) = telemetry.finished("rag")
    (carrier,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    trace_id, span_id = hex_ids(root)
    assert hex_ids(carrier)[0] == trace_id
    assert carrier.parent is not None and format(carrier.parent.span_id, "016x") == span_id
    assert [hex_ids_of(link.context) for link in carrier.links] == [(trace_id, span_id)]
    assert carrier.attributes is not None
    assert carrier.attributes[semconv.OPENINFERENCE_SPAN_KIND] == semconv.SPAN_KIND_EVALUATOR
    assert carrier.attributes["evaluations.0.evaluation.name"] == "has_context"
    assert [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in carrier.events] == ["has_context"]
    assert [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in root.events] == ["answer_length"]
    assert carrier.instrumentation_scope is not None
    assert carrier.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE


def hex_ids_of(context: object) -> tuple[str, str]:
    """(trace_id, span_id) of a SpanContext as hex."""
    return format(context.trace_id, "032x"), format(context.span_id, "016x")  # type: ignore[attr-defined]


def test_carrier_spans_are_never_taken_for_turns(telemetry: Telemetry) -> None:
    """groundwire's own spans do not feed the assembler: three turns, three submissions."""
    online = _configure(telemetry, evaluators=[HasContext()])
    for _ in range(3):
        record_turn(telemetry.tracer)
    assert online.force_flush(5)
    stats = online.stats()
    assert (stats.submitted, stats.scored) == (3, 3)
    assert len(telemetry.finished(semconv.EVALUATION_SPAN_NAME)) == 3


class SeenAnswer:
    """Scores 1 when it saw the full (hidden) answer text."""

    name = "seen_answer"

    def __init__(self) -> None:
        self.answers: list[str] = []

    def evaluate(self, turn: RagTurn) -> Score:
        """Remember the answer; 1 when it holds the hidden word."""
        self.answers.append(turn.answer)
        return Score(name=self.name, value=1.0 if "secret" in turn.answer else 0.0)


def test_evaluation_sees_text_the_spans_hide(telemetry: Telemetry) -> None:
    """With output hidden on the span, evaluators get the live text from LIVE_CONTENT."""
    seen = SeenAnswer()
    online = _configure(telemetry, evaluators=[seen], inline=["seen_answer"])
    assert LIVE_CONTENT.enabled
    tracer: Tracer = telemetry.tracer
    with tracer.start_as_current_span(
        "rag",
        attributes={
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
            semconv.INPUT_VALUE: "q?",
        },
    ) as root:
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
                "retrieval.documents.0.document.content": "a document",
            },
        ):
            pass
        context = root.get_span_context()
        LIVE_CONTENT.put(
            (context.trace_id, context.span_id),
            LiveContent(input="q?", output="the secret answer"),
        )
    assert online.force_flush(5)
    assert seen.answers == ["the secret answer"]
    (span,) = telemetry.finished("rag")
    assert span.attributes is not None and semconv.OUTPUT_VALUE not in span.attributes
    assert span.attributes["evaluations.0.evaluation.score"] == 1.0
    groundwire.shutdown(5)
    assert not LIVE_CONTENT.enabled


def test_failing_inline_evaluator_never_reaches_the_app(telemetry: Telemetry) -> None:
    """A raising inline evaluator leaves an error event; the app's span still ends and exports."""
    online = _configure(telemetry, evaluators=[Raises(), HasContext()], inline=["raises"])
    record_turn(telemetry.tracer)
    assert online.force_flush(5)
    (root,) = telemetry.finished("rag")
    (event,) = root.events
    assert event.attributes is not None
    assert event.attributes[semconv.ERROR_TYPE] == "RuntimeError"
    assert root.attributes is not None
    assert root.attributes["evaluations.0.evaluation.label"] == "error"
    stats = online.stats()
    assert (stats.errored, stats.scored) == (1, 0)
    assert telemetry.counts() == {("raises", "error"): 1, ("has_context", "ok"): 1}


def test_sampled_out_trace_gets_no_inline_scores(telemetry: Telemetry) -> None:
    """At sample rate 0 nothing runs inline or in the background; each turn counts sampled out."""
    online = _configure(
        telemetry,
        evaluators=[AnswerLength(), HasContext()],
        inline=["answer_length"],
        sample_rate=0.0,
    )
    record_turn(telemetry.tracer)
    record_turn(telemetry.tracer)
    assert online.force_flush(5)
    assert all(not s.events for s in telemetry.finished("rag"))
    assert online.stats().sampled_out == 2
    assert telemetry.counts() == {
        ("answer_length", "sampled_out"): 2,
        ("has_context", "sampled_out"): 2,
    }


def test_configure_twice_is_refused_until_shutdown(telemetry: Telemetry) -> None:
    """A second configure() fails clearly; after shutdown() configuring again works."""
    _configure(telemetry, evaluators=[HasContext()])
    with pytest.raises(RuntimeError, match="already configured"):
        _configure(telemetry, evaluators=[HasContext()])
    assert groundwire.shutdown(5) is True
    assert groundwire.shutdown(5) is True  # nothing configured: a no-op
    _configure(telemetry, evaluators=[HasContext()])


def test_registered_evaluator_names_resolve(telemetry: Telemetry) -> None:
    """Evaluators may be given by registered name; unknown names fail at configure time."""
    with pytest.raises(groundwire.UnknownEvaluatorError, match="no_such_evaluator"):
        _configure(telemetry, evaluators=["no_such_evaluator"])
    online = _configure(telemetry, evaluators=["quoted_spans"], inline=["quoted_spans"])
    record_turn(telemetry.tracer)
    assert online.force_flush(5)
    (root,) = telemetry.finished("rag")
    assert root.attributes is not None
    assert root.attributes["evaluations.0.evaluation.name"] == "quoted_spans"
    assert root.attributes["evaluations.0.evaluation.score"] == 1.0


def test_full_span_hand_off_drops_and_still_accounts_for_every_turn(
    telemetry: Telemetry,
) -> None:
    """With a one-span hand-off queue, spans are dropped, never blocking; every turn is counted."""
    from groundwire.emit import Emitter
    from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig

    emitter = Emitter(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    runner = BackgroundRunner(RunnerConfig([HasContext()]), emitter)
    processor = EvaluationSpanProcessor(runner, emitter, max_pending_spans=1)
    telemetry.tracer_provider.add_span_processor(processor)
    for _ in range(200):
        record_turn(telemetry.tracer)
    assert processor.force_flush(10_000)
    stats = runner.stats()
    assert processor.dropped_spans > 0
    assert stats.submitted == 200
    assert stats.dropped > 0
    assert stats.adds_up() and stats.in_flight == 0
    processor.shutdown()


def test_filtered_turns_count_every_evaluator_inline_or_not(telemetry: Telemetry) -> None:
    """A turn the filter rejects counts sampled_out for inline and background evaluators alike."""
    online = _configure(
        telemetry,
        evaluators=[AnswerLength(), HasContext()],
        inline=["answer_length"],
        turn_filter=lambda turn: "mat" not in turn.query,
    )
    record_turn(telemetry.tracer)  # "Who sat on the mat?": rejected
    record_turn(telemetry.tracer, query="Who sat down?")
    assert online.force_flush(5)
    stats = online.stats()
    assert (stats.sampled_out, stats.scored) == (1, 1)
    assert telemetry.counts() == {
        ("answer_length", "sampled_out"): 1,
        ("answer_length", "ok"): 1,
        ("has_context", "sampled_out"): 1,
        ("has_context", "ok"): 1,
    }
    rejected, kept = telemetry.finished("rag")
    assert not rejected.events and len(kept.events) == 1


def test_openinference_llamaindex_turn_is_scored_inline_once(telemetry: Telemetry) -> None:
    """With OpenInference's LlamaIndex spans, only the outer `query` span gets inline scores
    (its inner `_query` span, which ends first, must not look like a turn root)."""
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    from tests.test_assembly_llamaindex import QUESTION, build_index, engine

    index = build_index()
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        online = _configure(telemetry, evaluators=[HasContext()], inline=["has_context"])
        engine(index).query(QUESTION)
        assert online.force_flush(5)
    finally:
        instrumentor.uninstrument()
    scored = [
        span.name
        for span in telemetry.finished()
        if "evaluations.0.evaluation.name" in (span.attributes or {})
    ]
    assert len(scored) == 1
    (root,) = [span for span in telemetry.finished() if span.parent is None]
    assert scored == [root.name]
