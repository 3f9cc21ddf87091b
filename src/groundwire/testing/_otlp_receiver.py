"""Real OTLP receivers on loopback that decode what crossed the wire, for assertions in tests.

`OtlpHttpReceiver` is an HTTP server accepting OTLP/HTTP protobuf posts on `/v1/traces`,
`/v1/metrics` and `/v1/logs` (gzip or deflate bodies too); `OtlpGrpcReceiver` is a `grpc` server
implementing the OTLP trace, metrics and logs services. Both decode with `opentelemetry-proto`
into plain frozen records (`ReceivedSpan`, `ReceivedMetricPoint`, `ReceivedLogRecord`) with hex
ids and Python attribute values. The HTTP one can play a slow or failing collector (`delay_s`,
`status`).

```python
with OtlpHttpReceiver() as receiver:
    exporter = OTLPSpanExporter(endpoint=receiver.traces_url)
    ...
    receiver.wait_for(lambda r: len(r.spans()) >= 2)
```
"""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Mapping
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import grpc  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1 import (
    logs_service_pb2,
    logs_service_pb2_grpc,
)
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import (
    trace_service_pb2,
    trace_service_pb2_grpc,
)

__all__ = [
    "OtlpGrpcReceiver",
    "OtlpHttpReceiver",
    "ReceivedEvent",
    "ReceivedLink",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedSpan",
]


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue as a Python value."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(_any_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return getattr(value, kind)


def _attributes(pairs: Iterable[Any]) -> dict[str, Any]:
    """OTLP key-values as a dict."""
    return {pair.key: _any_value(pair.value) for pair in pairs}


def _hex(raw: bytes) -> str | None:
    """Bytes as hex, or None when empty."""
    return raw.hex() if raw else None


@dataclass(frozen=True, slots=True)
class ReceivedEvent:
    """A span event as received."""

    name: str
    attributes: Mapping[str, Any]
    time_unix_nano: int


@dataclass(frozen=True, slots=True)
class ReceivedLink:
    """A span link as received (hex ids)."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """A span as received: hex ids, decoded attributes, its resource and scope."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: Mapping[str, Any]
    events: tuple[ReceivedEvent, ...]
    links: tuple[ReceivedLink, ...]
    status_code: int
    resource: Mapping[str, Any]
    scope: str


@dataclass(frozen=True, slots=True)
class ReceivedMetricPoint:
    """One data point of a received metric; histogram fields are empty for sums and gauges."""

    name: str
    unit: str
    kind: str
    """`sum`, `gauge` or `histogram`."""
    attributes: Mapping[str, Any]
    value: float | None
    count: int | None
    sum: float | None
    bucket_counts: tuple[int, ...]
    explicit_bounds: tuple[float, ...]
    resource: Mapping[str, Any]
    scope: str


@dataclass(frozen=True, slots=True)
class ReceivedLogRecord:
    """A log record (a log-based event when `event_name` is set) as received: hex ids."""

    event_name: str
    """OTLP `event_name`; empty for a plain log."""
    trace_id: str | None
    span_id: str | None
    severity_number: int
    severity_text: str
    attributes: Mapping[str, Any]
    body: Any
    """The decoded AnyValue (None when absent)."""
    time_unix_nano: int
    resource: Mapping[str, Any]
    scope: str


def _link(link: Any) -> ReceivedLink:
    """A decoded span link."""
    return ReceivedLink(link.trace_id.hex(), link.span_id.hex(), _attributes(link.attributes))


def decode_spans(request: Any) -> list[ReceivedSpan]:
    """The spans of an `ExportTraceServiceRequest`."""
    spans: list[ReceivedSpan] = []
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=_hex(span.parent_span_id),
                        name=span.name,
                        kind=span.kind,
                        start_time_unix_nano=span.start_time_unix_nano,
                        end_time_unix_nano=span.end_time_unix_nano,
                        attributes=_attributes(span.attributes),
                        events=tuple(
                            ReceivedEvent(e.name, _attributes(e.attributes), e.time_unix_nano)
                            for e in span.events
                        ),
                        links=tuple(
                            ReceivedLink(
                                link.trace_id.hex(),
                                link.span_id.hex(),
                                _attributes(link.attributes),
                            )
                            for link in span.links
                        ),
                        status_code=span.status.code,
                        resource=resource,
                        scope=scope_spans.scope.name,
                    )
                )
    return spans


def decode_log_records(request: Any) -> list[ReceivedLogRecord]:
    """The log records of an `ExportLogsServiceRequest`."""
    records: list[ReceivedLogRecord] = []
    for resource_logs in request.resource_logs:
        resource = _attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                records.append(
                    ReceivedLogRecord(
                        event_name=record.event_name,
                        trace_id=_hex(record.trace_id),
                        span_id=_hex(record.span_id),
                        severity_number=record.severity_number,
                        severity_text=record.severity_text,
                        attributes=_attributes(record.attributes),
                        body=_any_value(record.body) if record.HasField("body") else None,
                        time_unix_nano=record.time_unix_nano,
                        resource=resource,
                        scope=scope_logs.scope.name,
                    )
                )
    return records


def _number(point: Any) -> float | None:
    """A number data point's value, int or double."""
    kind = point.WhichOneof("value")
    return None if kind is None else float(getattr(point, kind))


def decode_metric_points(request: Any) -> list[ReceivedMetricPoint]:
    """The data points of an `ExportMetricsServiceRequest`."""
    points: list[ReceivedMetricPoint] = []
    for resource_metrics in request.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            scope = scope_metrics.scope.name
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                common = {"name": metric.name, "unit": metric.unit, "resource": resource}
                if kind in ("sum", "gauge"):
                    for point in getattr(metric, kind).data_points:
                        points.append(
                            ReceivedMetricPoint(
                                kind=kind,
                                attributes=_attributes(point.attributes),
                                value=_number(point),
                                count=None,
                                sum=None,
                                bucket_counts=(),
                                explicit_bounds=(),
                                scope=scope,
                                **common,
                            )
                        )
                elif kind == "histogram":
                    for point in metric.histogram.data_points:
                        points.append(
                            ReceivedMetricPoint(
                                kind=kind,
                                attributes=_attributes(point.attributes),
                                value=None,
                                count=point.count,
                                sum=point.sum,
                                bucket_counts=tuple(point.bucket_counts),
                                explicit_bounds=tuple(point.explicit_bounds),
                                scope=scope,
                                **common,
                            )
                        )
    return points


class _Collector:
    """What a receiver has collected so far; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._spans: list[ReceivedSpan] = []
        self._points: list[ReceivedMetricPoint] = []
        self._logs: list[ReceivedLogRecord] = []
        self.log_requests = 0
        """Log export requests received (including ones answered with an error)."""
        self.trace_requests = 0
        """Trace export requests received (including ones answered with an error)."""
        self.metric_requests = 0
        """Metric export requests received (including ones answered with an error)."""

    def _add_traces(self, request: Any) -> None:
        """Decode and keep the spans of one request."""
        spans = decode_spans(request)
        with self._lock:
            self._spans.extend(spans)
            self._lock.notify_all()

    def _add_metrics(self, request: Any) -> None:
        """Decode and keep the metric points of one request."""
        points = decode_metric_points(request)
        with self._lock:
            self._points.extend(points)
            self._lock.notify_all()

    def _add_logs(self, request: Any) -> None:
        """Decode and keep the log records of one request."""
        records = decode_log_records(request)
        with self._lock:
            self._logs.extend(records)
            self._lock.notify_all()

    def _count(self, signal: str) -> None:
        """Count one export request of `signal`."""
        with self._lock:
            if signal == "traces":
                self.trace_requests += 1
            elif signal == "logs":
                self.log_requests += 1
            else:
                self.metric_requests += 1
            self._lock.notify_all()

    def spans(self, name: str | None = None) -> list[ReceivedSpan]:
        """Spans received so far (optionally only those called `name`), in arrival order."""
        with self._lock:
            return [s for s in self._spans if name is None or s.name == name]

    def metric_points(self, name: str | None = None) -> list[ReceivedMetricPoint]:
        """Metric data points received so far (optionally of one metric)."""
        with self._lock:
            return [p for p in self._points if name is None or p.name == name]

    def log_records(self, event_name: str | None = None) -> list[ReceivedLogRecord]:
        """Log records received so far (optionally only events called `event_name`)."""
        with self._lock:
            return [r for r in self._logs if event_name is None or r.event_name == event_name]

    def wait_for(self, predicate: Callable[[Self], bool], timeout_s: float = 10.0) -> bool:
        """Wait until `predicate(self)` holds; False when `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._lock.wait(min(remaining, 0.05))
        return True

    def clear(self) -> None:
        """Forget everything received so far."""
        with self._lock:
            self._spans.clear()
            self._points.clear()
            self._logs.clear()


_PATHS: dict[str, tuple[str, Any, Any]] = {
    "/v1/traces": (
        "traces",
        trace_service_pb2.ExportTraceServiceRequest,
        trace_service_pb2.ExportTraceServiceResponse,
    ),
    "/v1/metrics": (
        "metrics",
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
    ),
    "/v1/logs": (
        "logs",
        logs_service_pb2.ExportLogsServiceRequest,
        logs_service_pb2.ExportLogsServiceResponse,
    ),
}


class OtlpHttpReceiver(_Collector):
    """An OTLP/HTTP (protobuf) receiver on 127.0.0.1; a context manager that starts and stops.

    `delay_s` holds each response (a slow collector); `status` other than 200 answers every post
    with that status and collects nothing (a failing collector). Both may change while running.
    `port` 0 (the default) lets the OS choose; a given port brings a collector back where it was.
    """

    def __init__(self, *, delay_s: float = 0.0, status: int = 200, port: int = 0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.status = status
        self._requested_port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind a free port and serve in a daemon thread."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            """Routes posts to the receiver."""

            def do_POST(self) -> None:
                """Handle an OTLP export post."""
                receiver._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self._requested_port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="otlp-http-receiver", daemon=True
        )
        self._thread.start()
        return self

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        """Answer one OTLP/HTTP post (or play the slow or failing collector)."""
        route = _PATHS.get(handler.path.split("?", 1)[0])
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        if route is None:
            handler.send_error(404, "unknown OTLP path")
            return
        signal, request_type, response_type = route
        self._count(signal)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.status != 200:
            handler.send_response(self.status)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        encoding = (handler.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        request = request_type()
        request.ParseFromString(body)
        if signal == "traces":
            self._add_traces(request)
        elif signal == "logs":
            self._add_logs(request)
        else:
            self._add_metrics(request)
        payload = response_type().SerializeToString()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-protobuf")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the receiver is not started")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """Base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT`."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        """Full traces URL, for an exporter's `endpoint=`."""
        return f"{self.endpoint}/v1/traces"

    @property
    def metrics_url(self) -> str:
        """Full metrics URL, for an exporter's `endpoint=`."""
        return f"{self.endpoint}/v1/metrics"

    @property
    def logs_url(self) -> str:
        """Full logs URL, for an exporter's `endpoint=`."""
        return f"{self.endpoint}/v1/logs"

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Service:
    """One OTLP gRPC service feeding a collector: counts the request, keeps its telemetry and
    acknowledges it with the signal's empty response."""

    signal = ""
    keep: Callable[[_Collector, Any], None]
    """The collector's method that keeps this signal's requests."""
    response: Any = None

    def __init__(self, collector: _Collector) -> None:
        self._collector = collector

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        """Keep the request's telemetry and acknowledge it."""
        self._collector._count(self.signal)
        self.keep(self._collector, request)
        return self.response()


class _TraceService(_Service, trace_service_pb2_grpc.TraceServiceServicer):
    """The OTLP trace service."""

    signal = "traces"
    keep = staticmethod(_Collector._add_traces)
    response = trace_service_pb2.ExportTraceServiceResponse


class _MetricsService(_Service, metrics_service_pb2_grpc.MetricsServiceServicer):
    """The OTLP metrics service."""

    signal = "metrics"
    keep = staticmethod(_Collector._add_metrics)
    response = metrics_service_pb2.ExportMetricsServiceResponse


class _LogsService(_Service, logs_service_pb2_grpc.LogsServiceServicer):
    """The OTLP logs service."""

    signal = "logs"
    keep = staticmethod(_Collector._add_logs)
    response = logs_service_pb2.ExportLogsServiceResponse


class OtlpGrpcReceiver(_Collector):
    """An OTLP/gRPC receiver (trace, metrics and logs services) on 127.0.0.1, without TLS; `port`
    0 (the default) lets the OS choose."""

    def __init__(self, *, port: int = 0) -> None:
        super().__init__()
        self._server: Any = None
        self._port = 0
        self._requested_port = port

    def start(self) -> Self:
        """Bind a free port and serve."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        add_traces = trace_service_pb2_grpc.add_TraceServiceServicer_to_server
        add_metrics = metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server
        add_traces(_TraceService(self), server)  # type: ignore[no-untyped-call]
        add_metrics(_MetricsService(self), server)  # type: ignore[no-untyped-call]
        add_logs = logs_service_pb2_grpc.add_LogsServiceServicer_to_server
        add_logs(_LogsService(self), server)  # type: ignore[no-untyped-call]
        self._port = server.add_insecure_port(f"127.0.0.1:{self._requested_port}")
        server.start()
        self._server = server
        return self

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the receiver is not started")
        return self._port

    @property
    def endpoint(self) -> str:
        """`http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT` (http means no TLS)."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop serving (in-flight calls get a moment to finish)."""
        if self._server is not None:
            self._server.stop(grace=0.5).wait()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
