"""OTLP log records (log-based events) from OTLP/JSON requests and protobuf messages.

Since OTEP 4430 an event is a log record with an event name, correlated to its span by trace and
span id (`gen_ai.evaluation.result`, GenAI message content logged apart from the span). The
Collector's file exporter writes them beside the spans, one `resourceLogs` request per line (or
one `LogsData` message per protobuf frame). Both decode to `LogRecordData`, the way spans decode
to `SpanRecord`: AnyValue bodies as plain Python values (arrays as lists, kvlists as dicts), the
event name from `eventName` (OTLP 1.5+) or else the `event.name` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from groundwire._otlp_any import proto_attributes, proto_value, scoped_records
from groundwire.assembly import LogRecordData
from groundwire.offline.readers._common import MALFORMED, span_id_hex, trace_id_hex
from groundwire.offline.readers._otlp_values import any_value, attributes, get, nanos

__all__ = ["logs_from_message", "logs_from_request"]

_EVENT_NAME_ATTRIBUTE: Final = "event.name"
_SEVERITY_PREFIX: Final = "SEVERITY_NUMBER_"
_SEVERITY_NAMES: Final = {
    name: number
    for number, name in enumerate(
        ["UNSPECIFIED"]
        + [
            f"{level}{suffix}"
            for level in ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
            for suffix in ("", "2", "3", "4")
        ]
    )
}
"""`SeverityNumber` names (without the prefix) -> numbers: UNSPECIFIED 0, TRACE 1 .. FATAL4 24."""
_MAX_SEVERITY: Final = (1 << 31) - 1


def _plain(value: Any) -> Any:
    """An attribute-style value with arrays as lists (a log body is JSON-like data)."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _severity(value: Any) -> int:
    """A severity number given as an integer or an enum name (protobuf JSON allows both)."""
    if value is None or value == "":
        return 0
    if isinstance(value, str) and not value.lstrip("-").isdecimal():
        number = _SEVERITY_NAMES.get(value.removeprefix(_SEVERITY_PREFIX))
        if number is None:
            raise ValueError(f"unknown severityNumber {value!r}")
        return number
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"severityNumber must be an integer, got {value!r}")
    number = int(value)
    if not 0 <= number <= _MAX_SEVERITY:
        raise ValueError(f"severityNumber {number} is out of range")
    return number


def _event_name(explicit: Any, attrs: Mapping[str, Any]) -> str | None:
    """`eventName` when set, else a string `event.name` attribute, else None."""
    if explicit:
        if not isinstance(explicit, str):
            raise ValueError(f"eventName must be a string, got {explicit!r}")
        return explicit
    fallback = attrs.get(_EVENT_NAME_ATTRIBUTE)
    return fallback if isinstance(fallback, str) and fallback else None


def _record(
    record: Mapping[str, Any], resource: Mapping[str, Any], scope: str | None
) -> LogRecordData:
    """One OTLP/JSON log record; errors say which field is wrong."""
    if not isinstance(record, Mapping):
        raise ValueError(f"a log record must be an object, got {type(record).__name__}")
    trace_id = get(record, "traceId", "trace_id")
    span_id = get(record, "spanId", "span_id")
    attrs = attributes(record.get("attributes"))
    body = record.get("body")
    severity_text = get(record, "severityText", "severity_text")
    if severity_text is not None and not isinstance(severity_text, str):
        raise ValueError(f"severityText must be a string, got {severity_text!r}")
    time_ns = nanos(get(record, "timeUnixNano", "time_unix_nano"), "timeUnixNano")
    if not time_ns:
        time_ns = nanos(
            get(record, "observedTimeUnixNano", "observed_time_unix_nano"),
            "observedTimeUnixNano",
        )
    return LogRecordData(
        event_name=_event_name(get(record, "eventName", "event_name"), attrs),
        trace_id=trace_id_hex(trace_id) if trace_id else None,
        span_id=span_id_hex(span_id) if span_id else None,
        time_ns=time_ns,
        severity_number=_severity(get(record, "severityNumber", "severity_number")),
        severity_text=severity_text or None,
        attributes=MappingProxyType(attrs),
        body=None if body is None else _plain(any_value(body)),
        resource=resource,
        instrumentation_scope=scope,
    )


def _list(value: Any, what: str) -> list[Any]:
    """`value` when it is a list (or absent: empty); ValueError naming the field otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"'{what}' must be a list, got {type(value).__name__}")
    return value


def _object(value: Any, what: str) -> Mapping[str, Any]:
    """`value` when it is an object (or absent: empty); ValueError naming the field otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"'{what}' must be an object, got {type(value).__name__}")
    return value


def logs_from_request(data: Mapping[str, Any]) -> list[LogRecordData] | None:
    """The log records of one decoded OTLP/JSON logs request; None when it holds no `resourceLogs`.

    Raises ValueError (naming the offending record) when it is not a valid logs request.
    """
    resource_logs = get(data, "resourceLogs", "resource_logs")
    if resource_logs is None:
        return None
    records: list[LogRecordData] = []
    for r_index, group in enumerate(_list(resource_logs, "resourceLogs")):
        at = f"resourceLogs[{r_index}]"
        group = _object(group, at)
        resource_node = _object(group.get("resource"), f"{at}.resource")
        resource = MappingProxyType(attributes(resource_node.get("attributes")))
        scopes = _list(get(group, "scopeLogs", "scope_logs"), f"{at}.scopeLogs")
        for s_index, scope_logs in enumerate(scopes):
            scope_at = f"{at}.scopeLogs[{s_index}]"
            scope_logs = _object(scope_logs, scope_at)
            scope = _object(scope_logs.get("scope"), f"{scope_at}.scope")
            scope_name = scope.get("name") or None
            if scope_name is not None and not isinstance(scope_name, str):
                raise ValueError(f"{scope_at}.scope.name must be a string")
            log_records = _list(get(scope_logs, "logRecords", "log_records"), "logRecords")
            for index, record in enumerate(log_records):
                try:
                    records.append(_record(record, resource, scope_name))
                except MALFORMED as error:
                    raise ValueError(f"{scope_at}.logRecords[{index}]: {error}") from None
    return records


def _optional_id(raw: bytes, size: int, what: str) -> str | None:
    """A protobuf id of `size` bytes as hex, None when empty; ValueError for another length."""
    if not raw:
        return None
    if len(raw) != size:
        raise ValueError(f"{what} has {len(raw)} bytes, expected {size}")
    return raw.hex()


def logs_from_message(message: Any) -> list[LogRecordData]:
    """The log records of one decoded `LogsData` / `ExportLogsServiceRequest`."""
    records: list[LogRecordData] = []
    groups = message.resource_logs
    for resource, scope, record in scoped_records(groups, "scope_logs", "log_records"):
        attrs = proto_attributes(record.attributes)
        records.append(
            LogRecordData(
                event_name=_event_name(record.event_name, attrs),
                trace_id=_optional_id(record.trace_id, 16, "trace_id"),
                span_id=_optional_id(record.span_id, 8, "span_id"),
                time_ns=record.time_unix_nano or record.observed_time_unix_nano,
                severity_number=record.severity_number,
                severity_text=record.severity_text or None,
                attributes=MappingProxyType(attrs),
                body=_plain(proto_value(record.body)) if record.HasField("body") else None,
                resource=resource,
                instrumentation_scope=scope,
            )
        )
    return records
