"""Readers, log records field by field: OTLP/JSON and protobuf log records decode to exact values
in either key spelling, and every wrong field gives an error naming it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.logs.v1.logs_pb2 import LogsData

from groundwire.offline.readers._otlp_logs import logs_from_message, logs_from_request

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def _request(*records: Any, scope: Any = None, resource: Any = None) -> dict[str, Any]:
    scope_logs: dict[str, Any] = {"logRecords": list(records)}
    if scope is not None:
        scope_logs["scope"] = scope
    group: dict[str, Any] = {"scopeLogs": [scope_logs]}
    if resource is not None:
        group["resource"] = resource
    return {"resourceLogs": [group]}


def _one(record: dict[str, Any]) -> Any:
    (log,) = logs_from_request(_request(record)) or []
    return log


def test_a_camel_case_log_record_decodes_every_field() -> None:
    """Ids, times, severity, text, attributes, body, resource, scope and the event name."""
    record = {
        "traceId": TRACE,
        "spanId": SPAN,
        "timeUnixNano": "11",
        "observedTimeUnixNano": "12",
        "severityNumber": 9,
        "severityText": "INFO",
        "eventName": "gen_ai.choice",
        "attributes": [{"key": "a", "value": {"arrayValue": {"values": [{"intValue": 1}]}}}],
        "body": {"kvlistValue": {"values": [{"key": "k", "value": {"arrayValue": {}}}]}},
    }
    request = _request(
        record,
        scope={"name": "lib"},
        resource={"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
    )
    (log,) = logs_from_request(request) or []
    assert (log.trace_id, log.span_id) == (TRACE, SPAN)
    assert log.time_ns == 11
    assert (log.severity_number, log.severity_text) == (9, "INFO")
    assert log.event_name == "gen_ai.choice"
    assert dict(log.attributes) == {"a": (1,)}
    assert log.body == {"k": []}
    assert dict(log.resource) == {"service.name": "s"}
    assert log.instrumentation_scope == "lib"


def test_a_snake_case_log_record_decodes_every_field() -> None:
    """The same record in protobuf JSON's snake_case spelling gives the same values."""
    record = {
        "trace_id": TRACE,
        "span_id": SPAN,
        "time_unix_nano": 21,
        "severity_number": "SEVERITY_NUMBER_ERROR",
        "severity_text": "ERROR",
        "event_name": "e",
    }
    request = {"resource_logs": [{"scope_logs": [{"log_records": [record]}]}]}
    (log,) = logs_from_request(request) or []
    assert (log.trace_id, log.span_id, log.time_ns) == (TRACE, SPAN, 21)
    assert (log.severity_number, log.severity_text, log.event_name) == (17, "ERROR", "e")
    assert log.instrumentation_scope is None and dict(log.resource) == {}


def test_observed_time_stands_in_for_a_missing_time() -> None:
    """`observedTimeUnixNano` (either spelling) is the time when `timeUnixNano` is 0 or absent."""
    assert _one({"timeUnixNano": "0", "observedTimeUnixNano": "5"}).time_ns == 5
    assert _one({"observed_time_unix_nano": 6}).time_ns == 6
    assert _one({"timeUnixNano": ""}).time_ns == 0
    assert _one({}).time_ns == 0


def test_a_bare_log_record_has_the_defaults() -> None:
    """No fields: no ids, time 0, severity 0, no text, no body, no event name."""
    log = _one({"severityText": "", "severityNumber": ""})
    assert (log.trace_id, log.span_id, log.event_name, log.body) == (None, None, None, None)
    assert (log.time_ns, log.severity_number, log.severity_text) == (0, 0, None)
    assert dict(log.attributes) == {}


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("SEVERITY_NUMBER_UNSPECIFIED", 0),
        ("SEVERITY_NUMBER_TRACE", 1),
        ("DEBUG4", 8),
        ("SEVERITY_NUMBER_FATAL4", 24),
        ("-0", 0),
        ("17", 17),
        (0, 0),
        (2147483647, 2147483647),
    ],
)
def test_severity_numbers_from_names_and_numbers(value: object, number: int) -> None:
    """Severity as an enum name (with or without the prefix), a digit string or an integer."""
    assert _one({"severityNumber": value}).severity_number == number


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("SEVERITY_NUMBER_LOUD", "unknown severityNumber 'SEVERITY_NUMBER_LOUD'"),
        ("-", "unknown severityNumber '-'"),
        (True, "severityNumber must be an integer, got True"),
        (2.0, "severityNumber must be an integer, got 2.0"),
        (-1, "severityNumber -1 is out of range"),
        ("-3", "severityNumber -3 is out of range"),
        ("X5", "unknown severityNumber 'X5'"),
        (2147483648, "severityNumber 2147483648 is out of range"),
    ],
)
def test_bad_severity_numbers_are_named(value: object, message: str) -> None:
    """An unknown name, a bool or float, or a number outside int32's positive range is an error."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        _one({"severityNumber": value})
    assert str(caught.value) == f"resourceLogs[0].scopeLogs[0].logRecords[0]: {message}"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"timeUnixNano": True}, "timeUnixNano must be an integer (nanoseconds), got True"),
        ({"timeUnixNano": 1.5}, "timeUnixNano must be an integer (nanoseconds), got 1.5"),
        ({"timeUnixNano": "soon"}, "timeUnixNano must be an integer (nanoseconds), got 'soon'"),
        ({"timeUnixNano": -1}, "timeUnixNano must not be negative, got -1"),
        (
            {"observedTimeUnixNano": "x"},
            "observedTimeUnixNano must be an integer (nanoseconds), got 'x'",
        ),
        ({"severityText": 3}, "severityText must be a string, got 3"),
        ({"eventName": 5}, "eventName must be a string, got 5"),
        ({"traceId": "xyz"}, "traceId 'xyz' is neither 32 hex digits nor base64 of 16 bytes"),
        ({"spanId": "xyz"}, "spanId 'xyz' is neither 16 hex digits nor base64 of 8 bytes"),
        ({"attributes": {"k": 1}}, "attributes must be a list, got dict"),
    ],
)
def test_bad_log_fields_are_named(record: dict[str, Any], message: str) -> None:
    """Each malformed field is an error naming the record and the field."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        _one(record)
    assert str(caught.value) == f"resourceLogs[0].scopeLogs[0].logRecords[0]: {message}"


def test_a_zero_time_is_not_negative() -> None:
    """0 and "0" are valid (absent) times, not errors."""
    assert _one({"timeUnixNano": 0, "observedTimeUnixNano": "0"}).time_ns == 0


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"resourceLogs": {}}, "'resourceLogs' must be a list, got dict"),
        ({"resource_logs": "x"}, "'resourceLogs' must be a list, got str"),
        ({"resourceLogs": [3]}, "'resourceLogs[0]' must be an object, got int"),
        ({"resourceLogs": [{"resource": []}]}, "'resourceLogs[0].resource' must be an object"),
        (
            {"resourceLogs": [{}, {"scopeLogs": {}}]},
            "'resourceLogs[1].scopeLogs' must be a list, got dict",
        ),
        (
            {"resourceLogs": [{"scope_logs": 1}]},
            "'resourceLogs[0].scopeLogs' must be a list, got int",
        ),
        ({"resourceLogs": [{"scopeLogs": [[]]}]}, "'resourceLogs[0].scopeLogs[0]' must be an"),
        (
            {"resourceLogs": [{"scopeLogs": [{"scope": 1}]}]},
            "'resourceLogs[0].scopeLogs[0].scope' must be an object, got int",
        ),
        (
            {"resourceLogs": [{"scopeLogs": [{"scope": {"name": 1}}]}]},
            "resourceLogs[0].scopeLogs[0].scope.name must be a string",
        ),
        (
            {"resourceLogs": [{"scopeLogs": [{"logRecords": {}}]}]},
            "'logRecords' must be a list, got dict",
        ),
        (
            {"resourceLogs": [{"scopeLogs": [{"log_records": 2}]}]},
            "'logRecords' must be a list, got int",
        ),
        (
            {"resourceLogs": [{"scopeLogs": [{}, {"logRecords": [{}, "r"]}]}]},
            "resourceLogs[0].scopeLogs[1].logRecords[1]: a log record must be an object, got str",
        ),
    ],
)
def test_bad_logs_requests_name_the_place(request_: dict[str, Any], message: str) -> None:
    """Every malformed level of a logs request is a ValueError naming where it is."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        logs_from_request(request_)
    assert str(caught.value).startswith(message), str(caught.value)


def test_requests_without_logs() -> None:
    """No `resourceLogs`: None (not a logs request); empty levels: no records."""
    assert logs_from_request({"resourceSpans": []}) is None
    assert logs_from_request({"resourceLogs": []}) == []
    assert logs_from_request({"resourceLogs": [{}, {"scopeLogs": [{}]}]}) == []


def test_event_name_falls_back_to_a_string_event_name_attribute() -> None:
    """`eventName` wins; else a non-empty string `event.name` attribute; else None."""

    def attr(value: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"key": "event.name", "value": value}]

    assert _one({"eventName": "a", "attributes": attr({"stringValue": "b"})}).event_name == "a"
    assert _one({"eventName": "", "attributes": attr({"stringValue": "b"})}).event_name == "b"
    assert _one({"attributes": attr({"stringValue": ""})}).event_name is None
    assert _one({"attributes": attr({"intValue": 3})}).event_name is None


# --- protobuf ------------------------------------------------------------------------------------


def _message(**fields: Any) -> LogsData:
    message = LogsData()
    group = message.resource_logs.add()
    group.resource.attributes.add(key="service.name").value.string_value = "s"
    scope_logs = group.scope_logs.add()
    scope_logs.scope.name = "lib"
    record = scope_logs.log_records.add(**fields)
    array = record.attributes.add(key="list").value.array_value
    array.values.add().int_value = 1
    array.values.add().string_value = "x"
    kv = record.attributes.add(key="map").value.kvlist_value.values.add(key="k")
    kv.value.bool_value = True
    record.attributes.add(key="empty")
    return message


def test_a_protobuf_log_record_decodes_every_field() -> None:
    """Ids as hex, times, severity, attributes (arrays as tuples), body (arrays as lists)."""
    message = _message(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex(SPAN),
        time_unix_nano=0,
        observed_time_unix_nano=44,
        severity_number=13,
        severity_text="WARN",
        event_name="gen_ai.choice",
    )
    body = message.resource_logs[0].scope_logs[0].log_records[0].body
    body.array_value.values.add().double_value = 0.5
    (log,) = logs_from_message(message)
    assert (log.trace_id, log.span_id) == (TRACE, SPAN)
    assert log.time_ns == 44
    assert (log.severity_number, log.severity_text) == (13, "WARN")
    assert log.event_name == "gen_ai.choice"
    assert dict(log.attributes) == {"list": (1, "x"), "map": {"k": True}, "empty": None}
    assert log.body == [0.5]
    assert dict(log.resource) == {"service.name": "s"}
    assert log.instrumentation_scope == "lib"


def test_a_bare_protobuf_log_record_has_the_defaults() -> None:
    """No ids, no body, no text: None; the time is `time_unix_nano` when set."""
    (log,) = logs_from_message(_message(time_unix_nano=7, observed_time_unix_nano=8))
    assert (log.trace_id, log.span_id, log.body, log.severity_text) == (None, None, None, None)
    assert (log.time_ns, log.severity_number, log.event_name) == (7, 0, None)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"trace_id": b"\x01" * 8}, "trace_id has 8 bytes, expected 16"),
        ({"span_id": b"\x01" * 16}, "span_id has 16 bytes, expected 8"),
    ],
)
def test_protobuf_ids_of_the_wrong_length_are_errors(fields: dict[str, Any], message: str) -> None:
    """An id of the wrong length is a ValueError naming the field and both lengths."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        logs_from_message(_message(**fields))
    assert str(caught.value) == message


def test_a_protobuf_log_record_and_its_json_decode_alike() -> None:
    """One record read as protobuf and as its OTLP/JSON mapping gives equal attributes, body and
    resource, nested arrays included (both readers decode AnyValues the same way)."""
    message = _message(time_unix_nano=5)
    record = message.resource_logs[0].scope_logs[0].log_records[0]
    nested = record.attributes.add(key="nested").value.array_value.values.add().array_value
    nested.values.add().int_value = 2
    inner = record.body.kvlist_value.values.add(key="rows").value.array_value.values.add()
    inner.array_value.values.add().string_value = "a"
    (from_proto,) = logs_from_message(message)
    (from_json,) = logs_from_request(MessageToDict(message))
    assert dict(from_proto.attributes) == dict(from_json.attributes)
    assert from_proto.attributes["nested"] == ((2,),)
    assert from_proto.body == from_json.body == {"rows": [["a"]]}
    assert dict(from_proto.resource) == dict(from_json.resource)
