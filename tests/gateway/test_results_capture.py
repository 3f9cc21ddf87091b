"""`ResultCapture` in-process, one rule each: results without a trace wait for the next report,
the reported traces remembered are bounded (oldest forgotten first), log records are split like
spans, and the capturing exporters keep, never send, and close as no-ops."""

from __future__ import annotations

from types import SimpleNamespace

from opentelemetry.context import Context
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from groundwire.gateway._results import ResultCapture, ResultRequest


def _tracer_provider(capture: ResultCapture) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(capture.span_exporter))
    return provider


def _context(trace_id: int) -> Context:
    """A context whose current span is a remote one of trace `trace_id`."""
    parent = SpanContext(trace_id, 0x1234, is_remote=True, trace_flags=TraceFlags(1))
    return set_span_in_context(NonRecordingSpan(parent))


def _span_in(provider: TracerProvider, trace_id: int) -> None:
    """End one result span in trace `trace_id`."""
    provider.get_tracer("test").start_span("evaluation", _context(trace_id)).end()


def _span_traces(requests: list[ResultRequest]) -> list[int]:
    """The trace ids of the spans in the traces requests, in order."""
    ids = []
    for request in requests:
        if request.signal != "traces":
            continue
        message = trace_service_pb2.ExportTraceServiceRequest()
        message.ParseFromString(request.body)
        ids += [
            int(span.trace_id.hex(), 16)
            for resource in message.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
    return ids


def test_a_log_record_outside_any_trace_goes_with_the_next_report() -> None:
    """A result log record that names no trace waits for the next report, whatever traces it
    names; one of a trace waits for that trace's."""
    capture = ResultCapture()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(capture.log_exporter))
    provider.get_logger("test").emit(body="no trace")
    provider.get_logger("test").emit(body="in a trace", context=_context(5))
    assert capture.held == 2
    taken = capture.take(["ab" * 16])
    assert [(r.signal, r.items) for r in taken] == [("logs", 1)]
    assert capture.held == 1
    assert [(r.signal, r.items) for r in capture.take([f"{5:032x}"])] == [("logs", 1)]


def test_a_report_takes_its_traces_and_leaves_the_others() -> None:
    """`take` of one trace takes its results and the ones waiting for any report, never those
    of a trace not reported; `held` counts what is left."""
    capture = ResultCapture()
    provider = _tracer_provider(capture)
    _span_in(provider, 1)
    _span_in(provider, 2)
    _span_in(provider, 2)
    assert capture.held == 3
    assert _span_traces(capture.take([f"{2:032x}"])) == [2, 2]
    assert capture.held == 1
    assert _span_traces(capture.take([], everything=True)) == [1]


def test_the_reported_traces_remembered_are_bounded_oldest_forgotten_first() -> None:
    """Of 100,001 traces reported, the first is forgotten (a late result of it waits for its own
    trace's report again) and the second still remembered (its late result goes with the next
    report)."""
    capture = ResultCapture()
    provider = _tracer_provider(capture)
    assert capture.take([f"{n:032x}" for n in range(1, 100_002)]) == []
    _span_in(provider, 1)
    _span_in(provider, 2)
    assert _span_traces(capture.take([])) == [2]
    assert _span_traces(capture.take([f"{1:032x}"])) == [1]


def test_many_log_records_are_split_into_requests_of_512() -> None:
    """600 result log records go as two logs requests of 512 and 88 records."""
    capture = ResultCapture()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(capture.log_exporter))
    logger = provider.get_logger("test")
    for _ in range(600):
        logger.emit(body="result")
    assert capture.held == 600
    taken = capture.take([], everything=True)
    assert [(r.signal, r.items) for r in taken] == [("logs", 512), ("logs", 88)]
    message = logs_service_pb2.ExportLogsServiceRequest()
    message.ParseFromString(taken[1].body)
    assert sum(len(s.log_records) for r in message.resource_logs for s in r.scope_logs) == 88


def test_the_capturing_exporters_keep_and_close_as_no_ops() -> None:
    """Both exporters answer success, flush at once (True) and have nothing to shut down."""
    capture = ResultCapture()
    span = ReadableSpan("kept", context=None)
    assert capture.span_exporter.export([span]) is SpanExportResult.SUCCESS
    assert capture.log_exporter.export([]).name == "SUCCESS"
    for exporter in (capture.span_exporter, capture.log_exporter):
        assert exporter.force_flush() is True
        assert exporter.force_flush(1) is True
        assert exporter.shutdown() is None
    assert capture.held == 1


def test_a_log_record_without_a_trace_id_field_waits_for_the_next_report() -> None:
    """A record whose log record has no `trace_id` at all (an older SDK's shape) is kept for the
    next report rather than failing the export."""
    capture = ResultCapture()
    record = SimpleNamespace(log_record=SimpleNamespace(body="no trace field"))
    assert capture.log_exporter.export([record]).name == "SUCCESS"
    assert capture.held == 1
