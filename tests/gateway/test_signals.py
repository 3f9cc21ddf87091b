"""The three OTLP signals in-process: their paths and names, how each counts its items, and
`decode` reading protobuf and OTLP/JSON bodies (hex ids) or saying clearly why it cannot."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from groundwire.gateway._signals import (
    CONTENT_JSON,
    CONTENT_PROTOBUF,
    SIGNALS,
    MalformedRequestError,
    decode,
)

_TRACE = "5b8efff798038103d269b633813fc60c"
_SPAN = "eee19b7ec3c1b174"


def test_each_signal_names_its_path_messages_and_partial_success_field() -> None:
    """traces, metrics and logs: their OTLP/HTTP paths, gRPC methods, message types and the
    field a partial success names."""
    assert {name: (s.name, s.path, s.rejected_field) for name, s in SIGNALS.items()} == {
        "traces": ("traces", "/v1/traces", "rejected_spans"),
        "metrics": ("metrics", "/v1/metrics", "rejected_data_points"),
        "logs": ("logs", "/v1/logs", "rejected_log_records"),
    }
    assert SIGNALS["traces"].grpc_method == (
        "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
    )
    assert SIGNALS["logs"].response_type is logs_service_pb2.ExportLogsServiceResponse
    assert SIGNALS["metrics"].request_type is metrics_service_pb2.ExportMetricsServiceRequest


def _json(data: object) -> bytes:
    return json.dumps(data).encode()


def test_spans_are_counted_across_resources_and_scopes() -> None:
    """The traces count is every span of every scope of every resource."""
    body = _json({"resourceSpans": [
        {"scopeSpans": [{"spans": [{"name": "a"}, {"name": "b"}]}, {"spans": [{"name": "c"}]}]},
        {"scopeSpans": [{"spans": [{"name": "d"}]}]},
    ]})  # fmt: skip
    message = decode(SIGNALS["traces"], body, CONTENT_JSON)
    assert SIGNALS["traces"].count(message) == 4


def test_metric_points_are_counted_for_every_kind_and_a_metric_without_data_is_none() -> None:
    """The metrics count is the data points of each metric whatever its kind (gauge, sum,
    histogram), across scopes and resources; a metric with no data adds nothing."""
    body = _json({"resourceMetrics": [
        {"scopeMetrics": [
            {"metrics": [
                {"name": "g", "gauge": {"dataPoints": [{"asDouble": 1}, {"asDouble": 2}]}},
                {"name": "empty"},
            ]},
            {"metrics": [{"name": "s", "sum": {"dataPoints": [{"asInt": "3"}]}}]},
        ]},
        {"scopeMetrics": [{"metrics": [
            {"name": "h", "histogram": {"dataPoints": [{"count": "1"}, {}, {}]}},
        ]}]},
    ]})  # fmt: skip
    message = decode(SIGNALS["metrics"], body, CONTENT_JSON)
    assert SIGNALS["metrics"].count(message) == 6


def test_log_records_are_counted_across_resources_and_scopes() -> None:
    """The logs count is every record of every scope of every resource."""
    body = _json({"resourceLogs": [
        {"scopeLogs": [{"logRecords": [{}, {}]}, {"logRecords": [{}]}]},
        {"scopeLogs": [{"logRecords": [{}, {}]}]},
    ]})  # fmt: skip
    assert SIGNALS["logs"].count(decode(SIGNALS["logs"], body, CONTENT_JSON)) == 5


def test_protobuf_decodes_and_garbage_is_a_clear_error() -> None:
    """A protobuf body decodes to its message; bytes that are not one name the signal."""
    sent = trace_service_pb2.ExportTraceServiceRequest()
    sent.resource_spans.add().scope_spans.add().spans.add(name="op")
    message = decode(SIGNALS["traces"], sent.SerializeToString(), CONTENT_PROTOBUF)
    assert message == sent
    with pytest.raises(MalformedRequestError, match=r"^not a valid OTLP protobuf logs request: "):
        decode(SIGNALS["logs"], b"\xff\xff\xff", CONTENT_PROTOBUF)


def test_json_ids_in_hex_become_the_bytes_they_spell_at_any_depth() -> None:
    """Trace, span and parent ids in hex (OTLP/JSON), in spans and in their links, decode to
    their bytes; an empty id stays empty."""
    body = _json({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": _TRACE, "spanId": _SPAN, "parentSpanId": "", "name": "op",
        "links": [{"traceId": _TRACE, "spanId": "0102030405060708"}],
    }]}]}]})  # fmt: skip
    message = decode(SIGNALS["traces"], body, CONTENT_JSON)
    span = message.resource_spans[0].scope_spans[0].spans[0]
    assert (span.trace_id.hex(), span.span_id.hex(), span.parent_span_id) == (_TRACE, _SPAN, b"")
    assert span.links[0].span_id == bytes(range(1, 9))
    logs = _json({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"trace_id": _TRACE, "span_id": _SPAN},
    ]}]}]})  # fmt: skip
    record = decode(SIGNALS["logs"], logs, CONTENT_JSON).resource_logs[0].scope_logs[0]
    assert record.log_records[0].trace_id.hex() == _TRACE


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", r"^not valid JSON: "),
        (b"\xff\xfe", r"^not valid JSON: "),
        (b"[1, 2]", r"^expected a JSON object, got list$"),
        (_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "abc"}]}]}]}),
         r"^not a valid OTLP/JSON traces request: traceId must be 32 or 16 hex digits, got 3$"),
        (_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "zz" * 8}]}]}]}),
         r"^not a valid OTLP/JSON traces request: spanId is not hexadecimal$"),
        (_json({"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}),
         r"^not a valid OTLP/JSON traces request: "),
        (_json({"resourceSpans": {"not": "a list"}}), r"^not a valid OTLP/JSON traces request: "),
    ],
)  # fmt: skip
def test_json_that_is_not_a_request_is_a_clear_error(body: bytes, message: str) -> None:
    """Each way a JSON body can be wrong gets its own message, never a traceback."""
    with pytest.raises(MalformedRequestError, match=message):
        decode(SIGNALS["traces"], body, CONTENT_JSON)


def test_a_parse_error_is_cut_to_its_first_line_and_300_characters() -> None:
    """protobuf's parse error may be long: the message keeps its first line, at most 300
    characters of it."""
    body = _json(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "x" * 500}]}]}]}
    )
    with pytest.raises(MalformedRequestError) as raised:
        decode(SIGNALS["traces"], body, CONTENT_JSON)
    text = str(raised.value)
    prefix = "not a valid OTLP/JSON traces request: "
    assert text.startswith(prefix) and "\n" not in text
    assert len(text) == len(prefix) + 300


def test_unknown_json_fields_are_ignored() -> None:
    """Fields a newer OTLP adds (unknown here) do not refuse the request."""
    body = _json({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "op", "newField": 1}]}]}]})
    assert SIGNALS["traces"].count(decode(SIGNALS["traces"], body, CONTENT_JSON)) == 1


def test_a_parse_error_keeps_only_its_first_line() -> None:
    """A value holding line breaks (echoed by protobuf's float parser) is cut at the first one:
    the message stays one line and shows nothing after it."""
    point = {"asDouble": "x\ny\nz"}
    metric = {"name": "g", "gauge": {"dataPoints": [point]}}
    body = _json({"resourceMetrics": [{"scopeMetrics": [{"metrics": [metric]}]}]})
    with pytest.raises(MalformedRequestError) as raised:
        decode(SIGNALS["metrics"], body, CONTENT_JSON)
    assert str(raised.value).startswith("not a valid OTLP/JSON metrics request: ")
    assert str(raised.value).endswith("Couldn't parse float: x")
