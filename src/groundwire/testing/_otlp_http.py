"""A real OTLP/HTTP receiver on loopback, protobuf or OTLP/JSON, that can play a slow or failing
collector.

Posts to `/v1/traces`, `/v1/metrics` and `/v1/logs` are decoded (gzip or deflate bodies too;
JSON when `Content-Type: application/json`, as the gateway forwards JSON it received) and kept
by the `Collector`; a body it cannot decode is answered 400 naming the problem.

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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from groundwire.exporters import from_otlp_json
from groundwire.testing._otlp_collector import Collector

__all__ = ["OtlpHttpReceiver"]


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


class _Server(ThreadingHTTPServer):
    """The standard threading server with a listen backlog of 128, not socketserver's 5: at a
    shutdown, each signal's exporter and each export guard's reachability probe connect at
    once, and on a busy machine a sixth connection waiting for `accept` would have its SYN
    dropped and retried a second later, past the probe's timeout (a live receiver counted as
    unreachable)."""

    request_queue_size = 128


class OtlpHttpReceiver(Collector):
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

        self._server = _Server(("127.0.0.1", self._requested_port), Handler)
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
        self._keep(signal, request)
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
