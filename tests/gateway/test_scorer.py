"""The scoring process's `Scorer` on real parts (runner, emitter, SDK providers, trace window):
it reads each request's protobuf bytes and hands due traces' turns to the runner on the caller's
thread, with no queue or thread of its own; the receiver's span count is the one it uses. And an
OTLP/JSON request is encoded to protobuf once, for every reader that needs that form."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway._traces import genai_rag_trace, new_trace_id, openinference_rag_trace, request

import groundwire
from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._scoring import Scorer, build_scorer
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS, decode
from groundwire.gateway._transport import Batch
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


def _protobuf(trace: list[dict[str, Any]]) -> bytes:
    """The protobuf encoding of an OTLP/JSON request of `trace` (what the intake hands over)."""
    message = decode(SIGNALS["traces"], request(trace), CONTENT_JSON)
    return bytes(message.SerializeToString())


def test_due_traces_are_handed_to_the_runner_before_tick_returns(
    spans: InMemorySpanExporter,
) -> None:
    """Two traces are grouped, due after the quiet period, and their turns are in the runner
    when `tick` returns (no queue or thread between), then scored once each."""
    scorer, metrics = _scorer(spans)
    received = time.monotonic()
    scorer.add(_protobuf(openinference_rag_trace()), 3, received)
    scorer.add(_protobuf(genai_rag_trace()), 3, received)
    assert scorer.open_traces == 2
    scorer.tick(time.monotonic())
    assert scorer.turns_submitted == 0  # not quiet yet
    scorer.tick(time.monotonic() + 0.5)
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
    scorer.add(b"\xff\x00 not a message", 7, time.monotonic())
    scorer.add(b"\x0a\x05\x0a", 5, time.monotonic())
    assert metrics.count("not_scored:unreadable") == 12
    assert scorer.open_traces == 0
    assert scorer.shutdown(5.0) == (0, True)


def test_late_spans_and_forced_traces_are_counted(spans: InMemorySpanExporter) -> None:
    """Spans of a scored trace are counted late; a trace forced out at the open-trace bound is
    counted as evicted and its turn submitted at once."""
    scorer, metrics = _scorer(spans, max_traces=1)
    first, second = openinference_rag_trace(), genai_rag_trace()
    scorer.add(_protobuf(first), 3, time.monotonic())
    scorer.add(_protobuf(second), 3, time.monotonic())
    assert metrics.count("evicted_traces") == 1 and scorer.turns_submitted == 1
    scorer.tick(time.monotonic() + 1.0)
    late = dict(first[0], spanId="00000000000000aa")
    scorer.add(_protobuf([late]), 1, time.monotonic())
    assert metrics.count("late_spans") == 1 and scorer.open_traces == 0
    assert scorer.shutdown(10.0) == (2, True)


def test_a_json_request_is_encoded_to_protobuf_once() -> None:
    """The intake's batch of an OTLP/JSON request encodes it on first use and keeps the bytes
    (the scoring process and a gRPC downstream, retries included, read the same encoding);
    the decoded message is let go; a protobuf request is its own body."""
    body = request(openinference_rag_trace())
    message = decode(SIGNALS["traces"], body, CONTENT_JSON)
    batch = Batch(SIGNALS["traces"], body, CONTENT_JSON, 3, message)
    encoded = batch.protobuf()
    assert batch.protobuf() is encoded and batch.message is None
    assert decode(SIGNALS["traces"], encoded, CONTENT_PROTOBUF) == message
    assert batch.body == body and batch.size == len(body)  # forwarded over HTTP as it came
    proto = Batch(SIGNALS["traces"], encoded, CONTENT_PROTOBUF, 3)
    assert proto.protobuf() is encoded


class _HeldForOneTrace:
    """An evaluator that holds the turns of one trace until released (a slow judge call)."""

    name = "held"

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.release = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        if turn.trace_id == self.trace_id:
            self.release.wait(10.0)
        return Score(name=self.name, value=1.0)


def _wait_finished(scorer: Scorer, count: int) -> None:
    deadline = time.monotonic() + 10.0
    while scorer.stats().finished < count:
        assert time.monotonic() < deadline, scorer.stats()
        time.sleep(0.01)


def test_a_trace_is_reported_scored_only_when_its_own_turns_are(
    spans: InMemorySpanExporter,
) -> None:
    """Two workers: trace A's turn is slow, B's (released later) finishes first. `take_scored`
    names neither until A's own turn is finished (B's request may hold A's spans too), then
    both, in order; the count of finished turns alone would have named A too early (its result
    not yet written: a crash then would leave A scored with no result)."""
    slow, fast = new_trace_id(), new_trace_id()
    held = _HeldForOneTrace(slow)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=100)
    config = RunnerConfig(evaluators=[held], workers=2)
    scorer = build_scorer(config, Emitter(tracer_provider=provider), window, GatewayMetrics(None))
    try:
        scorer.add(_protobuf(openinference_rag_trace(slow)), 3, time.monotonic())
        scorer.tick(time.monotonic() + 0.5)
        scorer.add(_protobuf(genai_rag_trace(fast)), 3, time.monotonic())
        scorer.tick(time.monotonic() + 0.5)
        _wait_finished(scorer, 1)  # B's turn finished, A's still held
        assert scorer.take_scored() == ([], [])
        held.release.set()
        _wait_finished(scorer, 2)
        assert scorer.take_scored() == ([], [slow, fast])
    finally:
        held.release.set()
        scorer.shutdown(5.0)
