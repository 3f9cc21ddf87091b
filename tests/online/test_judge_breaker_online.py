"""A dead judge online: the runner counts its evaluations as skipped (reason judge_unreachable),
never slows submission, and the outage is one warning."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from groundwire.emit import Emitter
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.judges import JudgeClient, JudgeConfig
from groundwire.runner import BackgroundRunner, RunnerConfig

from .conftest import Telemetry, make_turn


def test_a_dead_judge_online_is_counted_as_skipped_and_said_once(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """30 turns against a refusing port: submit stays fast, the queue drains in seconds, the
    metrics count groundedness evaluations as `skipped`, and one warning names the judge."""
    with socket.socket() as refusing:
        refusing.bind(("127.0.0.1", 0))
        port = refusing.getsockname()[1]
        config = JudgeConfig(
            model="m",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="k",
            backoff_base_s=0.05,
            backoff_max_s=0.1,
            cache="off",
        )
        runner = BackgroundRunner(
            RunnerConfig([ResponseGroundedness(judge=JudgeClient(config))]), emitter
        )
        with caplog.at_level(logging.WARNING, logger="groundwire"):
            slowest = 0.0
            for i in range(30):
                started = time.perf_counter()
                runner.submit(make_turn(i, answer="It says context 0."))
                slowest = max(slowest, time.perf_counter() - started)
            assert runner.force_flush(15)
    counts = telemetry.counts()
    assert counts.get(("groundedness", "skipped"), 0) >= 25, counts
    assert slowest < 0.05
    outages = [r for r in caplog.records if "is unreachable" in r.getMessage()]
    assert len(outages) == 1
    runner.shutdown(2)
