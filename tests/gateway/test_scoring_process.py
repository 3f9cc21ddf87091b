"""The gateway's handle on its scoring child (`ScoringProcess`), with a real spawned child and
no gateway around it: requests fed are scored and reported with their results, the child's
counts reach the parent's metrics, a full inbox or a stopped child counts spans as not scored
instead of blocking, and shutdown ends the child within its deadline."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace

from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._worker import ScoringProcess


def _until(check: Callable[[], object], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _child_pid() -> int:
    (child,) = [p for p in multiprocessing.active_children() if p.name.endswith("-scoring")]
    assert child.name == "groundwire-gateway-scoring" and child.daemon
    assert child.pid is not None
    return child.pid


def test_fed_requests_are_scored_reported_with_results_and_counted(tmp_path: Path) -> None:
    """With a persistent queue: the child reports the requests done and the traces scored
    with their results (`on_scored`), skips the traces scored before, sends its counts to the
    parent's metrics, and a clean shutdown ends it in time; requests fed afterwards are
    counted as not scored (`shutdown`)."""
    calls: list[tuple[Any, ...]] = []
    metrics = GatewayMetrics(None)
    old, fresh = openinference_rag_trace(), openinference_rag_trace()
    process = ScoringProcess(
        scoring_config(queue_dir=str(tmp_path)),
        metrics,
        scored=[old[0]["traceId"]],
        on_scored=lambda *args: calls.append(args),
    )
    try:
        assert process.alive
        _until(lambda: process.started, "the child reports")
        assert process.queued_requests == 0
        assert process.feed(protobuf_request(old), 3, (6,))
        assert process.feed(protobuf_request(fresh), 3, (5,))
        _until(lambda: sum(len(c[0]) for c in calls) == 2, "both requests reported done")
        assert sorted(seq for call in calls for seq in call[0]) == [5, 6]
        assert [i for call in calls for i in call[1]] == [fresh[0]["traceId"]]
        assert sorted(r.signal for call in calls for r in call[2]) == ["logs", "traces"]
        _until(lambda: metrics.count("scored_turns") == 1, "the scored turn is counted")
        assert metrics.count("late_spans") == 3 and process.open_traces == 0
        assert process.last["turns"]["submitted"] == 1
    finally:
        assert process.shutdown(10.0) is True
    assert not process.alive
    assert process.last["final"] is True
    assert process.feed(protobuf_request(fresh), 4) is False
    assert metrics.count("not_scored:shutdown") == 4


def test_a_full_inbox_counts_the_spans_as_not_scored_without_waiting(tmp_path: Path) -> None:
    """While the child starts, an inbox of one request is full after one: the next is
    refused at once and its spans counted as not scored (`scoring_queue_full`)."""
    metrics = GatewayMetrics(None)
    process = ScoringProcess(
        scoring_config(queue_dir=str(tmp_path), scoring_queue_requests=1), metrics
    )
    try:
        body = protobuf_request(openinference_rag_trace())
        assert process.feed(body, 3) is True
        started = time.monotonic()
        assert process.feed(body, 5) is False
        assert time.monotonic() - started < 1.0
        assert metrics.count("not_scored:scoring_queue_full") == 5
        assert process.queued_requests == 1
    finally:
        # a child still starting keeps its one-request inbox full: the stop waits for room
        started = time.monotonic()
        assert process.shutdown(10.0) is True
        assert time.monotonic() - started < 15.0
    assert not process.alive


def test_a_stopped_child_is_logged_and_its_spans_counted_as_not_scored(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A child that dies (killed) is noticed: an error says forwarding goes on, requests fed
    afterwards are counted as not scored (`scoring_stopped`) and shutdown says it did not end
    cleanly."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    metrics = GatewayMetrics(None)
    process = ScoringProcess(scoring_config(queue_dir=str(tmp_path)), metrics)
    _until(lambda: process.started, "the child reports")
    os.kill(_child_pid(), signal.SIGKILL)
    _until(lambda: not process.feed(b"", 2), "the parent notices")
    assert metrics.count("not_scored:scoring_stopped") == 2
    assert not process.alive
    assert [r.getMessage() for r in caplog.records] == [
        "the scoring process exited (code -9); forwarding goes on, traces are no longer scored "
        "(counted as not_scored)"
    ]
    assert process.shutdown(5.0) is False
