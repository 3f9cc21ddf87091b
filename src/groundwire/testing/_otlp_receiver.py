"""Real OTLP receivers on loopback that decode what crossed the wire, for assertions in tests.

`OtlpHttpReceiver` is an HTTP server accepting OTLP/HTTP posts on `/v1/traces`, `/v1/metrics`
and `/v1/logs`, protobuf or OTLP/JSON (`Content-Type: application/json`, as the gateway forwards
JSON it received), gzip or deflate bodies too; a body it cannot decode is answered 400.
`OtlpGrpcReceiver` is a `grpc` server implementing the OTLP trace, metrics and logs services.
Both decode with `opentelemetry-proto` into plain frozen records (`ReceivedSpan`,
`ReceivedMetricPoint`, `ReceivedLogRecord`) with hex ids and Python attribute values. The HTTP
one can play a slow or failing collector (`delay_s`, `status`).

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
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import grpc  # type: ignore[import-untyped]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
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

from groundwire.exporters import from_otlp_json
from groundwire.testing._otlp_decode import (
    ReceivedEvent,
    ReceivedLink,
    ReceivedLogRecord,
    ReceivedMetricPoint,
    ReceivedSpan,
    decode_log_records,
    decode_metric_points,
    decode_spans,
)

__all__ = [
    "OtlpGrpcReceiver",
    "OtlpHttpReceiver",
    "ReceivedEvent",
    "ReceivedLink",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedSpan",
    "decode_log_records",
    "decode_metric_points",
    "decode_spans",
]


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


def _media_type(handler: BaseHTTPRequestHandler) -> str:
    """The request's Content-Type without parameters, lower-cased."""
    return (handler.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()


def _decoded(handler: BaseHTTPRequestHandler, body: bytes, request: Any, as_json: bool) -> Any:
    """The request message from a body (gzip or deflate; protobuf or OTLP/JSON); ValueError
    naming what was wrong."""
    encoding = (handler.headers.get("Content-Encoding") or "").lower()
    try:
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"cannot decompress the {encoding} body: {error}") from None
    if as_json:
        return from_otlp_json(body, request)
    try:
        request.ParseFromString(body)
    except DecodeError as error:
        raise ValueError(f"not an OTLP protobuf {type(request).__name__}: {error}") from None
    return request


def _answer(handler: BaseHTTPRequestHandler, status: int, body: bytes, media: str) -> None:
    """Send one response with a body."""
    handler.send_response(status)
    handler.send_header("Content-Type", media)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class OtlpHttpReceiver(_Collector):
    """An OTLP/HTTP receiver (protobuf and JSON) on 127.0.0.1; a context manager that starts and
    stops.

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
        as_json = _media_type(handler) == "application/json"
        try:
            request = _decoded(handler, body, request_type(), as_json)
        except ValueError as error:  # the exporter gets a 400 naming the problem, not a reset
            _answer(handler, 400, str(error).encode(), "text/plain; charset=utf-8")
            return
        if signal == "traces":
            self._add_traces(request)
        elif signal == "logs":
            self._add_logs(request)
        else:
            self._add_metrics(request)
        if as_json:
            _answer(handler, 200, b"{}", "application/json")
        else:
            _answer(handler, 200, response_type().SerializeToString(), "application/x-protobuf")

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
