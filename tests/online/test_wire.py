"""What crosses the wire: configure() in a fresh process exporting to real OTLP receivers.

Each test runs a small app in a subprocess (configure() sets the global providers, which a process
may set only once), then asserts on what the receiver decoded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groundwire import semconv
from groundwire.exporters import from_otlp_json
from groundwire.testing import OtlpGrpcReceiver, OtlpHttpReceiver, ReceivedSpan

ROOT = Path(__file__).resolve().parents[2]

APP = """
import json, sys, time
from opentelemetry import trace
import groundwire
from tests.online.conftest import AnswerLength, HasContext, Raises, record_turn

online = groundwire.configure(
    service_name="wire-app",
    evaluators=[AnswerLength(), HasContext(), Raises()],
    inline=["answer_length"],
    instrument=False,
)
tracer = trace.get_tracer("app")
durations = []
for _ in range(int(sys.argv[1])):
    started = time.perf_counter()
    record_turn(tracer)
    durations.append(time.perf_counter() - started)
drained = groundwire.shutdown(float(sys.argv[2]))
stats = online.stats()
print(json.dumps({
    "drained": drained, "max_turn_s": max(durations), "submitted": stats.submitted,
    "errored": stats.errored, "scored": stats.scored, "adds_up": stats.adds_up(),
}))
"""


def _run_app(
    env: dict[str, str], turns: int = 3, cwd: Path = ROOT, deadline: float = 10.0
) -> tuple[dict[str, Any], str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    clean.update(env)
    clean["PYTHONPATH"] = str(ROOT)
    clean.setdefault("OTEL_BSP_SCHEDULE_DELAY", "100")
    done = subprocess.run(
        [sys.executable, "-c", APP, str(turns), str(deadline)],
        env=clean,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _check_spans(spans: list[ReceivedSpan], turns: int) -> None:
    """Turn spans, inline events on roots, and carrier spans under them with one link each."""
    roots = [s for s in spans if s.name == "rag"]
    carriers = [s for s in spans if s.name == semconv.EVALUATION_SPAN_NAME]
    assert len(roots) == len(carriers) == turns
    assert len([s for s in spans if s.name == "retrieve"]) == turns
    by_id = {root.span_id: root for root in roots}
    for carrier in carriers:
        root = by_id[carrier.parent_span_id or ""]
        assert carrier.trace_id == root.trace_id
        assert [(link.trace_id, link.span_id) for link in carrier.links] == [
            (root.trace_id, root.span_id)
        ]
        assert carrier.attributes[semconv.OPENINFERENCE_SPAN_KIND] == "EVALUATOR"
        assert carrier.scope == semconv.INSTRUMENTATION_SCOPE
        names = [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in carrier.events]
        assert names == ["has_context", "raises"]
        assert carrier.events[1].attributes[semconv.ERROR_TYPE] == "RuntimeError"
        assert carrier.status_code == 2  # STATUS_CODE_ERROR: an evaluator failed
    for root in roots:
        assert root.resource[semconv.SERVICE_NAME] == "wire-app"
        (event,) = root.events
        assert event.name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
        assert event.attributes[semconv.GEN_AI_EVALUATION_NAME] == "answer_length"
        assert root.attributes["evaluations.0.evaluation.score"] == pytest.approx(0.47)


def _check_metrics(receiver: OtlpHttpReceiver | OtlpGrpcReceiver, turns: int) -> None:
    """Histograms with our explicit buckets and units, outcome counts, the queue gauge."""
    scores = receiver.metric_points(semconv.METRIC_EVALUATION_SCORE)
    assert scores and all(p.explicit_bounds == semconv.SCORE_BUCKETS for p in scores)
    assert all(p.unit == "1" and p.kind == "histogram" for p in scores)
    last = {p.attributes[semconv.GEN_AI_EVALUATION_NAME]: p for p in scores}
    assert last["answer_length"].count == turns
    assert last["answer_length"].bucket_counts[5] == turns  # 0.47 falls in (0.4, 0.5]
    durations = receiver.metric_points(semconv.METRIC_EVALUATION_DURATION)
    assert durations and all(p.explicit_bounds == semconv.DURATION_BUCKETS_S for p in durations)
    assert all(p.unit == "s" for p in durations)
    counts: dict[tuple[str, str], float] = {}
    for point in receiver.metric_points(semconv.METRIC_EVALUATIONS):
        key = (
            point.attributes[semconv.GEN_AI_EVALUATION_NAME],
            point.attributes[semconv.GROUNDWIRE_OUTCOME],
        )
        counts[key] = point.value or 0.0
    assert counts == {
        ("answer_length", "ok"): turns,
        ("has_context", "ok"): turns,
        ("raises", "error"): turns,
    }
    assert receiver.metric_points(semconv.METRIC_QUEUE_SIZE)
    assert all(p.resource[semconv.SERVICE_NAME] == "wire-app" for p in scores)


def test_http_protobuf_export_carries_turns_scores_and_metrics() -> None:
    """OTEL_EXPORTER_OTLP_ENDPOINT alone: spans, carrier spans and metrics arrive over OTLP/HTTP."""
    with OtlpHttpReceiver() as receiver:
        result, _ = _run_app({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert receiver.wait_for(lambda r: len(r.spans()) >= 9, 5)
        _check_spans(receiver.spans(), 3)
        _check_metrics(receiver, 3)
    assert result["drained"] and result["adds_up"]
    assert (result["submitted"], result["errored"]) == (3, 3)


def test_grpc_export_carries_turns_scores_and_metrics() -> None:
    """OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the same telemetry arrives at a real gRPC OTLP server."""
    with OtlpGrpcReceiver() as receiver:
        result, _ = _run_app(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            }
        )
        assert receiver.wait_for(lambda r: len(r.spans()) >= 9, 5)
        _check_spans(receiver.spans(), 3)
        _check_metrics(receiver, 3)
    assert result["adds_up"]


def test_without_an_endpoint_telemetry_goes_to_an_otlp_json_lines_file(tmp_path: Path) -> None:
    """No endpoint: one log line names the file; it holds OTLP/JSON requests with hex ids."""
    result, stderr = _run_app({}, cwd=tmp_path)
    assert result["adds_up"]
    path = tmp_path / "groundwire-telemetry.jsonl"
    assert str(path) in stderr
    assert stderr.count("OTLP/JSON lines") == 1
    lines = path.read_text().splitlines()
    documents = [json.loads(line) for line in lines]
    span_docs = [d for d in documents if "resourceSpans" in d]
    metric_docs = [d for d in documents if "resourceMetrics" in d]
    assert span_docs and metric_docs
    spans = [
        span
        for doc in span_docs
        for resource in doc["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]
    assert len(spans) == 9
    for span in spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        int(span["traceId"], 16)
        assert isinstance(span["startTimeUnixNano"], str)
        assert isinstance(span["kind"], int)
    carrier = next(s for s in spans if s["name"] == semconv.EVALUATION_SPAN_NAME)
    assert carrier["links"][0]["spanId"] == carrier["parentSpanId"]
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = from_otlp_json(lines[documents.index(span_docs[0])], ExportTraceServiceRequest())
    first = request.resource_spans[0].scope_spans[0].spans[0]
    assert (
        first.trace_id.hex()
        == span_docs[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    )


def _closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_collector_down_leaves_the_app_unaffected() -> None:
    """Nothing listening: the app's turns take no longer, nothing raises, the dead endpoints are
    named once."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    result, stderr = _run_app(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}, turns=5
    )
    assert result["max_turn_s"] < 0.25
    assert result["adds_up"] and result["submitted"] == 5
    assert "Traceback" not in stderr
    # The breaker notices the dead endpoint once and says so, naming each endpoint.
    assert f"OTLP traces endpoint {endpoint}/v1/traces" in stderr
    assert f"OTLP metrics endpoint {endpoint}/v1/metrics" in stderr
    assert "unreachable" in stderr


def test_slow_collector_does_not_slow_the_app() -> None:
    """A collector that takes a second per request: turns are as fast, telemetry still arrives."""
    with OtlpHttpReceiver(delay_s=1.0) as receiver:
        result, _ = _run_app({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, turns=3)
        assert receiver.wait_for(lambda r: len(r.spans()) >= 9, 10)
    assert result["max_turn_s"] < 0.25
    assert result["adds_up"]


def test_failing_collector_is_survived() -> None:
    """A collector answering 400: no raise, every turn still accounted for, the error logged."""
    with OtlpHttpReceiver(status=400) as receiver:
        result, stderr = _run_app({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert receiver.trace_requests >= 1
    assert result["adds_up"] and result["submitted"] == 3
    assert receiver.spans() == []
    assert "400" in stderr
    assert "Traceback" not in stderr
