"""Servers with worker processes: under `opentelemetry-instrument gunicorn --workers=2` (pre-fork)
and `opentelemetry-instrument uvicorn --workers 2` (spawned workers), scoring runs in each worker,
never in the master or supervisor, and every request's turn is scored once, with only `OTEL_*`
and `GROUNDWIRE_*` variables set.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver
from tests.dialects._apps import QUESTIONS
from tests.zerocode._run import BIN, OFF_LINE, ROOT, operator_env, turn_roots

pytestmark = pytest.mark.slow

REQUESTS = 8


def _free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ask(port: int, question: str) -> dict[str, object]:
    """One request to the endpoint; its JSON reply."""
    url = f"http://127.0.0.1:{port}/ask?q={quote(question)}"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.load(reply)  # type: ignore[no-any-return]


def _wait_until_serving(port: int, server: subprocess.Popen[str], timeout_s: float = 60) -> None:
    """Poll until the server answers (its first answer is one more turn)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, server.communicate()[1]
        try:
            _ask(port, QUESTIONS[0])
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail("gunicorn did not start serving")


def _serve_and_ask(
    command: list[str],
    receiver: OtlpHttpReceiver,
    port: int,
    before_stop: Callable[[], object] = lambda: None,
    **variables: str,
) -> tuple[list[dict[str, object]], str]:
    """Start the server with the operator's environment (and `variables`), wait until it
    serves, send `REQUESTS` requests four at a time, call `before_stop`, stop it gracefully
    (SIGTERM); the replies and the server's log."""
    env = operator_env(receiver.endpoint, GROUNDWIRE_EVALUATORS="quoted_spans", **variables)
    server = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _wait_until_serving(port, server)
        questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(REQUESTS)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            replies = list(pool.map(lambda q: _ask(port, q), questions))
        before_stop()
    finally:
        server.send_signal(signal.SIGTERM)  # graceful: workers finish and exit
        _, log = server.communicate(timeout=60)
    assert server.returncode == 0, log
    return replies, log


def _check_each_turn_scored_once(receiver: OtlpHttpReceiver, turns: int) -> None:
    """`turns` turn spans, each with exactly one evaluation span and one result log record."""
    assert receiver.wait_for(
        lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= turns, timeout_s=10
    )
    roots = turn_roots(receiver)
    carriers = receiver.spans(semconv.EVALUATION_SPAN_NAME)
    records = receiver.log_records(semconv.GEN_AI_EVALUATION_RESULT_EVENT)
    assert len(roots) == turns
    assert sorted(c.parent_span_id or "" for c in carriers) == sorted(r.span_id for r in roots)
    assert sorted(r.trace_id or "" for r in records) == sorted(r.trace_id for r in roots)


def _scoring_instances(receiver: OtlpHttpReceiver) -> set[object]:
    """The process instances groundwire's metrics came from (a worker's reach the receiver at
    its periodic export, which under load can come after the last result)."""
    return {
        p.resource["service.instance.id"]
        for p in receiver.metric_points()
        if p.scope == "groundwire"
    }


def test_each_gunicorn_worker_scores_the_turns_it_serves() -> None:
    """Concurrent requests reach both workers; every turn, one per request, is scored once."""
    port = _free_port()
    command = [
        str(BIN / "opentelemetry-instrument"),
        str(BIN / "gunicorn"),
        "--workers=2",
        f"--bind=127.0.0.1:{port}",
        "--no-control-socket",
        "tests.zerocode.wsgi_app:app",
    ]
    with OtlpHttpReceiver() as receiver:
        replies, log = _serve_and_ask(command, receiver, port)
        _check_each_turn_scored_once(receiver, REQUESTS + 1)  # the readiness request is one too
    assert len({reply["pid"] for reply in replies}) == 2
    assert OFF_LINE not in log


def test_uvicorn_workers_score_and_the_supervisor_does_not() -> None:
    """Every turn is scored once, and only the two worker processes run a runner: groundwire's
    metrics come from two process instances, none from the supervisor or multiprocessing's
    resource tracker.

    A uvicorn worker re-raises SIGTERM after its graceful shutdown, so no exit hook runs there
    (neither the SDK's nor groundwire's): the results are awaited before the server is stopped,
    and the log records are batched every 100 ms instead of every second."""
    port = _free_port()
    command = [
        str(BIN / "opentelemetry-instrument"),
        str(BIN / "uvicorn"),
        "--workers=2",
        "--host=127.0.0.1",
        f"--port={port}",
        # a worker must answer within this; auto-instrumentation and scoring's start-up count
        "--timeout-worker-healthcheck=60",
        "tests.zerocode.asgi_app:app",
    ]
    turns = REQUESTS + 1

    def all_results_arrived() -> None:
        receiver.wait_for(
            lambda r: (
                len(r.log_records(semconv.GEN_AI_EVALUATION_RESULT_EVENT)) >= turns
                and len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= turns
                and len(_scoring_instances(r)) >= 2
            ),
            timeout_s=15,
        )

    with OtlpHttpReceiver() as receiver:
        replies, log = _serve_and_ask(
            command, receiver, port, all_results_arrived, OTEL_BLRP_SCHEDULE_DELAY="100"
        )
        _check_each_turn_scored_once(receiver, turns)
        scoring = _scoring_instances(receiver)
    assert "died" not in log
    assert len({reply["pid"] for reply in replies}) >= 1
    assert len(scoring) == 2
    assert OFF_LINE not in log
