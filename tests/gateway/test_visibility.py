""" "Did it work?" for the gateway: a periodic log line with forwarded, scored and dropped counts,
a scored-turns counter on `/metrics`, scored in the `stopped:` line; a retry backoff that keeps to
`retry_max_s`; a listen address in use refused at once with one line; `--help` showing the queue."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable

import pytest
from tests.gateway._traces import openinference_rag_trace, request
from tests.gateway.conftest import ROOT, GatewayProcess, RawDownstream

from groundwire.gateway._forwarder import backoff_s


def _post_json(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url + "/v1/traces", data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def _serve(*args: str, timeout_s: float = 20) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", "NO_COLOR": "1"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "from groundwire.cli import main; main()", "serve", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
    )
    return done, time.monotonic() - started


@pytest.mark.slow
def test_scored_turns_are_logged_every_interval_counted_on_metrics_and_in_the_stopped_line(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """One RAG trace: the periodic line says it was forwarded and one turn scored, `/metrics`
    has the scored-turns counter at 1, and the `stopped:` line says scored too."""
    gateway = run_gateway(
        "--forward", downstream.endpoint, "-e", "quoted_spans", "--quiet-period", "0.2",
        env={"GROUNDWIRE_GATEWAY_SUMMARY_INTERVAL_S": "0.3"},
    )  # fmt: skip
    assert _post_json(gateway.url, request(openinference_rag_trace())) == 200
    deadline = time.monotonic() + 15
    line = "running: forwarded {'traces': 3}; scored 1 turns; dropped 0"
    while line not in gateway.output() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert line in gateway.output()
    text = urllib.request.urlopen(gateway.url + "/metrics", timeout=5).read().decode()
    (value,) = re.findall(
        r"^groundwire_gateway_turns_scored_total(?:\{[^}]*\})? (\S+)$", text, re.M
    )
    assert float(value) == 1.0
    assert gateway.terminate() == 0
    assert "stopped: forwarded {'traces': 3}; scored 1 turns; dropped 0; nothing left behind" in (
        gateway.output()
    )


def test_the_retry_backoff_never_exceeds_retry_max_s_jitter_included() -> None:
    """Jitter is applied inside the cap: with `retry_max_s` 30 no wait is longer than 30 s (it
    reached 34.6 s when the jitter came after the cap), and the first wait is jittered around
    `retry_initial_s`."""
    waits = [backoff_s(failures, 0.5, 30.0) for failures in range(1, 40) for _ in range(50)]
    assert max(waits) <= 30.0 and max(waits) > 29.0
    first = [backoff_s(1, 0.5, 30.0) for _ in range(500)]
    assert 0.4 <= min(first) < 0.45 and 0.55 < max(first) <= 0.6


def test_a_listen_address_in_use_exits_2_at_once_with_one_line() -> None:
    """No exporter retry noise: the address is checked before anything starts."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done, took = _serve("--forward", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 2 and took < 5
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot listen" in lines[0] and "in use" in lines[0], lines
    assert "Transient error" not in done.stderr


def test_serve_help_shows_the_queue_dir() -> None:
    """`--queue-dir` is offered (the `--listen` default: tests/test_cli_output.py)."""
    done, _ = _serve("--help")
    assert done.returncode == 0
    assert "--queue-dir" in done.stdout and "survive a crash" in done.stdout
