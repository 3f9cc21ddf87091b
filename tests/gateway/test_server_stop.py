"""`Gateway.run`'s stop in-process, the deadline paths: scoring cut by the deadline (reported,
and done by the next gateway on the same persistent queue), a downstream that never answers
(the stop keeps to its deadline), and a request still uploading when the stop comes (cut after
aiohttp's two seconds, or a quarter of a shorter deadline), and no access log line per request.
Real parts only: `run()` on this
test's event loop, a real scoring child, real sockets and a scripted real OTLP/HTTP downstream
on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.gateway._in_process import gateway_config as _config
from tests.gateway._scripted import http_downstream
from tests.gateway._traces import openinference_rag_trace, request

from groundwire.gateway import Gateway, ShutdownReport
from groundwire.gateway._signals import CONTENT_JSON


async def _until(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_scoring_cut_by_the_deadline_is_reported_and_done_by_the_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Scoring on, with a persistent queue: a stop whose deadline leaves no time to score the
    open trace reports scoring not drained (`scoring cut by the deadline`); the trace stays
    in the queue unscored, and the next gateway on that directory hands it to its scoring
    child, which scores it."""
    trace = openinference_rag_trace()
    reports: list[ShutdownReport] = []

    def scoring(forward: str, **flags: Any) -> Any:
        return _config(forward, evaluators="quoted_spans", metrics_interval_s=60.0,
                       queue_dir=str(tmp_path), queue_fsync=False, **flags)  # fmt: skip

    async def scenario() -> None:
        async with http_downstream() as downstream:
            first = Gateway(scoring(downstream.url, quiet_period_s=60, shutdown_timeout_s=0.1))
            task = asyncio.create_task(first.run())
            await _until(lambda: first.ready() or task.done(), 30)
            async with aiohttp.ClientSession() as session:
                url = f"http://127.0.0.1:{first.http_port}/v1/traces"
                headers = {"Content-Type": CONTENT_JSON}
                async with session.post(url, data=request(trace), headers=headers) as response:
                    assert response.status == 200
            await _until(lambda: first.scorer is not None and first.scorer.open_traces == 1, 30)
            first.stop()
            reports.append(await asyncio.wait_for(task, 30))
            again = Gateway(scoring(downstream.url, quiet_period_s=0.2, shutdown_timeout_s=10))
            task = asyncio.create_task(again.run())
            await _until(lambda: again.metrics.count("scored_turns") == 1 or task.done(), 20)
            again.stop()
            reports.append(await asyncio.wait_for(task, 30))
            assert again.metrics.count("scored_turns") == 1

    with caplog.at_level(logging.INFO, logger="groundwire.gateway"):
        asyncio.run(scenario())
    assert reports == [ShutdownReport(0, False), ShutdownReport(0, True)]
    stopped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stopped: ")]
    assert stopped[0].startswith("stopped: forwarded ")
    assert stopped[0].endswith("; 0 items left unforwarded; scoring cut by the deadline")
    assert stopped[1].endswith("; nothing left behind")


def test_a_downstream_that_never_answers_does_not_hold_the_stop_past_its_deadline() -> None:
    """The downstream accepts connections and never answers: the stop flushes the gateway's own
    telemetry to it for what is left of shutdown_timeout_s (at least half a second), not for
    as long as the exporters would wait (forward_timeout_s). Measured here: about 0.5 s for a
    0.5 s deadline; the bound leaves room for a loaded machine."""
    took: list[float] = []
    reports: list[ShutdownReport] = []
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        forward = f"http://127.0.0.1:{silent.getsockname()[1]}"

        async def scenario() -> None:
            gateway = Gateway(_config(forward, shutdown_timeout_s=0.5, forward_timeout_s=10))
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            stopping = time.monotonic()
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 60))
            took.append(time.monotonic() - stopping)

        asyncio.run(scenario())
    assert reports == [ShutdownReport(0, True)]
    assert took[0] < 1.25, took


def _stop_during_an_upload(shutdown_timeout_s: float) -> tuple[list[ShutdownReport], float]:
    """Stop a gateway while a client has sent 10 of 1,000 body bytes; (reports, seconds)."""
    reports: list[ShutdownReport] = []
    took: list[float] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url, shutdown_timeout_s=shutdown_timeout_s))
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            _, writer = await asyncio.open_connection("127.0.0.1", gateway.http_port)
            writer.write(
                b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n" + b"\0" * 10
            )
            await writer.drain()
            await asyncio.sleep(0.2)  # the handler is reading the body
            stopping = time.monotonic()
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 15))
            took.append(time.monotonic() - stopping)
            writer.close()

    asyncio.run(scenario())
    return reports, took[0]


def test_a_request_still_uploading_at_the_stop_is_cut_after_two_seconds() -> None:
    """A client that sent half a request body when the stop comes is given about two seconds
    to finish (aiohttp's runner shutdown_timeout), then cut: the stop does not wait for it
    for ever (or aiohttp's default minute)."""
    reports, took = _stop_during_an_upload(shutdown_timeout_s=20)
    assert reports == [ShutdownReport(0, True)]
    assert 1.5 < took < 2.9, took  # a quarter of 20 s would be 5 s: the two-second cap holds


def test_an_upload_gets_a_quarter_of_a_deadline_shorter_than_eight_seconds() -> None:
    """With shutdown_timeout_s=1 the upload is cut after a quarter second, so the whole stop
    keeps its one-second deadline (a fixed two seconds overran it). The bound leaves room for a
    loaded machine and still fails a two-second cut."""
    reports, took = _stop_during_an_upload(shutdown_timeout_s=1)
    assert reports == [ShutdownReport(0, True)]
    assert took < 1.6, took


def test_the_upload_gets_a_quarter_of_the_deadline_not_less() -> None:
    """shutdown_timeout_s=6: a quarter is 1.5 s, under the two-second cap, and the upload gets
    all of it (a fifth, or a fixed fraction of another size, would cut it sooner)."""
    reports, took = _stop_during_an_upload(shutdown_timeout_s=6)
    assert reports == [ShutdownReport(0, True)]
    assert 1.4 < took < 5, took


_PROBE = "access-log-probe/1.0"


def test_requests_are_not_access_logged(caplog: pytest.LogCaptureFixture) -> None:
    """aiohttp's access log is off: the gateway writes no line per export request (an app
    exporting every few seconds would flood the log, with its address and user agent)."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url))
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            async with aiohttp.ClientSession() as session:
                url = f"http://127.0.0.1:{gateway.http_port}/v1/traces"
                headers = {"Content-Type": CONTENT_JSON, "User-Agent": _PROBE}
                async with session.post(url, data=b"{}", headers=headers) as response:
                    assert response.status == 200
            gateway.stop()
            assert await asyncio.wait_for(task, 15) == ShutdownReport(0, True)

    with caplog.at_level(logging.DEBUG):
        asyncio.run(scenario())
    # the test's downstream logs what reaches it (the forwarded copy carries no user agent)
    lines = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
    assert any('"POST /v1/traces HTTP/1.1" 200' in line for line in lines), lines
    assert not any(_PROBE in line for line in lines), lines
