"""`Gateway` in-process with scoring on (a real scoring child process, quoted_spans): ready only
once the child has reported, `/healthz` shows the child's state, the open-traces gauge reads it,
a trace sent to the receiver is scored, and a stop drains the scoring before it returns. With a
persistent queue the scored trace ids are committed to it (the scoring report's path). The
forwarding-only paths are in test_server.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from tests.gateway._scripted import http_downstream
from tests.gateway._traces import openinference_rag_trace, request

from groundwire import semconv
from groundwire.gateway import Gateway, ShutdownReport, load_config
from groundwire.gateway._signals import CONTENT_JSON


def _config(forward: str, **flags: Any) -> Any:
    """A gateway scoring with quoted_spans, quick to call traces due, on a free port."""
    settings = {
        "forward": forward,
        "listen": "127.0.0.1:0",
        "senders": 1,
        "evaluators": "quoted_spans",
        "quiet_period_s": 0.2,
        "metrics_interval_s": 60.0,
        "shutdown_timeout_s": 10,
        **flags,
    }
    return load_config(flags=settings, environ={})


async def _until(predicate: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def _score_one(gateway: Gateway, trace: list[dict[str, Any]]) -> dict[str, Any]:
    """Run `gateway` until ready, post `trace` as OTLP/JSON, wait for its turn to be scored;
    the `/healthz` answer once it is, and the gateway stopped (its report checked clean)."""
    task = asyncio.create_task(gateway.run())
    await _until(lambda: gateway.http_port is not None and gateway._accepting, "listening")
    await _until(gateway.ready, "ready once the scoring child has reported")
    assert gateway.scorer is not None and gateway.scorer.started
    base = f"http://127.0.0.1:{gateway.http_port}"
    async with aiohttp.ClientSession() as session:
        headers = {"Content-Type": CONTENT_JSON}
        async with session.post(base + "/v1/traces", data=request(trace), headers=headers) as r:
            assert r.status == 200
        await _until(lambda: gateway.metrics.count("scored_turns") == 1, "the turn is scored")
        async with session.get(base + "/healthz") as response:
            health: dict[str, Any] = await response.json()
    gateway.stop()
    report = await asyncio.wait_for(task, 30)
    assert report == ShutdownReport(0, True)
    assert not gateway.scorer.alive
    return health


def test_a_scoring_gateway_is_ready_once_the_child_reports_and_shows_it() -> None:
    """Scoring on: not ready before the child has reported; `/healthz` has the child running,
    its open traces, the scoring queue and its turn counts; the open-traces gauge reads the
    child's count; a stop scores what is open and returns a clean report."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url))
            assert gateway.scorer is not None
            assert gateway.queue is None
            assert not gateway.ready()
            health = await _score_one(gateway, openinference_rag_trace())
            assert health["scoring_process"] == "running"
            assert health["open_traces"] == 0
            assert health["scoring_queue"] == 0
            assert health["turns"]["submitted"] == 1
            assert "queue" not in health
            gateway.scorer.last["open_traces"] = 3
            assert gateway.metrics.gauge(semconv.METRIC_GATEWAY_OPEN_TRACES) == 3
            assert gateway.health()["open_traces"] == 3
            assert gateway.health()["scoring_process"] == "stopped"

    asyncio.run(scenario())


def test_with_a_queue_the_scored_traces_are_committed_and_remembered(tmp_path: Path) -> None:
    """Scoring on with queue_dir: the child's report is committed to the queue (the trace id
    is among those scored recently), and a gateway started again on the same directory hands
    those ids to its scoring child, so the same trace is not scored twice."""
    trace = openinference_rag_trace()
    trace_id = trace[0]["traceId"]

    async def scenario() -> None:
        async with http_downstream() as downstream:
            config = _config(downstream.url, queue_dir=str(tmp_path), queue_fsync=False)
            gateway = Gateway(config)
            assert gateway.queue is not None
            await _score_one(gateway, trace)
            again = Gateway(config)
            assert again.queue is not None
            assert trace_id in again.queue.scored_recently()
            task = asyncio.create_task(again.run())
            await _until(again.ready, "ready again")
            base = f"http://127.0.0.1:{again.http_port}"
            async with aiohttp.ClientSession() as session:
                headers = {"Content-Type": CONTENT_JSON}
                async with session.post(base + "/v1/traces", data=request(trace), headers=headers):
                    pass
            await _until(lambda: again.metrics.count("late_spans") == 3, "counted as late")
            assert again.metrics.count("scored_turns") == 0
            again.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)

    asyncio.run(scenario())
