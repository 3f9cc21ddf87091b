"""Readers: OTLP log records (log-based events) in trace files become `SpanBatch.logs`."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire.assembly._log_record import LogRecordData
from groundwire.offline.readers import Problems, SpanBatch, read_spans
from tests.offline._traces import write_groundwire_jsonl

EVENT = "gen_ai.evaluation.result"


def _record_events() -> tuple[list[ReadableSpan], list[ReadableLogRecord]]:
    """One span and three log records made by the real SDK inside it: an event with eventName,
    a legacy event carrying only the `event.name` attribute, and a plain log with a map body."""
    resource = Resource.create({"service.name": "rag-app"})
    spans_out = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
    logs_out = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_out))
    logger = logger_provider.get_logger("tests.logs")
    with tracer_provider.get_tracer("tests.logs").start_as_current_span("rag"):
        logger.emit(
            event_name=EVENT,
            body={"quote": "the sky", "spans": [1, 2.5, True]},
            attributes={"gen_ai.evaluation.name": "quoted_spans"},
            severity_text="INFO",
        )
        logger.emit(body="legacy", attributes={"event.name": "gen_ai.choice"})
    logger.emit(body=["a", "b"], severity_text="WARN")
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return list(spans_out.get_finished_spans()), list(logs_out.get_finished_logs())


def _hex_ids(node: Any) -> Any:
    """Protobuf JSON (base64 ids) turned into OTLP/JSON (hex ids), as the Collector writes it."""
    if isinstance(node, dict):
        return {
            key: (
                base64.b64decode(value).hex()
                if key in ("traceId", "spanId") and isinstance(value, str)
                else _hex_ids(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_hex_ids(item) for item in node]
    return node


def _logs(batches: list[SpanBatch]) -> list[LogRecordData]:
    return [record for batch in batches for record in batch.logs]


def _check(logs: list[LogRecordData], span: ReadableSpan) -> None:
    """The three records decode to the values the SDK was given."""
    context = span.get_span_context()
    event, legacy, plain = logs
    assert event.event_name == EVENT
    assert event.trace_id == format(context.trace_id, "032x")
    assert event.span_id == format(context.span_id, "016x")
    assert event.body == {"quote": "the sky", "spans": [1, 2.5, True]}
    assert dict(event.attributes) == {"gen_ai.evaluation.name": "quoted_spans"}
    assert event.severity_text == "INFO"
    assert event.resource["service.name"] == "rag-app"
    assert event.instrumentation_scope == "tests.logs"
    assert event.time_ns > 0
    assert legacy.event_name == "gen_ai.choice" and legacy.body == "legacy"
    assert plain.event_name is None and plain.trace_id is None and plain.span_id is None
    assert plain.body == ["a", "b"] and plain.severity_text == "WARN"


def test_otlp_json_log_lines_become_log_records(tmp_path: Path) -> None:
    """Collector-style OTLP/JSON (hex ids, numeric enums) and protobuf JSON (base64 ids, enum
    names) logs lines, between span lines, give the SDK's records; none is a bad line."""
    spans, records = _record_events()
    request = encode_logs(records)
    proto_json = json_format.MessageToDict(request)
    collector = _hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True))
    path = write_groundwire_jsonl(spans, tmp_path / "mixed.jsonl")
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(collector) + "\n" + json.dumps(proto_json) + "\n")
    problems = Problems(stream=io.StringIO())
    batches = list(read_spans([path], problems))
    assert problems.stats.bad_records == 0
    assert problems.stats.log_records == 6
    assert problems.stats.spans == 1
    logs = _logs(batches)
    _check(logs[:3], spans[0])
    assert logs[3:] == logs[:3]
    assert batches[1].where == f"{path}:2" and batches[1].spans == []
    assert logs[0].severity_number == 0 and logs[2].severity_number == 0


def test_severity_names_and_numbers_read_the_same(tmp_path: Path) -> None:
    """`severityNumber` as an enum name or an integer decodes to the same number."""
    line = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {"severityNumber": "SEVERITY_NUMBER_WARN2", "body": {}},
                            {"severityNumber": 14, "observedTimeUnixNano": "7"},
                        ]
                    }
                ]
            }
        ]
    }
    path = tmp_path / "sev.jsonl"
    path.write_text(json.dumps(line) + "\n")
    logs = _logs(list(read_spans([path], Problems())))
    assert [log.severity_number for log in logs] == [14, 14]
    assert logs[0].body is None and logs[1].time_ns == 7


def test_bad_log_record_is_reported_with_its_path(tmp_path: Path) -> None:
    """A log record with a malformed trace id is one bad line naming the record; others read."""
    bad = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "xyz"}]}]}]}
    good = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"body": {"stringValue": "ok"}}]}]}]}
    path = tmp_path / "logs.jsonl"
    path.write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    stream = io.StringIO()
    problems = Problems(stream=stream)
    logs = _logs(list(read_spans([path], problems)))
    assert [log.body for log in logs] == ["ok"]
    assert problems.stats.bad_records == 1
    assert f"{path}:1: skipped: not a valid OTLP/JSON logs request" in stream.getvalue()
    assert "resourceLogs[0].scopeLogs[0].logRecords[0]: traceId" in stream.getvalue()


def test_protobuf_files_mixing_traces_logs_and_metrics(tmp_path: Path) -> None:
    """A Collector protobuf file holding spans, logs and metrics frames: spans and logs are
    read, the metrics frame is counted and skipped, never misread as logs or reported as bad."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

    spans, records = _record_events()
    metrics = MetricsData()
    metric = metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="req", unit="1")
    metric.sum.data_points.add(as_int=3)
    bodies = [
        encode_spans(spans).SerializeToString(),
        encode_logs(records).SerializeToString(),
        metrics.SerializeToString(),
    ]
    path = tmp_path / "all.pb"
    path.write_bytes(b"".join(len(body).to_bytes(4, "big") + body for body in bodies))
    problems = Problems(stream=io.StringIO())
    batches = list(read_spans([path], problems))
    assert problems.stats.bad_records == 0
    assert problems.stats.other_records == 2
    assert problems.stats.log_records == 3
    assert [len(batch.spans) for batch in batches] == [1, 0]
    _check(_logs(batches), spans[0])
