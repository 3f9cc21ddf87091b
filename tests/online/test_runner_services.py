"""The runner writes each turn's results, and its sampled-out, dropped and skipped counts, through
`Emitter.for_service` of the turn's app: where turns of many apps meet (the gateway), every
count lands under the app it belongs to and none is lost or counted twice."""

from __future__ import annotations

import random

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire import RagTurn, get_evaluator, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig
from tests.online.conftest import Telemetry


def _telemetry() -> Telemetry:
    """Providers with in-memory span and metric readers."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    return Telemetry(tracer_provider, MeterProvider(metric_readers=[reader]), spans, reader)


class _ByService(Emitter):
    """An emitter giving each app's turns an emitter of their own (what the gateway does)."""

    def __init__(self, services: dict[str, Telemetry], fallback: Telemetry) -> None:
        super().__init__(
            tracer_provider=fallback.tracer_provider, meter_provider=fallback.meter_provider
        )
        self.emitters = {
            name: Emitter(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)
            for name, t in services.items()
        }

    def for_service(self, service: str | None) -> Emitter:
        """The app's emitter, or this one for a turn of no known app."""
        return self.emitters.get(service or "", self)


def _turn(index: int, service: str | None) -> RagTurn:
    """A turn of `service`, in a trace of its own."""
    attributes = {semconv.SERVICE_NAME: service} if service else {}
    return RagTurn(
        query="Who wrote the notes?",
        contexts=["Ada Lovelace wrote the notes on the engine."],
        answer='She "wrote the notes on the engine" in 1843.',
        trace_id=f"{random.Random(index).getrandbits(128):032x}",  # spread over the sample space
        span_id=f"{index + 1:016x}",
        attributes=attributes,
    )


def test_results_and_counts_land_under_the_turns_app() -> None:
    """Scored, sampled-out and dropped turns of two apps (and one of none): each app's
    telemetry holds exactly its own carrier spans and counts."""
    apps = {"app-a": _telemetry(), "app-b": _telemetry()}
    fallback = _telemetry()
    runner = BackgroundRunner(
        RunnerConfig([get_evaluator("quoted_spans")], max_queue_size=100, sample_rate=0.5),
        _ByService(apps, fallback),
    )
    services = ["app-a", "app-b", "app-a", None] * 10
    turns = [_turn(i, service) for i, service in enumerate(services)]
    queued = [runner.submit(turn) for turn in turns]
    assert runner.force_flush(30)
    runner.shutdown(10)

    for name, telemetry in [*apps.items(), (None, fallback)]:
        mine = [t for t, s in zip(turns, services, strict=True) if s == name]
        scored = [t for t, q in zip(turns, queued, strict=True) if q and t in mine]
        sampled_out = len(mine) - len(scored)
        assert 0 < len(scored) < len(mine)  # both outcomes occur for every app
        carriers = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
        assert sorted(f"{c.parent.span_id:016x}" for c in carriers if c.parent) == sorted(
            t.span_id for t in scored if t.span_id
        )
        counts = telemetry.counts()
        assert counts.get(("quoted_spans", semconv.OUTCOME_OK), 0) == len(scored)
        assert counts.get(("quoted_spans", semconv.OUTCOME_SAMPLED_OUT), 0) == sampled_out


def test_turns_dropped_at_a_full_queue_are_counted_under_their_app() -> None:
    """A queue of one, filled before the workers start: each app's dropped turns are counted
    under that app."""
    apps = {"app-a": _telemetry(), "app-b": _telemetry()}
    runner = BackgroundRunner(
        RunnerConfig([get_evaluator("quoted_spans")], max_queue_size=1),
        _ByService(apps, _telemetry()),
    )
    runner.shutdown(10)  # a closed runner drops every turn it is given, as a full queue does
    services = ["app-a", "app-b", "app-b"]
    for index, service in enumerate(services):
        assert not runner.submit(_turn(index, service))
    runner._flush_deferred()
    assert apps["app-a"].counts() == {("quoted_spans", semconv.OUTCOME_DROPPED): 1}
    assert apps["app-b"].counts() == {("quoted_spans", semconv.OUTCOME_DROPPED): 2}
