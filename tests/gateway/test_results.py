"""Evaluation results with a persistent queue: kept by trace in the scoring process, encoded as
OTLP requests, and committed to the queue together with their traces' scored mark (the whole
path under SIGKILLs is tests/gateway/test_chaos.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._results import ResultCapture, ResultRequest
from groundwire.gateway._signals import CONTENT_PROTOBUF


def _providers(capture: ResultCapture) -> tuple[TracerProvider, LoggerProvider]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(capture.span_exporter))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(capture.log_exporter))
    return tracer_provider, logger_provider


def _result(tracer_provider: TracerProvider, logger_provider: LoggerProvider) -> str:
    """One carrier span with one result log record in its context; its trace id (hex)."""
    from opentelemetry import context, trace

    with tracer_provider.get_tracer("test").start_as_current_span("evaluation") as span:
        logger_provider.get_logger("test").emit(
            body="result", attributes={"gen_ai.evaluation.name": "x"}, context=context.get_current()
        )
    return trace.format_trace_id(span.get_span_context().trace_id)


def _span_traces(request: ResultRequest) -> list[str]:
    message = trace_service_pb2.ExportTraceServiceRequest()
    message.ParseFromString(request.body)
    return [
        span.trace_id.hex()
        for resource in message.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def _log_traces(request: ResultRequest) -> list[str]:
    message = logs_service_pb2.ExportLogsServiceRequest()
    message.ParseFromString(request.body)
    return [
        record.trace_id.hex()
        for resource in message.resource_logs
        for scope in resource.scope_logs
        for record in scope.log_records
    ]


def test_results_are_taken_by_trace_as_otlp_requests() -> None:
    """`take` encodes the spans and log records of the traces asked for, and only those."""
    capture = ResultCapture()
    tracer_provider, logger_provider = _providers(capture)
    first, second = _result(tracer_provider, logger_provider), _result(*_providers(capture))
    taken = capture.take([first])
    assert [(r.signal, r.items) for r in taken] == [("traces", 1), ("logs", 1)]
    assert _span_traces(taken[0]) == [first]
    assert _log_traces(taken[1]) == [first]
    assert capture.held == 2  # the other trace's results wait for its own report
    assert [_span_traces(r) for r in capture.take([second]) if r.signal == "traces"] == [[second]]
    assert capture.held == 0 and capture.take([first, second]) == []


def test_a_result_after_its_trace_was_reported_goes_with_the_next_report() -> None:
    """A turn that finished after its trace was reported is not left behind: the next report
    carries it (and the last one, at shutdown, carries everything held)."""
    capture = ResultCapture()
    tracer_provider, logger_provider = _providers(capture)
    trace_id = _result(tracer_provider, logger_provider)
    capture.take([trace_id])
    span = tracer_provider.get_tracer("test").start_span(
        "evaluation",
        context=_context_of(trace_id),
    )
    span.end()
    late = capture.take([])
    assert [(r.signal, _span_traces(r)) for r in late] == [("traces", [trace_id])]
    other = _result(tracer_provider, logger_provider)
    assert {r.signal for r in capture.take([], everything=True)} == {"traces", "logs"}
    assert capture.held == 0 and other


def _context_of(trace_id: str) -> object:
    """A context whose current span is a remote one of `trace_id`."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parent = SpanContext(int(trace_id, 16), 0x1234, is_remote=True, trace_flags=TraceFlags(1))
    return trace.set_span_in_context(NonRecordingSpan(parent))


def test_results_are_committed_with_the_scored_mark_and_replayed_to_forward(
    tmp_path: Path,
) -> None:
    """One `scored` call stores the results as requests to forward (not to score) and the trace
    ids as scored, and releases the scored request: a restart finds all of it."""
    queue = DiskQueue(tmp_path)
    request = asyncio.run(queue.append("traces", CONTENT_PROTOBUF, 3, b"spans", score=True))
    queue.done([request])  # delivered already: it waits for its traces to be scored
    results = [ResultRequest("traces", 1, b"\x0a\x00"), ResultRequest("logs", 2, b"\x0a\x01")]
    seqs = queue.scored([request], ["ab" * 16], results).result(timeout=10)
    assert len(seqs) == 2 and min(seqs) > request
    queue.close()
    reopened = DiskQueue(tmp_path)
    stored = list(reopened.replay())
    assert [(s.seq, s.signal, s.items, s.body, s.forward, s.score) for s in stored] == [
        (seqs[0], "traces", 1, b"\x0a\x00", True, False),
        (seqs[1], "logs", 2, b"\x0a\x01", True, False),
    ]
    assert all(s.content_type == CONTENT_PROTOBUF for s in stored)
    assert reopened.scored_recently() == {"ab" * 16}
    reopened.done(seqs)  # delivered: nothing left
    reopened.sync()
    assert reopened.held_records == 0
    reopened.close()


def test_many_results_are_split_into_requests_a_downstream_takes() -> None:
    """A report after a long stall (or the last one, at shutdown) holds many results: they go
    as several requests of at most 512 spans, never one that a downstream would refuse."""
    capture = ResultCapture()
    tracer_provider, _ = _providers(capture)
    tracer = tracer_provider.get_tracer("test")
    for _ in range(600):
        tracer.start_span("evaluation").end()
    taken = capture.take([], everything=True)
    assert [(r.signal, r.items) for r in taken] == [("traces", 512), ("traces", 88)]
    assert sum(len(_span_traces(r)) for r in taken) == 600
