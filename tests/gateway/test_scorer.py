"""The scoring process's `Scorer` on real parts (runner, emitter, SDK providers, trace window):
it reads a request as it arrived, OTLP/JSON included, and hands due traces' turns to the runner
on the caller's thread, with no queue or thread of its own; the receiver's span count is the one
it uses."""

from __future__ import annotations

import time

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway._traces import genai_rag_trace, openinference_rag_trace, request

import groundwire
from groundwire import semconv
from groundwire.emit import Emitter
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._scoring import Scorer
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS, decode
from groundwire.runner import BackgroundRunner, RunnerConfig
from groundwire.trace_window import TraceWindow


@pytest.fixture
def spans() -> InMemorySpanExporter:
    """Where the runner's emitter writes the evaluation carrier spans."""
    return InMemorySpanExporter()


def _scorer(exporter: InMemorySpanExporter, max_traces: int = 100) -> tuple[Scorer, GatewayMetrics]:
    """A scorer as the scoring process builds it, emitting to `exporter`."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = RunnerConfig(evaluators=[groundwire.get_evaluator("quoted_spans")], workers=1)
    runner = BackgroundRunner(config, Emitter(tracer_provider=provider))
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=max_traces)
    metrics = GatewayMetrics(None)
    return Scorer(runner, window, metrics), metrics


def test_json_and_protobuf_requests_are_scored_as_they_arrived(
    spans: InMemorySpanExporter,
) -> None:
    """An OTLP/JSON body goes in as received (no re-encoding on the way); so does protobuf;
    both traces are grouped, due after the quiet period, and scored once."""
    scorer, metrics = _scorer(spans)
    json_body = request(openinference_rag_trace())
    proto_body = decode(
        SIGNALS["traces"], request(genai_rag_trace()), CONTENT_JSON
    ).SerializeToString()
    received = time.monotonic()
    scorer.add(json_body, CONTENT_JSON, 3, received)
    scorer.add(proto_body, CONTENT_PROTOBUF, 3, received)
    assert scorer.open_traces == 2
    scorer.tick(time.monotonic())
    assert scorer.turns_submitted == 0  # not quiet yet
    scorer.tick(time.monotonic() + 0.5)
    # handed to the runner on this thread, before tick returned: no queue or thread between
    assert scorer.turns_submitted == 2 and scorer.stats().submitted == 2
    assert scorer.open_traces == 0
    turns, drained = scorer.shutdown(10.0)
    assert (turns, drained) == (2, True)
    assert scorer.stats().scored == 2
    carriers = [s for s in spans.get_finished_spans() if s.name == semconv.EVALUATION_SPAN_NAME]
    assert len(carriers) == 2
    assert metrics.count("scored_traces") == 2


def test_an_unreadable_request_counts_the_receivers_span_count_as_not_scored(
    spans: InMemorySpanExporter,
) -> None:
    """A body the scorer cannot read is counted with the span count it was given (the
    receiver's, the one count), as `not_scored` `unreadable`; nothing is grouped."""
    scorer, metrics = _scorer(spans)
    scorer.add(b"\xff\x00 not a message", CONTENT_PROTOBUF, 7, time.monotonic())
    scorer.add(b"[1, 2]", CONTENT_JSON, 5, time.monotonic())
    assert metrics.count("not_scored:unreadable") == 12
    assert scorer.open_traces == 0
    assert scorer.shutdown(5.0) == (0, True)


def test_late_spans_and_forced_traces_are_counted(spans: InMemorySpanExporter) -> None:
    """Spans of a scored trace are counted late; a trace forced out at the open-trace bound is
    counted as evicted and its turn submitted at once."""
    scorer, metrics = _scorer(spans, max_traces=1)
    first, second = openinference_rag_trace(), genai_rag_trace()
    scorer.add(request(first), CONTENT_JSON, 3, time.monotonic())
    scorer.add(request(second), CONTENT_JSON, 3, time.monotonic())
    assert metrics.count("evicted_traces") == 1 and scorer.turns_submitted == 1
    scorer.tick(time.monotonic() + 1.0)
    late = dict(first[0], spanId="00000000000000aa")
    scorer.add(request([late]), CONTENT_JSON, 1, time.monotonic())
    assert metrics.count("late_spans") == 1 and scorer.open_traces == 0
    assert scorer.shutdown(10.0) == (2, True)
