"""Scoring through a real `groundwire serve`: traces from apps in any language, split and out of
order, are scored once and the results reach the same downstream as in-process scoring writes
them (carrier span under the turn root with one link to it, result events, metrics)."""

from __future__ import annotations

import random
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.gateway._traces import (
    ANSWER,
    CONTEXT,
    QUESTION,
    genai_rag_trace,
    openinference_rag_trace,
    request,
)
from tests.gateway.conftest import GatewayProcess, RawDownstream

import groundwire
from groundwire import semconv
from groundwire.assembly import turns_from_spans
from groundwire.gateway._signals import SIGNALS, decode
from groundwire.offline.readers._otlp_proto import spans_from_message
from groundwire.testing import ReceivedSpan

pytestmark = pytest.mark.slow  # each test runs real `groundwire serve` processes

_FAST = ("--quiet-period", "0.3", "--max-wait", "20")
_ENV = {"GROUNDWIRE_GATEWAY_METRICS_INTERVAL_S": "0.5"}


def _post_json(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def _in_process_score(spans: list[dict[str, Any]]) -> float:
    """What in-process scoring gives for the same spans: assembler + evaluator, no gateway."""
    message = decode(SIGNALS["traces"], request(spans), "application/json")
    (turn,) = turns_from_spans(spans_from_message(message))
    return groundwire.evaluate(turn, ["quoted_spans"])["quoted_spans"].value


def _services_with_metric(downstream: RawDownstream, name: str) -> list[str]:
    """service.name of every resource whose metrics downstream received include `name`."""
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

    services = []
    for body in downstream.bodies("/v1/metrics"):
        message = metrics_service_pb2.ExportMetricsServiceRequest()
        message.ParseFromString(body)
        for resource_metrics in message.resource_metrics:
            names = {
                metric.name for scope in resource_metrics.scope_metrics for metric in scope.metrics
            }
            if name in names:
                attributes = {
                    a.key: a.value.string_value for a in resource_metrics.resource.attributes
                }
                services.append(attributes.get("service.name", ""))
    return services


def _result_logs(downstream: RawDownstream) -> list[tuple[str, str, str, float]]:
    """(service.name, trace id, evaluation name, score) of every log-based result event."""
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

    found = []
    for body in downstream.bodies("/v1/logs"):
        message = logs_service_pb2.ExportLogsServiceRequest()
        message.ParseFromString(body)
        for resource_logs in message.resource_logs:
            resource = {a.key: a.value.string_value for a in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    if record.event_name != semconv.GEN_AI_EVALUATION_RESULT_EVENT:
                        continue
                    attributes = {a.key: a.value for a in record.attributes}
                    found.append(
                        (
                            resource.get("service.name", ""),
                            record.trace_id.hex(),
                            attributes[semconv.GEN_AI_EVALUATION_NAME].string_value,
                            attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE].double_value,
                        )
                    )
    return found


def _carriers(downstream: RawDownstream) -> list[ReceivedSpan]:
    return [s for s in downstream.spans() if s.name == semconv.EVALUATION_SPAN_NAME]


def test_typescript_style_traces_split_and_out_of_order_are_scored_once(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """Two OTLP/JSON traces from non-Python apps (OpenInference and GenAI attributes), each
    span in its own request, root before children, interleaved: one carrier span each, under
    the root with one link to it, the in-process score on its result event, and the app's own
    service.name on the carrier, the log-based result events and the evaluation metrics; a late
    span is counted, not scored again; every original span is forwarded."""
    gateway = run_gateway("--forward", downstream.endpoint, "-e", "quoted_spans", *_FAST, env=_ENV)
    traces = [openinference_rag_trace(), genai_rag_trace()]
    services = ["ts-support-bot", "go-search-api"]
    expected = [_in_process_score(t) for t in traces]
    assert expected == [1.0, 1.0]
    order = [(t, s) for t in range(2) for s in (2, 0, 1)]  # root first, then the children
    random.Random(7).shuffle(order)
    for t, s in order:
        body = request([traces[t][s]], service=services[t])
        assert _post_json(gateway.url + "/v1/traces", body) == 200
    assert downstream.wait_for(lambda d: len(_carriers(d)) == 2)
    by_trace = {c.trace_id: c for c in _carriers(downstream)}
    for trace, score, service in zip(traces, expected, services, strict=True):
        root = trace[2]
        carrier = by_trace[root["traceId"]]
        assert carrier.parent_span_id == root["spanId"]
        assert [(link.trace_id, link.span_id) for link in carrier.links] == [
            (root["traceId"], root["spanId"])
        ]
        assert carrier.attributes[semconv.OPENINFERENCE_SPAN_KIND] == "EVALUATOR"
        (event,) = carrier.events
        assert event.name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
        assert event.attributes[semconv.GEN_AI_EVALUATION_NAME] == "quoted_spans"
        assert event.attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == score
        assert carrier.resource["service.name"] == service  # the app's, not the gateway's
    late = dict(traces[0][1], spanId="00000000000000aa", name="late")
    assert _post_json(gateway.url + "/v1/traces", request([late])) == 200
    assert downstream.wait_for(
        lambda d: len([s for s in d.spans() if s.name != semconv.EVALUATION_SPAN_NAME]) == 7
    )
    assert downstream.wait_for(
        lambda d: set(services) <= set(_services_with_metric(d, "groundwire.evaluation.score"))
    )
    assert "groundwire-gateway" not in _services_with_metric(
        downstream, "groundwire.evaluation.score"
    )
    # the log-based result events (OTEP 4430) too, under the app, on the evaluated trace
    assert downstream.wait_for(lambda d: len(_result_logs(d)) == 2)
    assert sorted(_result_logs(downstream)) == sorted(
        (service, trace[2]["traceId"], "quoted_spans", score)
        for trace, score, service in zip(traces, expected, services, strict=True)
    )
    health = gateway.wait_health(lambda h: h["counts"].get("late_spans") == 1)
    assert health["counts"]["late_spans"] == 1
    assert health["turns"]["scored"] == 2 and health["turns"]["submitted"] == 2
    assert len(_carriers(downstream)) == 2
    assert QUESTION not in gateway.output() and CONTEXT not in gateway.output()
    assert ANSWER not in gateway.output()


def test_python_sdk_over_grpc_is_scored_like_in_process(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """A Python app's real SDK spans sent by the OTLP/gRPC exporter to the gateway's gRPC port
    are forwarded and scored; the result matches in-process scoring of the same spans."""
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--grpc", "127.0.0.1:0", "-e", "quoted_spans", *_FAST,
        env=_ENV,
    )  # fmt: skip
    provider = TracerProvider(resource=Resource.create({"service.name": "py-app"}))
    exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{gateway.grpc_port}", insecure=True)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("app")
    kind = semconv.OPENINFERENCE_SPAN_KIND
    with tracer.start_as_current_span(
        "rag", attributes={kind: "CHAIN", "input.value": QUESTION, "output.value": ANSWER}
    ) as root:
        with tracer.start_as_current_span(
            "retrieve",
            attributes={
                kind: "RETRIEVER",
                "input.value": QUESTION,
                "retrieval.documents.0.document.content": CONTEXT,
            },
        ):
            pass
        with tracer.start_as_current_span("llm", attributes={kind: "LLM", "output.value": ANSWER}):
            pass
    provider.shutdown()
    assert downstream.wait_for(lambda d: len(_carriers(d)) == 1)
    (carrier,) = _carriers(downstream)
    root_id = f"{root.get_span_context().span_id:016x}"
    assert carrier.parent_span_id == root_id
    (event,) = carrier.events
    assert event.attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert {s.name for s in downstream.spans()} == {"rag", "retrieve", "llm", "evaluation"}


def test_grpc_downstream_receives_the_traffic_and_the_scores(
    run_gateway: Callable[..., GatewayProcess],
) -> None:
    """`--forward grpc://...`: OTLP/JSON from the app reaches a real OTLP/gRPC receiver as
    protobuf, and the evaluation span is exported there too."""
    from groundwire.testing import OtlpGrpcReceiver

    with OtlpGrpcReceiver() as receiver:
        gateway = run_gateway(
            "--forward", f"grpc://127.0.0.1:{receiver.port}", "-e", "quoted_spans", *_FAST
        )
        trace = openinference_rag_trace()
        assert _post_json(gateway.url + "/v1/traces", request(trace)) == 200
        assert receiver.wait_for(
            lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) == 1, timeout_s=20
        )
        names = sorted(s.name for s in receiver.spans())
        assert names == sorted([*(s["name"] for s in trace), semconv.EVALUATION_SPAN_NAME])
        (carrier,) = receiver.spans(semconv.EVALUATION_SPAN_NAME)
        assert carrier.parent_span_id == trace[2]["spanId"]
