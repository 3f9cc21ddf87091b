"""Pre-fork servers: under `opentelemetry-instrument gunicorn --workers 2`, scoring starts in each
worker (threads do not survive a fork, so the master starts none), and every request's turn is
scored once, with only `OTEL_*` and `GROUNDWIRE_*` variables set.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import urllib.request
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


def test_each_gunicorn_worker_scores_the_turns_it_serves() -> None:
    """Concurrent requests reach both workers; every turn, one per request, is scored once."""
    port = _free_port()
    with OtlpHttpReceiver() as receiver:
        env = operator_env(receiver.endpoint, GROUNDWIRE_EVALUATORS="quoted_spans")
        command = [
            str(BIN / "opentelemetry-instrument"),
            str(BIN / "gunicorn"),
            "--workers=2",
            f"--bind=127.0.0.1:{port}",
            "--no-control-socket",
            "tests.zerocode.wsgi_app:app",
        ]
        server = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            _wait_until_serving(port, server)
            questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(REQUESTS)]
            with ThreadPoolExecutor(max_workers=4) as pool:
                replies = list(pool.map(lambda q: _ask(port, q), questions))
        finally:
            server.send_signal(signal.SIGTERM)  # graceful: workers finish and exit
            _, log = server.communicate(timeout=60)
        assert server.returncode == 0, log
        turns = REQUESTS + 1  # the first, readiness, request is a turn too
        assert receiver.wait_for(
            lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= turns, timeout_s=10
        )
        roots = turn_roots(receiver)
        carriers = receiver.spans(semconv.EVALUATION_SPAN_NAME)
        records = receiver.log_records(semconv.GEN_AI_EVALUATION_RESULT_EVENT)
    assert len({reply["pid"] for reply in replies}) == 2
    assert len(roots) == turns
    assert sorted(c.parent_span_id or "" for c in carriers) == sorted(r.span_id for r in roots)
    assert sorted(r.trace_id or "" for r in records) == sorted(r.trace_id for r in roots)
    assert OFF_LINE not in log
