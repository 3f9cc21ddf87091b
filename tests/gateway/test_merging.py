"""The forwarder joins binary-protobuf requests queued behind each other into one downstream
request (as the Collector's batch processor would), losing and repeating nothing."""

from __future__ import annotations

import json
import time
import urllib.request
from collections import Counter
from collections.abc import Callable

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from tests.gateway._traces import new_span_id, new_trace_id, request, span
from tests.gateway.conftest import GatewayProcess, RawDownstream

from groundwire.gateway._forwarder import MERGE_MAX_BYTES
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS, decode

pytestmark = pytest.mark.slow  # a real `groundwire serve` process


def _request(index: int, spans: int = 1) -> bytes:
    """A distinct OTLP/JSON request of `spans` spans named op-<index>-<n>."""
    trace = new_trace_id()
    return request(
        [span(trace, new_span_id(), None, f"op-{index:04d}-{n}", 1, 2, n=n) for n in range(spans)]
    )


def _post(url: str, body: bytes, content_type: str) -> int:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type}
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def test_queued_protobuf_requests_go_downstream_joined_each_span_once(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """40 protobuf requests (and 2 JSON ones) queued while downstream is down reach it, once it
    is back, in fewer requests: every span exactly once, every joined body a valid request no
    larger than MERGE_MAX_BYTES, the JSON bodies as they were sent."""
    gateway = run_gateway(
        "--forward", downstream.endpoint,
        env={"GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.2", "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.3"},
    )  # fmt: skip
    downstream.stop()
    names: list[str] = []
    json_bodies: list[bytes] = []
    for index in range(42):
        body = _request(index, spans=3)
        names += [f"op-{index:04d}-{n}" for n in range(3)]
        if index in (10, 30):  # JSON in between: never joined, and it splits the runs
            json_bodies.append(body)
            assert _post(gateway.url + "/v1/traces", body, CONTENT_JSON) == 200
            continue
        protobuf = decode(SIGNALS["traces"], body, CONTENT_JSON).SerializeToString()
        assert _post(gateway.url + "/v1/traces", protobuf, CONTENT_PROTOBUF) == 200
    time.sleep(0.3)
    downstream.start()
    assert downstream.wait_for(lambda d: len(d.spans()) >= len(names))
    time.sleep(0.5)  # nothing more (no repeats) arrives
    assert Counter(s.name for s in downstream.spans()) == Counter(names)
    requests = [r for r in downstream.requests if r.path == "/v1/traces"]
    protobuf_requests = [r for r in requests if r.headers["Content-Type"] == CONTENT_PROTOBUF]
    json_sent = Counter(json_bodies)  # (4 senders: the order downstream may differ)
    assert (
        Counter(r.body for r in requests if r.headers["Content-Type"] == CONTENT_JSON) == json_sent
    )
    assert len(protobuf_requests) < 40  # joined (the first, retried one, goes on alone)
    for joined in protobuf_requests:
        assert len(joined.body) <= MERGE_MAX_BYTES
        trace_service_pb2.ExportTraceServiceRequest().ParseFromString(joined.body)
    health = json.loads(urllib.request.urlopen(gateway.url + "/healthz", timeout=5).read())
    counts = health["counts"]
    assert counts["received:traces"] == counts["forwarded:traces"] == len(names)
