"""The runner's records (`runner._jobs`) and its way out (`runner._emission`) on their own:
turn outcomes, the app a turn belongs to, and which metric points and spans each result makes."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn, Score, semconv
from groundwire._evaluator import EvaluationOutcome
from groundwire.emit import Emitter
from groundwire.runner._emission import Emission
from groundwire.runner._jobs import NO_INLINE, InlineResult, Lost, service_of, turn_outcome

from .conftest import Telemetry, make_turn

_OK = EvaluationOutcome(Score(name="length", value=0.5, label="half"), 0.25, False)
_FAILED = EvaluationOutcome(Score.failed("length", RuntimeError("boom")), 0.5, True)


def _of(service: object) -> RagTurn:
    """A turn whose `service.name` attribute is `service`."""
    return make_turn(1).model_copy(update={"attributes": {semconv.SERVICE_NAME: service}})


class Routed(Emitter):
    """An Emitter that routes one app's results to a second set of providers."""

    def __init__(self, own: Telemetry, app: Telemetry) -> None:
        super().__init__(tracer_provider=own.tracer_provider, meter_provider=own.meter_provider)
        self.app = Emitter(tracer_provider=app.tracer_provider, meter_provider=app.meter_provider)
        self.asked: list[str | None] = []

    def for_service(self, service: str | None) -> Emitter:
        """The app's emitter for turns of `shop`, this one otherwise."""
        self.asked.append(service)
        return self.app if service == "shop" else self


def in_memory() -> Telemetry:
    """Providers with in-memory span and metric readers (shut down by the caller)."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Telemetry(tracer_provider, MeterProvider(metric_readers=[reader]), spans, reader)


@pytest.fixture
def app_telemetry() -> Iterator[Telemetry]:
    """A second set of providers with in-memory readers: the app's own."""
    telemetry = in_memory()
    yield telemetry
    telemetry.meter_provider.shutdown()
    telemetry.tracer_provider.shutdown()


def test_service_of_reads_only_a_string_service_name() -> None:
    """A turn's app is its `service.name` when that is a string; otherwise unknown."""
    assert service_of(_of("shop")) == "shop"
    assert service_of(_of(7)) is None
    assert service_of(make_turn(1)) is None
    assert service_of(None) is None


def test_turn_outcome_is_errored_scored_or_sampled_out() -> None:
    """A failure anywhere errors the turn; any result scores it; none samples it out."""
    assert turn_outcome(NO_INLINE, 0, False) == "sampled_out"
    assert turn_outcome(NO_INLINE, 1, False) == "scored"
    assert turn_outcome(InlineResult(outcomes=(_OK,)), 0, False) == "scored"
    assert turn_outcome(InlineResult(outcomes=(_FAILED,)), 1, False) == "errored"
    assert turn_outcome(NO_INLINE, 1, True) == "errored"
    assert turn_outcome(InlineResult(outcomes=(_OK, _FAILED)), 0, False) == "errored"


def test_inline_result_scores_and_lost_defaults() -> None:
    """InlineResult.scores lists the inline scores in order; a Lost turn counts evaluations
    unless told not to."""
    assert InlineResult(outcomes=(_OK, _FAILED)).scores == (_OK.score, _FAILED.score)
    assert NO_INLINE.scores == () and NO_INLINE.sampled_out == ()
    assert Lost("dropped", None).count_evaluations is True


def test_record_counts_the_score_with_its_duration(telemetry: Telemetry, emitter: Emitter) -> None:
    """One result: an ok count, the score value with its label, and its duration."""
    Emission(emitter, ("length",), ("length",)).record(make_turn(1), _OK)
    assert telemetry.counts() == {("length", semconv.OUTCOME_OK): 1}
    (value,) = telemetry.points(semconv.METRIC_EVALUATION_SCORE)
    assert value.sum == 0.5
    assert value.attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "half"
    (duration,) = telemetry.points(semconv.METRIC_EVALUATION_DURATION)
    assert math.isclose(duration.sum, 0.25)


def test_record_inline_counts_outcomes_and_inline_evaluators_sampled_out(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Inline results are recorded with their durations; inline evaluators left out by their
    rate are counted sampled out."""
    inline = InlineResult(outcomes=(_OK, _FAILED), sampled_out=("other", "third"))
    Emission(emitter, (), ()).record_inline(inline, make_turn(1))
    assert telemetry.counts() == {
        ("length", semconv.OUTCOME_OK): 1,
        ("length", semconv.OUTCOME_ERROR): 1,
        ("other", semconv.OUTCOME_SAMPLED_OUT): 1,
        ("third", semconv.OUTCOME_SAMPLED_OUT): 1,
    }
    (duration,) = telemetry.points(semconv.METRIC_EVALUATION_DURATION)
    assert math.isclose(duration.sum, 0.75)


def test_count_counts_each_named_evaluation(telemetry: Telemetry, emitter: Emitter) -> None:
    """count() adds one point per name, with the outcome given."""
    Emission(emitter, (), ()).count(None, ["a", "b"], semconv.OUTCOME_SKIPPED)
    assert telemetry.counts() == {
        ("a", semconv.OUTCOME_SKIPPED): 1,
        ("b", semconv.OUTCOME_SKIPPED): 1,
    }


def test_count_turns_counts_every_evaluator_when_sampled_out_and_background_when_dropped(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A sampled-out turn counts all evaluators, a dropped one only the background ones, each
    as many times as there were turns."""
    emission = Emission(emitter, ("inline", "background"), ("background",))
    emission.count_turns(
        {(semconv.OUTCOME_SAMPLED_OUT, None): 3, (semconv.OUTCOME_DROPPED, None): 2}
    )
    assert telemetry.counts() == {
        ("inline", semconv.OUTCOME_SAMPLED_OUT): 3,
        ("background", semconv.OUTCOME_SAMPLED_OUT): 3,
        ("background", semconv.OUTCOME_DROPPED): 2,
    }


def test_every_result_goes_to_the_turns_app(telemetry: Telemetry, app_telemetry: Telemetry) -> None:
    """record, record_inline, count, count_turns and emit_span all ask for the turn's app."""
    routed = Routed(telemetry, app_telemetry)
    emission = Emission(routed, ("length",), ("length",))
    turn = _of("shop")
    emission.record(turn, _OK)
    emission.record_inline(InlineResult(sampled_out=("length",)), turn)
    emission.count(turn, ["length"], semconv.OUTCOME_SKIPPED)
    emission.count_turns({(semconv.OUTCOME_DROPPED, "shop"): 2})
    emission.emit_span(turn, [_OK.score])
    assert telemetry.counts() == {} and telemetry.finished() == []
    assert app_telemetry.counts() == {
        ("length", semconv.OUTCOME_OK): 1,
        ("length", semconv.OUTCOME_SAMPLED_OUT): 1,
        ("length", semconv.OUTCOME_SKIPPED): 1,
        ("length", semconv.OUTCOME_DROPPED): 2,
    }
    assert [s.name for s in app_telemetry.finished()] == [semconv.EVALUATION_SPAN_NAME]
    assert set(routed.asked) == {"shop"}


def test_emit_span_needs_scores_and_the_turns_ids(telemetry: Telemetry, emitter: Emitter) -> None:
    """No carrier span without scores, or for a turn with no trace or span id."""
    emission = Emission(emitter, ("length",), ("length",))
    emission.emit_span(make_turn(1), [])
    emission.emit_span(make_turn(1).model_copy(update={"trace_id": None}), [_OK.score])
    emission.emit_span(make_turn(1).model_copy(update={"span_id": None}), [_OK.score])
    assert telemetry.finished() == []
    emission.emit_span(make_turn(1), [_OK.score])
    (span,) = telemetry.finished()
    assert span.parent is not None and format(span.parent.span_id, "016x") == make_turn(1).span_id


def test_a_turn_without_ids_or_scores_is_skipped_quietly(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """No carrier span is attempted (so nothing is logged) without scores or either id."""
    emission = Emission(emitter, ("length",), ("length",))
    with caplog.at_level(logging.DEBUG):
        emission.emit_span(make_turn(1), [])
        emission.emit_span(make_turn(1).model_copy(update={"trace_id": None}), [_OK.score])
        emission.emit_span(make_turn(1).model_copy(update={"span_id": None}), [_OK.score])
    assert [r.getMessage() for r in caplog.records if r.name.startswith("groundwire")] == []
    assert telemetry.finished() == []


def test_a_failing_emitter_is_logged_with_its_traceback_not_raised(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """An emitter that raises while emitting the span costs a warning, never the worker: it
    reads 'could not emit the evaluation span' and carries the exception."""

    class _Broken(Emitter):
        def emit_span(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("exporter gone")

    broken = _Broken(tracer_provider=telemetry.tracer_provider)
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        Emission(broken, (), ()).emit_span(make_turn(1), [_OK.score])
    (record,) = caplog.records
    assert record.getMessage() == "could not emit the evaluation span"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)
