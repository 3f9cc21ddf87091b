"""A real OTLP/gRPC receiver on loopback: the OTLP trace, metrics and logs services, without TLS.

Each service decodes nothing itself: gRPC hands it the parsed request, which the `Collector`
counts and keeps, and it answers with the signal's empty response.
"""

from __future__ import annotations

from concurrent import futures
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

from groundwire.testing._otlp_collector import Collector

__all__ = ["OtlpGrpcReceiver"]


class _Service:
    """One OTLP gRPC service feeding a collector: counts the request, keeps its telemetry and
    acknowledges it with the signal's empty response."""

    signal = ""
    response: Any = None

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC method name
        """Keep the request's telemetry and acknowledge it."""
        self._collector._count(self.signal)
        self._collector._keep(self.signal, request)
        return self.response()


class _TraceService(_Service, trace_service_pb2_grpc.TraceServiceServicer):
    """The OTLP trace service."""

    signal = "traces"
    response = trace_service_pb2.ExportTraceServiceResponse


class _MetricsService(_Service, metrics_service_pb2_grpc.MetricsServiceServicer):
    """The OTLP metrics service."""

    signal = "metrics"
    response = metrics_service_pb2.ExportMetricsServiceResponse


class _LogsService(_Service, logs_service_pb2_grpc.LogsServiceServicer):
    """The OTLP logs service."""

    signal = "logs"
    response = logs_service_pb2.ExportLogsServiceResponse


class OtlpGrpcReceiver(Collector):
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
