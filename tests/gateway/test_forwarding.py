"""Forwarding through a real `groundwire serve`: every signal passes on unchanged, statuses are
the OTLP specification's, and bad requests never stop the process."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.gateway.conftest import GatewayProcess, RawDownstream

pytestmark = pytest.mark.slow  # each test runs real `groundwire serve` processes


def _post(
    url: str, body: bytes, content_type: str = "application/x-protobuf", **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """POST and return (status, headers, body) whatever the status."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read()


def _one_span_request(name: str = "op") -> bytes:
    """A real SDK-encoded traces request with one span."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("t").start_span(name).end()
    return bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())


def test_sdk_traces_metrics_and_logs_are_forwarded_byte_for_byte(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """The OTel SDK's HTTP exporters (gzip) reach downstream through the gateway unchanged."""
    gateway = run_gateway("--forward", downstream.endpoint)
    resource = Resource.create({"service.name": "app"})
    tracer_provider = TracerProvider(resource=resource)
    span_exporter = OTLPSpanExporter(
        endpoint=gateway.url + "/v1/traces", compression=Compression.Gzip
    )
    tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    with tracer_provider.get_tracer("app").start_as_current_span("root", attributes={"k": 1}):
        pass
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    meter_provider.get_meter("app").create_counter("requests").add(3, {"route": "/a"})
    metrics_data = reader.get_metrics_data()
    metric_exporter = OTLPMetricExporter(endpoint=gateway.url + "/v1/metrics")
    assert metric_exporter.export(metrics_data).name == "SUCCESS"
    logger_provider = LoggerProvider(resource=resource)
    log_exporter = OTLPLogExporter(endpoint=gateway.url + "/v1/logs")
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    logger_provider.get_logger("app").emit(body="hello", severity_text="INFO")
    tracer_provider.shutdown()
    logger_provider.shutdown()
    assert downstream.wait_for(
        lambda d: all(d.bodies(p) for p in ("/v1/traces", "/v1/metrics", "/v1/logs"))
    )
    (span,) = [s for s in downstream.spans() if s.name == "root"]
    assert span.attributes == {"k": 1} and span.resource["service.name"] == "app"
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

    assert downstream.bodies("/v1/metrics") == [encode_metrics(metrics_data).SerializeToString()]
    (logs,) = downstream.bodies("/v1/logs")
    assert b"hello" in logs
    health = json.loads(urllib.request.urlopen(gateway.url + "/healthz", timeout=5).read())
    assert health["counts"]["received:traces"] == health["counts"]["forwarded:traces"] == 1
    assert health["counts"]["forwarded:logs"] == 1


def test_json_requests_are_forwarded_as_json_with_a_json_answer(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """OTLP/JSON (hex ids) is accepted, answered in JSON and passed on as the same JSON."""
    gateway = run_gateway("--forward", downstream.endpoint)
    body = json.dumps(
        {
            "resourceSpans": [
                {
                    "resource": {"attributes": []},
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": "5b8efff798038103d269b633813fc60c",
                                    "spanId": "eee19b7ec3c1b174",
                                    "name": "json-span",
                                    "startTimeUnixNano": "1",
                                    "endTimeUnixNano": "2",
                                    "kind": 1,
                                }
                            ]
                        }
                    ],
                }
            ]
        }
    ).encode()
    status, headers, answer = _post(gateway.url + "/v1/traces", body, "application/json")
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(answer) == {}
    assert downstream.wait_for(lambda d: d.bodies("/v1/traces") == [body])
    (span,) = downstream.spans()
    assert (span.trace_id, span.span_id) == ("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")


def test_bad_requests_get_clear_statuses_and_the_gateway_keeps_serving(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """Malformed, truncated, gzip-lying, oversized, wrong-type and unknown-path requests are
    answered 400/413/415/404 with a google.rpc.Status message; good requests still pass after."""
    gateway = run_gateway("--forward", downstream.endpoint, "--max-request-bytes", "20000")
    url = gateway.url + "/v1/traces"
    good = _one_span_request()
    from google.rpc import status_pb2

    status, _, answer = _post(url, good[: len(good) // 2])
    assert status == 400
    message = status_pb2.Status.FromString(answer).message
    assert "not a valid OTLP protobuf traces request" in message
    status, _, answer = _post(url, b"{not json", "application/json")
    assert status == 400 and "not valid JSON" in json.loads(answer)["message"]
    bad_id = b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}'
    status, _, answer = _post(url, bad_id, "application/json")
    assert status == 400 and "traceId" in json.loads(answer)["message"]
    status, _, answer = _post(url, b"\x1f\x8b garbage", **{"Content-Encoding": "gzip"})
    assert status == 400
    status, _, answer = _post(url, good + b"\x00" * 30_000)
    assert status == 413 and "max_request_bytes" in status_pb2.Status.FromString(answer).message
    bomb = gzip.compress(good + b"\x00" * 200_000)  # small on the wire, too big unpacked
    assert len(bomb) < 20_000
    status, _, _ = _post(url, bomb, **{"Content-Encoding": "gzip"})
    assert status in (400, 413)
    status, _, answer = _post(url, good, "text/plain")
    assert status == 415 and "Content-Type" in json.loads(answer)["message"]
    status, _, _ = _post(url, good, **{"Content-Encoding": "br"})
    assert status in (400, 415)  # aiohttp's parser may refuse an unknown coding itself
    status, _, _ = _post(gateway.url + "/v1/profiles", good)
    assert status == 404
    status, _, answer = _post(url, gzip.compress(good), **{"Content-Encoding": "gzip"})
    assert status == 200
    assert trace_service_pb2.ExportTraceServiceResponse.FromString(answer).ByteSize() == 0
    assert downstream.wait_for(lambda d: d.bodies("/v1/traces") == [good])
    assert gateway.process.poll() is None
    health: dict[str, Any] = json.loads(
        urllib.request.urlopen(gateway.url + "/healthz", timeout=5).read()
    )
    counts = health["counts"]
    assert counts["refused:traces:malformed"] == 4
    assert counts["refused:traces:unsupported_media_type"] in (1, 2)  # br: see above
    assert counts["received:traces"] == 1
    assert "garbage" not in gateway.output() and "xyz" not in gateway.output()
