"""Scoring across a crash with the persistent queue: the traces open when the gateway was
SIGKILLed are rebuilt from the queue and scored once after the restart; a trace scored before the
crash is not scored again, though a stored request still holds some of its spans."""

from __future__ import annotations

import sqlite3
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.gateway._traces import new_trace_id, openinference_rag_trace, request
from tests.gateway.conftest import GatewayProcess, RawDownstream

from groundwire import semconv

pytestmark = pytest.mark.slow  # real `groundwire serve` processes

_ARGS = ("-e", "quoted_spans", "--quiet-period", "0.3", "--max-wait", "30")


def _post_json(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url + "/v1/traces", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def _carriers(downstream: RawDownstream) -> Counter[str]:
    return Counter(
        span.trace_id for span in downstream.spans() if span.name == semconv.EVALUATION_SPAN_NAME
    )


def _scored_ids(queue: Path) -> set[str]:
    with sqlite3.connect(queue / "queue.sqlite3") as db:
        return {row[0] for row in db.execute("SELECT trace_id FROM scored")}


def test_open_traces_are_scored_once_after_a_crash_and_scored_ones_not_again(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """Request 1 holds A's retriever and LLM spans and B's retriever span, request 2 A's root:
    A is scored, B stays open (no root yet); SIGKILL. The restart replays request 1 for scoring
    (A's spans are recognised as scored, B's is held), B's last spans arrive: A and B have one
    evaluation result each, and every original span reached downstream once."""
    queue = tmp_path / "queue"
    a, b = openinference_rag_trace(new_trace_id()), openinference_rag_trace(new_trace_id())
    a_id, b_id = a[0]["traceId"], b[0]["traceId"]
    first = run_gateway("--forward", downstream.endpoint, "--queue-dir", str(queue), *_ARGS)
    assert _post_json(first.url, request([a[0], a[1], b[0]])) == 200
    assert _post_json(first.url, request([a[2]])) == 200
    assert downstream.wait_for(lambda d: _carriers(d)[a_id] == 1)
    deadline = time.monotonic() + 10
    while a_id not in _scored_ids(queue) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _scored_ids(queue) == {a_id}
    first.process.kill()
    first.process.wait(10)
    deadline = time.monotonic() + 10
    while "left to the next start" not in first.output() and time.monotonic() < deadline:
        time.sleep(0.1)  # the orphaned scoring process leaves B to the restart
    assert "left to the next start" in first.output()
    second = run_gateway(
        "--forward", downstream.endpoint, "--queue-dir", str(queue), *_ARGS, "--max-wait", "1.5"
    )
    assert _post_json(second.url, request([b[1], b[2]])) == 200
    assert downstream.wait_for(lambda d: _carriers(d)[b_id] == 1)
    time.sleep(2.5)  # past --max-wait: a second result for A would have come by now
    assert _carriers(downstream) == Counter({a_id: 1, b_id: 1})
    originals = Counter(
        s.span_id for s in downstream.spans() if s.name != semconv.EVALUATION_SPAN_NAME
    )
    assert set(originals) == {s["spanId"] for s in a + b} and set(originals.values()) == {1}
    health = second.wait_health(lambda h: h["queue"]["records"] == 0)
    assert health["counts"]["late_spans"] == 2  # A's spans in the replayed request
    assert health["counts"]["scored_turns"] == 1
    assert health["counts"]["queue_results:traces"] == 1  # B's carrier span, committed once


def _log_trace_ids(downstream: RawDownstream) -> Counter[str]:
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2

    out: Counter[str] = Counter()
    for body in downstream.bodies("/v1/logs"):
        message = logs_service_pb2.ExportLogsServiceRequest()
        message.ParseFromString(body)
        for resource in message.resource_logs:
            for scope in resource.scope_logs:
                out.update(record.trace_id.hex() for record in scope.log_records)
    return out


def test_a_clean_shutdown_scores_open_traces_and_forwards_their_results_from_the_queue(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """With the queue the results go through it: a trace still open at SIGTERM is scored, its
    carrier span and result log record are committed, forwarded before the exit, and the queue
    is left empty (nothing for the next start to send)."""
    queue = tmp_path / "queue"
    trace = openinference_rag_trace(new_trace_id())
    trace_id = trace[0]["traceId"]
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--queue-dir", str(queue), "-e", "quoted_spans",
        "--quiet-period", "60", "--max-wait", "60",
    )  # fmt: skip
    gateway.wait_health(lambda h: "submitted" in h.get("turns", {}))
    assert _post_json(gateway.url, request(trace)) == 200
    gateway.wait_health(lambda h: h.get("open_traces", 0) == 1)
    assert _carriers(downstream)[trace_id] == 0
    assert gateway.terminate(timeout_s=30) == 0
    assert _carriers(downstream) == Counter({trace_id: 1})
    assert _log_trace_ids(downstream)[trace_id] >= 1
    with sqlite3.connect(queue / "queue.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 0
        assert {row[0] for row in db.execute("SELECT trace_id FROM scored")} == {trace_id}
