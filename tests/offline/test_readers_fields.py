"""Readers, field by field: ids, AnyValues, OTLP/JSON spans, Jaeger spans and bad-record reports
decode to exact values, and every wrong field gives an error naming it."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from groundwire.offline.readers import (
    BadRecordError,
    Problems,
    ReadStats,
    span_id_hex,
    spans_from_jaeger_trace,
    spans_from_request,
    trace_id_hex,
)
from groundwire.offline.readers._otlp_values import any_value, attributes, get

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"
PARENT = "00f067aa0ba902b7"


# --- ids -----------------------------------------------------------------------------------------


def test_ids_from_hex_in_any_case_and_short_trace_ids_padded() -> None:
    """Hex ids come back lower-case; a 16-digit (64-bit) trace id is left-padded to 32 digits."""
    assert trace_id_hex(TRACE.upper()) == TRACE
    assert trace_id_hex("665B3CC06E48F122") == "0000000000000000665b3cc06e48f122"
    assert span_id_hex(SPAN.upper()) == SPAN


def test_ids_from_base64() -> None:
    """Base64 ids (protobuf's JSON mapping) decode to the same hex."""
    import base64

    assert trace_id_hex(base64.b64encode(bytes.fromhex(TRACE)).decode()) == TRACE
    assert span_id_hex(base64.b64encode(bytes.fromhex(SPAN)).decode()) == SPAN


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "traceId is missing or not a string: None"),
        ("", "traceId is missing or not a string: ''"),
        (12, "traceId is missing or not a string: 12"),
        ("abc", "traceId 'abc' is neither 32 hex digits nor base64 of 16 bytes"),
        ("0af7651916cd43dd8448eb211c80319", "neither 32 hex digits nor base64 of 16 bytes"),
        ("0af7651916cd43dd8448eb211c80319z", "neither 32 hex digits"),
        ("AAAAAAAAAAA=", "neither 32 hex digits nor base64 of 16 bytes"),
    ],
)
def test_bad_trace_ids_name_the_field(value: object, message: str) -> None:
    """A missing, non-string, wrong-length or non-hex non-base64 trace id is a ValueError that
    names the field and says what was expected."""
    with pytest.raises(ValueError, match=r"^traceId ") as caught:
        trace_id_hex(value)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "parentSpanId is missing or not a string: None"),
        ("", "parentSpanId is missing or not a string: ''"),
        (b"12345678", "parentSpanId is missing or not a string: b'12345678'"),
        ("b7ad6b716920333", "neither 16 hex digits nor base64 of 8 bytes"),
        ("b7ad6b716920333g", "neither 16 hex digits nor base64 of 8 bytes"),
        ("AAAAAAAAAAAAAAAAAAAAAA==", "neither 16 hex digits nor base64 of 8 bytes"),
        ("AAAA AAAAAA=", "neither 16 hex digits nor base64 of 8 bytes"),
        ("AAAAAA!AAAAA=", "neither 16 hex digits nor base64 of 8 bytes"),
    ],
)
def test_bad_span_ids_name_the_field(value: object, message: str) -> None:
    """The same for span ids, with the caller's field name."""
    with pytest.raises(ValueError, match=r"^parentSpanId ") as caught:
        span_id_hex(value, "parentSpanId")
    assert message in str(caught.value)


def test_a_32_digit_span_id_and_a_16_byte_base64_trace_id_in_the_span_slot_are_rejected() -> None:
    """Lengths are checked per kind: 32 hex digits are no span id, 16 are a (short) trace id."""
    with pytest.raises(ValueError, match="spanId"):
        span_id_hex(TRACE)
    assert trace_id_hex(SPAN) == "0" * 16 + SPAN


# --- bad-record reporting ------------------------------------------------------------------------


def test_problems_prints_counts_and_keeps_the_first_twenty() -> None:
    """Each report is printed with the `groundwire:` prefix, counted, and the first 20 kept."""
    stream = io.StringIO()
    problems = Problems(stream=stream)
    for index in range(25):
        problems.report(f"f.jsonl:{index}", "bad")
    problems.report("f.jsonl", "cut", skipped=False)
    assert problems.stats.bad_records == 26
    assert problems.stats.bad_examples == [f"f.jsonl:{i}: skipped: bad" for i in range(20)]
    lines = stream.getvalue().splitlines()
    assert lines[0] == "groundwire: f.jsonl:0: skipped: bad"
    assert lines[-1] == "groundwire: f.jsonl: cut"
    assert len(lines) == 26


def test_problems_routes_to_on_report_and_defaults_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`on_report` gets the message (nothing printed); without a stream, stderr gets it."""
    got: list[str] = []
    Problems(on_report=got.append).report("a:1", "x")
    assert got == ["a:1: skipped: x"]
    assert capsys.readouterr().err == ""
    Problems().report("b:2", "y")
    assert capsys.readouterr().err == "groundwire: b:2: skipped: y\n"


def test_strict_problems_raise_with_where_and_message() -> None:
    """Strict mode raises BadRecordError carrying the place and the message, still counted."""
    problems = Problems(strict=True)
    with pytest.raises(BadRecordError) as caught:
        problems.report("f.pb@12 (message 2)", "not protobuf")
    assert caught.value.where == "f.pb@12 (message 2)"
    assert caught.value.message == "not protobuf"
    assert str(caught.value) == "f.pb@12 (message 2): not protobuf"
    assert problems.stats.bad_records == 1
    assert problems.stats.bad_examples == []


def test_damaged_counts_a_file_a_record_and_a_bad_record() -> None:
    """`damaged` is one damaged file, one record and one bad record, reported without "skipped"."""
    stream = io.StringIO()
    problems = Problems(stream=stream)
    problems.damaged("t.jsonl.gz", "gzip stream ends early")
    stats = problems.stats
    assert (stats.damaged_files, stats.records, stats.bad_records) == (1, 1, 1)
    assert stream.getvalue() == "groundwire: t.jsonl.gz: gzip stream ends early\n"


def test_read_stats_defaults_and_bytes_read() -> None:
    """Counters start at zero and `bytes_read` adds finished files to the current position."""
    stats = ReadStats()
    assert (stats.files, stats.records, stats.spans, stats.bad_records) == (0, 0, 0, 0)
    assert (stats.other_records, stats.log_records, stats.damaged_files) == (0, 0, 0)
    assert stats.bytes_read == 0
    stats.bytes_done, stats.file_position = 100, 7
    assert stats.bytes_read == 107
    assert Problems().max_record_bytes == 256 << 20
    assert Problems().strict is False


# --- OTLP/JSON AnyValues -------------------------------------------------------------------------


def test_any_values_of_every_kind_in_both_spellings() -> None:
    """Every AnyValue kind, camelCase or snake_case, decodes to the Python value OTel uses."""
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"stringValue": "s"}, "s"),
        ({"intValue": "12"}, 12),
        ({"intValue": 7}, 7),
        ({"doubleValue": "2.5"}, 2.5),
        ({"boolValue": True}, True),
        ({"bytesValue": "AAE="}, b"\x00\x01"),
        ({"arrayValue": {"values": [{"intValue": 1}, {"stringValue": "a"}]}}, (1, "a")),
        ({"arrayValue": {}}, ()),
        ({"arrayValue": None}, ()),
        ({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}, {"k": False}),
        ({"kvlistValue": None}, {}),
        ({}, None),
        ({"unknownValue": 1}, None),
    ]
    for value, want in cases:
        got = any_value(value)
        assert got == want and type(got) is type(want), value
        snake = {
            "".join("_" + c.lower() if c.isupper() else c for c in key): item
            for key, item in value.items()
        }
        assert any_value(snake) == want, snake


def test_any_value_and_attributes_reject_wrong_shapes() -> None:
    """A non-object value and a non-list attribute list are errors that say what they got."""
    with pytest.raises(ValueError, match=r"^attribute value must be an object, got 3$"):
        any_value(3)
    with pytest.raises(ValueError, match=r"^attributes must be a list, got dict$"):
        attributes({"key": "a"})
    assert attributes(None) == {} and attributes([]) == {}
    assert attributes([{"key": "a"}, {"key": "b", "value": None}]) == {"a": None, "b": None}


def test_attributes_fast_path_gives_any_values_answers() -> None:
    """`attributes` takes plain `stringValue`s without `any_value`; what it gives must not differ:
    a value naming two kinds (malformed) keeps its first known kind, as `any_value` does, alone
    or beside plain strings, and a non-object value is the same error."""
    two_kinds = {"key": "k", "value": {"intValue": "7", "stringValue": "a"}}
    plain = {"key": "p", "value": {"stringValue": "s"}}
    assert any_value(two_kinds["value"]) == 7
    assert attributes([two_kinds]) == {"k": 7}
    assert attributes([plain, two_kinds]) == {"p": "s", "k": 7}
    for pairs in ([{"key": "k", "value": ["stringValue"]}], [plain, {"key": "k", "value": [1]}]):
        with pytest.raises(ValueError, match=r"^attribute value must be an object, got \["):
            attributes(pairs)


def test_get_prefers_camel_case_then_snake_case_then_default() -> None:
    """Protobuf JSON allows both spellings; camelCase wins, a null one falls back."""
    assert get({"traceId": "a", "trace_id": "b"}, "traceId", "trace_id") == "a"
    assert get({"traceId": None, "trace_id": "b"}, "traceId", "trace_id") == "b"
    assert get({}, "traceId", "trace_id", "d") == "d"
    assert get({}, "traceId", "trace_id") is None


# --- OTLP/JSON spans -----------------------------------------------------------------------------


def _request(span: dict[str, Any], **group: Any) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}], **group}]}


def test_an_otlp_json_span_decodes_every_field() -> None:
    """Ids, times (string or number), attributes, status, resource, scope and remote parent."""
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "retrieve",
        "startTimeUnixNano": "1700000000000000001",
        "endTimeUnixNano": 1700000000000000009,
        "attributes": [{"key": "k", "value": {"intValue": "3"}}],
        "status": {"code": 2},
        "flags": 0x300,
    }
    request = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]
                },
                "scopeSpans": [{"scope": {"name": "lib"}, "spans": [span]}],
            }
        ]
    }
    (record,) = spans_from_request(request) or []
    assert record.trace_id == TRACE and record.span_id == SPAN
    assert record.parent_span_id == PARENT
    assert record.name == "retrieve"
    assert record.start_time_ns == 1700000000000000001
    assert record.end_time_ns == 1700000000000000009
    assert dict(record.attributes) == {"k": 3}
    assert record.status_code == "ERROR"
    assert dict(record.resource) == {"service.name": "s"}
    assert record.instrumentation_scope == "lib"
    assert record.parent_is_remote is True


def test_otlp_json_span_defaults_and_snake_case_keys() -> None:
    """snake_case keys read; absent name, times, status, parent and scope give the defaults."""
    span = {"trace_id": TRACE, "span_id": SPAN, "parent_span_id": ""}
    (record,) = spans_from_request({"resource_spans": [{"scope_spans": [{"spans": [span]}]}]}) or []
    assert record.parent_span_id is None
    assert record.name == ""
    assert record.start_time_ns == 0 and record.end_time_ns is None
    assert record.status_code == "UNSET" and record.parent_is_remote is False
    assert record.instrumentation_scope is None and dict(record.resource) == {}
    (ended,) = spans_from_request(_request({**span, "end_time_unix_nano": "", "name": 5})) or []
    assert ended.end_time_ns == 0 and ended.name == "5"


@pytest.mark.parametrize(
    ("flags", "remote"), [(0x100, False), (0x200, False), (0x300, True), (0x301, True), (0, False)]
)
def test_parent_is_remote_needs_both_flag_bits(flags: int, remote: bool) -> None:
    """W3C/OTLP flags: the parent is remote only when `HAS_IS_REMOTE` and `IS_REMOTE` are set."""
    (record,) = spans_from_request(_request({"traceId": TRACE, "spanId": SPAN, "flags": flags}))  # type: ignore[misc]
    assert record.parent_is_remote is remote


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (0, "UNSET"),
        (1, "OK"),
        (2, "ERROR"),
        ("STATUS_CODE_UNSET", "UNSET"),
        ("STATUS_CODE_OK", "OK"),
        ("STATUS_CODE_ERROR", "ERROR"),
    ],
)
def test_status_codes_as_numbers_or_names(code: object, status: str) -> None:
    """Status codes read as enum numbers or enum names."""
    span = {"traceId": TRACE, "spanId": SPAN, "status": {"code": code}}
    (record,) = spans_from_request(_request(span)) or []
    assert record.status_code == status


def test_legacy_instrumentation_library_spans_read() -> None:
    """Pre-1.0 OTLP (`instrumentationLibrarySpans`, `instrumentationLibrary`) still reads."""
    for group_key, scope_key in (
        ("instrumentationLibrarySpans", "instrumentationLibrary"),
        ("instrumentation_library_spans", "instrumentationLibrary"),
    ):
        request = {
            "resourceSpans": [
                {
                    group_key: [
                        {scope_key: {"name": "old"}, "spans": [{"traceId": TRACE, "spanId": SPAN}]}
                    ]
                }
            ]
        }
        (record,) = spans_from_request(request) or []
        assert record.instrumentation_scope == "old"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ([], "expected a JSON object, got list"),
        ({}, "not an OTLP traces request: no 'resourceSpans' key"),
        ({"resourceSpans": {}}, "'resourceSpans' must be a list"),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "status": {"code": 7}}),
            "resourceSpans[0].scopeSpans[0].spans[0]: unknown status code 7",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "startTimeUnixNano": "soon"}),
            "spans[0]: start must be an integer (nanoseconds), got 'soon'",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "endTimeUnixNano": [1]}),
            "spans[0]: endTimeUnixNano must be an integer (nanoseconds), got [1]",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "parentSpanId": "xy"}),
            "spans[0]: parentSpanId 'xy' is neither",
        ),
        (
            {"resourceSpans": [{"resuorce": {}}]},
            "resourceSpans[0] holds no spans but unknown keys ['resuorce']",
        ),
        (
            {"resourceSpans": [{"scopeSpans": [{"scope": {}, "spanz": []}]}]},
            "resourceSpans[0].scopeSpans[0] holds no spans but unknown keys ['spanz']",
        ),
    ],
)
def test_bad_otlp_json_requests_name_the_field(request_: object, message: str) -> None:
    """Every malformed request is a ValueError naming the offending place."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        spans_from_request(request_)
    assert message in str(caught.value)


def test_known_keys_without_spans_and_other_signals_are_not_errors() -> None:
    """Empty groups with only OTLP's own keys give no spans; metrics and logs requests give None."""
    assert spans_from_request({"resourceSpans": []}) == []
    known_group = {"resource": {}, "schemaUrl": "u", "schema_url": "u", "scopeSpans": []}
    assert spans_from_request({"resourceSpans": [known_group]}) == []
    scope = {"scope": {}, "schemaUrl": "u", "schema_url": "u", "spans": []}
    legacy: dict[str, Any] = {"instrumentationLibrary": {}, "instrumentation_library": {}}
    group = {"scopeSpans": [scope, legacy]}
    assert spans_from_request({"resourceSpans": [group]}) == []
    for key in ("resourceMetrics", "resource_metrics", "resourceLogs", "resource_logs"):
        assert spans_from_request({key: []}) is None
    with pytest.raises(ValueError, match="no 'resourceSpans' key"):
        spans_from_request({"resourceSpans": None, "other": []})


# --- Jaeger spans --------------------------------------------------------------------------------


def _trace(span: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {"traceID": TRACE, "spanID": SPAN, "operationName": "op"}
    return {"traceID": TRACE, "spans": [{**base, **span}], **extra}


def test_jaeger_tags_of_every_type() -> None:
    """Jaeger's typed tags decode to their declared types (strings kept, other JSON dumped)."""
    tags = [
        {"key": "b1", "type": "bool", "value": True},
        {"key": "b2", "type": "BOOL", "value": "true"},
        {"key": "b3", "type": "bool", "value": "False"},
        {"key": "i", "type": "int64", "value": "42"},
        {"key": "f", "type": "float64", "value": "0.5"},
        {"key": "bin", "type": "binary", "value": "AAE="},
        {"key": "raw", "type": "binary", "value": 5},
        {"key": "s", "type": "string", "value": "text"},
        {"key": "j", "type": "string", "value": [1, "a"]},
        {"key": "untyped", "value": "u"},
    ]
    (record,) = spans_from_jaeger_trace(_trace({"tags": tags}))
    assert dict(record.attributes) == {
        "b1": True,
        "b2": True,
        "b3": False,
        "i": 42,
        "f": 0.5,
        "bin": b"\x00\x01",
        "raw": 5,
        "s": "text",
        "j": '[1, "a"]',
        "untyped": "u",
    }
    assert type(record.attributes["i"]) is int and type(record.attributes["f"]) is float


@pytest.mark.parametrize(
    ("tags", "status"),
    [
        ([{"key": "otel.status_code", "value": "OK"}], "OK"),
        ([{"key": "otel.status_code", "value": "error"}], "ERROR"),
        ([{"key": "otel.status_code", "value": "UNSET"}], "UNSET"),
        ([{"key": "error", "type": "bool", "value": True}], "ERROR"),
        ([{"key": "error", "type": "string", "value": "true"}], "UNSET"),
        ([{"key": "error", "type": "bool", "value": False}], "UNSET"),
        (
            [
                {"key": "otel.status_code", "value": "OK"},
                {"key": "error", "type": "bool", "value": True},
            ],
            "OK",
        ),
        ([], "UNSET"),
    ],
)
def test_jaeger_status_from_the_otel_tags(tags: list[dict[str, Any]], status: str) -> None:
    """`otel.status_code` gives the status; else a boolean `error` tag means ERROR."""
    (record,) = spans_from_jaeger_trace(_trace({"tags": tags}))
    assert record.status_code == status


def test_jaeger_bookkeeping_tags_are_dropped_and_the_scope_kept() -> None:
    """OTel's Jaeger mapping tags (status, kind, scope) are not span attributes; the scope name
    (`otel.scope.name`, else the legacy `otel.library.name`) becomes the scope."""
    names = (
        "otel.status_code",
        "otel.status_description",
        "span.kind",
        "error",
        "internal.span.format",
        "otel.scope.version",
        "otel.library.version",
        "otel.library.name",
    )
    tags = [{"key": name, "value": "x"} for name in names] + [{"key": "kept", "value": "y"}]
    (record,) = spans_from_jaeger_trace(_trace({"tags": tags}))
    assert dict(record.attributes) == {"kept": "y"}
    assert record.instrumentation_scope == "x"
    both = [{"key": "otel.library.name", "value": "old"}, {"key": "otel.scope.name", "value": 3}]
    (record,) = spans_from_jaeger_trace(_trace({"tags": both}))
    assert record.instrumentation_scope == "3" and dict(record.attributes) == {}
    (bare,) = spans_from_jaeger_trace(_trace({}))
    assert bare.instrumentation_scope is None


def test_jaeger_parents_child_of_before_follows_from_same_trace_only() -> None:
    """CHILD_OF wins over FOLLOWS_FROM whatever the order; other traces' references are not
    parents; a missing refType is CHILD_OF; the legacy `parentSpanID` is used last."""
    other = "1" * 32
    follows = {"refType": "FOLLOWS_FROM", "traceID": TRACE, "spanID": "1" * 16}
    child = {"refType": "CHILD_OF", "traceID": TRACE, "spanID": PARENT}
    foreign = {"refType": "CHILD_OF", "traceID": other, "spanID": "2" * 16}
    cases: list[tuple[dict[str, Any], str | None]] = [
        ({"references": [follows, child]}, PARENT),
        ({"references": [foreign, follows]}, "1" * 16),
        ({"references": [foreign]}, None),
        ({"references": [{"spanID": PARENT}]}, PARENT),
        ({"references": [], "parentSpanID": PARENT.upper()}, PARENT),
        ({"parentSpanID": "0000000000000000"}, None),
        ({"parentSpanID": "0"}, None),
        ({"parentSpanID": ""}, None),
        ({"references": [foreign], "parentSpanID": "3" * 16}, "3" * 16),
    ]
    for span, parent in cases:
        (record,) = spans_from_jaeger_trace(_trace(span))
        assert record.parent_span_id == parent, span


def test_jaeger_times_resources_and_ids() -> None:
    """Microsecond start and duration become nanoseconds; the process (by id or inline) gives
    the resource; a span without its own traceID uses the trace's."""
    processes = {"p1": {"serviceName": "svc", "tags": [{"key": "host", "value": "h"}]}}
    trace = {
        "traceID": TRACE.upper(),
        "spans": [
            {"spanID": SPAN, "startTime": 10, "duration": 3, "processID": "p1"},
            {"spanID": PARENT, "process": {"serviceName": "", "tags": []}},
            {"spanID": "1" * 16, "processID": "nope", "operationName": "n"},
        ],
        "processes": processes,
    }
    first, second, third = spans_from_jaeger_trace(trace)
    assert first.trace_id == TRACE and first.span_id == SPAN
    assert (first.start_time_ns, first.end_time_ns) == (10_000, 13_000)
    assert dict(first.resource) == {"host": "h", "service.name": "svc"}
    assert first.name == ""
    assert dict(second.resource) == {}
    assert (second.start_time_ns, second.end_time_ns) == (0, 0)
    assert dict(third.resource) == {} and third.name == "n"


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ([], "a trace must be a JSON object, got list"),
        ({"traceID": TRACE}, "a trace must have a 'spans' list"),
        ({"spans": {}}, "a trace must have a 'spans' list"),
        (_trace({"tags": {"k": 1}}), "spans[0]: tags must be a list, got dict"),
        (_trace({"spanID": "zz"}), "spans[0]: spanID 'zz' is neither"),
        (_trace({"traceID": None}, traceID=None), "spans[0]: traceID is missing"),
        (_trace({"startTime": "x"}), "spans[0]: "),
        (_trace({"references": [{"traceID": TRACE, "spanID": "q"}]}), "references.spanID 'q'"),
        (_trace({"references": [{"traceID": "q", "spanID": SPAN}]}), "references.traceID 'q'"),
        (_trace({"parentSpanID": "12"}), "spans[0]: parentSpanID '12' is neither"),
        (_trace({"tags": [{"key": "i", "type": "int64", "value": "x"}]}), "spans[0]: "),
    ],
)
def test_bad_jaeger_traces_name_the_span(trace: object, message: str) -> None:
    """A malformed trace or span is a ValueError naming the span and field."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        spans_from_jaeger_trace(trace)
    assert message in str(caught.value)
