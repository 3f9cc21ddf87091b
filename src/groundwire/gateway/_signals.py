"""The three OTLP signals: their paths, protobuf messages, and how to read and count a request.

OTLP/HTTP bodies come as binary protobuf (`application/x-protobuf`) or as OTLP/JSON
(`application/json`: ids in hex, enums as numbers, 64-bit integers possibly as strings). Both
decode to the same protobuf message, which is what gets counted, scored and (for a gRPC
downstream) forwarded. A body that does not decode is a `MalformedRequestError` whose message says
why, without echoing the body (it may hold user content).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

__all__ = [
    "CONTENT_JSON",
    "CONTENT_PROTOBUF",
    "SIGNALS",
    "MalformedRequestError",
    "Signal",
    "decode",
]

CONTENT_PROTOBUF: Final = "application/x-protobuf"
CONTENT_JSON: Final = "application/json"

_ID_KEYS: Final = frozenset({"traceId", "spanId", "parentSpanId", "trace_id", "span_id"})
_ID_SIZES: Final = {32, 16}


class MalformedRequestError(ValueError):
    """A request body that is not a valid OTLP message of its signal (answered with 400)."""


def _count_spans(message: Any) -> int:
    return sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)


def _count_points(message: Any) -> int:
    total = 0
    for resource in message.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                kind = metric.WhichOneof("data")
                if kind is not None:
                    total += len(getattr(metric, kind).data_points)
    return total


def _count_logs(message: Any) -> int:
    return sum(len(s.log_records) for r in message.resource_logs for s in r.scope_logs)


@dataclass(frozen=True, slots=True)
class Signal:
    """One OTLP signal: where it is posted and what it decodes to."""

    name: str
    """`traces`, `metrics` or `logs` (also the metric attribute value)."""
    path: str
    """The OTLP/HTTP path, e.g. `/v1/traces`."""
    request_type: Any
    response_type: Any
    count: Callable[[Any], int]
    """Items in a decoded request: spans, metric data points or log records."""
    rejected_field: str
    """The partial-success field of the response (`rejected_spans`, ...)."""
    grpc_method: str
    """The full gRPC method name of the signal's Export call."""


SIGNALS: Final = {
    signal.name: signal
    for signal in (
        Signal(
            "traces",
            "/v1/traces",
            trace_service_pb2.ExportTraceServiceRequest,
            trace_service_pb2.ExportTraceServiceResponse,
            _count_spans,
            "rejected_spans",
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
        ),
        Signal(
            "metrics",
            "/v1/metrics",
            metrics_service_pb2.ExportMetricsServiceRequest,
            metrics_service_pb2.ExportMetricsServiceResponse,
            _count_points,
            "rejected_data_points",
            "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        ),
        Signal(
            "logs",
            "/v1/logs",
            logs_service_pb2.ExportLogsServiceRequest,
            logs_service_pb2.ExportLogsServiceResponse,
            _count_logs,
            "rejected_log_records",
            "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
        ),
    )
}
"""The signals by name."""


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON carries ids in hex where protobuf's JSON mapping expects base64: convert them."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                if value and len(value) not in _ID_SIZES:
                    raise MalformedRequestError(
                        f"{key} must be 32 or 16 hex digits, got {len(value)}"
                    )
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")
                except ValueError:
                    raise MalformedRequestError(f"{key} is not hexadecimal") from None
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)
    return node


def decode(signal: Signal, body: bytes, content_type: str) -> Any:
    """The request message in `body`; MalformedRequestError (a clear message) when it is not one."""
    message = signal.request_type()
    if content_type == CONTENT_PROTOBUF:
        try:
            message.ParseFromString(body)
        except DecodeError as error:
            raise MalformedRequestError(
                f"not a valid OTLP protobuf {signal.name} request: {error}"
            ) from None
        return message
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MalformedRequestError(f"not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise MalformedRequestError(f"expected a JSON object, got {type(data).__name__}")
    try:
        json_format.ParseDict(_hex_ids_to_base64(data), message, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, ValueError, TypeError) as error:
        text = str(error).split("\n", 1)[0][:300]
        raise MalformedRequestError(
            f"not a valid OTLP/JSON {signal.name} request: {text}"
        ) from None
    return message
