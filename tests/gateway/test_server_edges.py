"""`Gateway` in-process, the paths test_server.py does not take: a TLS receiver (and a TLS
downstream trusted through `forward_ca_file`), the periodic summary line and its task, a stop
that closes both receivers, `check_listen` on a privileged port, evaluation results handed to
the loop thread-safely, a loop outside the main thread, replay at restart, the listen address,
port and backlog, and a refusal counted. The stop's deadline paths are in test_server_stop.py.
Real parts only: `run()` on an event loop of this test, a real aiohttp client and a scripted
real OTLP/HTTP downstream on 127.0.0.1, certificates made with openssl."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tests.gateway._in_process import gateway_config as _config
from tests.gateway._scripted import http_downstream, make_certificates, traces_request

from groundwire.gateway import Gateway, ShutdownReport
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._server import check_listen
from groundwire.gateway._signals import CONTENT_PROTOBUF


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    return make_certificates(tmp_path_factory.mktemp("tls"))


async def _until(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def _trusting(ca: Path) -> ssl.SSLContext:
    """A client context that trusts only `ca`."""
    return ssl.create_default_context(cafile=str(ca))


def test_a_tls_receiver_serves_https_and_forwards_to_a_tls_downstream(
    certificates: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """With tls_cert_file and tls_key_file the receiver speaks only TLS (a plain request is
    refused) and the ready line says `https` and `grpc=off`; a downstream whose certificate is
    signed by the CA of forward_ca_file gets the request unchanged."""
    reports: list[ShutdownReport] = []
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(certificates["server.pem"], certificates["server.key"])

    async def scenario() -> None:
        async with http_downstream(tls=server) as downstream:
            config = _config(
                downstream.url,
                tls_cert_file=str(certificates["server.pem"]),
                tls_key_file=str(certificates["server.key"]),
                forward_ca_file=str(certificates["ca.pem"]),
                shutdown_timeout_s=5,
            )
            gateway = Gateway(config)
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            url = f"https://127.0.0.1:{gateway.http_port}/v1/traces"
            headers = {"Content-Type": CONTENT_PROTOBUF}
            async with aiohttp.ClientSession() as session:
                body = traces_request("tls")
                async with session.post(
                    url, data=body, headers=headers, ssl=_trusting(certificates["ca.pem"])
                ) as response:
                    assert response.status == 200
                with pytest.raises(aiohttp.ClientError):
                    async with session.post(url.replace("https", "http"), data=body) as plain:
                        assert plain.status >= 400
            await _until(lambda: any(p == "/v1/traces" for p, _, _ in downstream.seen))
            assert [b for p, _, b in downstream.seen if p == "/v1/traces"] == [body]
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 30))

    with caplog.at_level(logging.INFO, logger="groundwire.gateway"):
        asyncio.run(scenario())
    assert reports == [ShutdownReport(0, True)]
    ready = [r.getMessage() for r in caplog.records if "gateway ready" in r.getMessage()]
    assert len(ready) == 1
    assert ready[0].startswith("groundwire gateway ready: http=https://127.0.0.1:")
    assert " grpc=off forward=http/protobuf " in ready[0]


def test_the_summary_line_is_logged_every_interval_until_the_stop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every summary_interval_s the gateway logs `running: forwarded ...; scored N turns;
    dropped ...` from a task named `gateway-summary`; the stop ends it and closes both
    receivers (their ports refuse connections once `run` has returned)."""
    tasks: list[asyncio.Task[Any]] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            config = _config(downstream.url, summary_interval_s=0.05, grpc_listen="127.0.0.1:0")
            gateway = Gateway(config)
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            tasks.extend(t for t in asyncio.all_tasks() if t.get_name() == "gateway-summary")
            assert len(tasks) == 1
            await _until(lambda: _summaries(caplog) >= 2)
            gateway.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)
            assert tasks[0].done()
            for port in (gateway.http_port, gateway.grpc_port):
                assert port is not None
                with pytest.raises(ConnectionRefusedError):
                    socket.create_connection(("127.0.0.1", port), timeout=5).close()

    with caplog.at_level(logging.INFO, logger="groundwire.gateway"):
        asyncio.run(scenario())


def _summaries(caplog: pytest.LogCaptureFixture) -> int:
    lines = [r.getMessage() for r in caplog.records]
    return sum(
        line.startswith("running: forwarded ") and "; scored 0 turns; dropped " in line
        for line in lines
    )


def test_a_privileged_port_in_use_is_refused() -> None:
    """Only port 0 (a free port chosen at bind) is left unchecked: port 1 in use is refused."""
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 1))
        except OSError:
            pytest.skip(f"cannot bind port 1 here (uid {os.getuid()})")
        taken.listen()
        with pytest.raises(OSError, match=r"^\[Errno \d+\] 127\.0\.0\.1:1: "):
            check_listen(_config("http://127.0.0.1:9", listen="127.0.0.1:1"))


def _in_a_thread(scenario: Callable[[], Coroutine[Any, Any, None]], *, debug: bool) -> None:
    """Run `scenario` on a new event loop in a daemon thread; its exception re-raised here, and
    a failure (not a hang) when it has not finished within 30 s."""
    errors: list[BaseException] = []

    def thread_main() -> None:
        try:
            asyncio.run(scenario(), debug=debug)
        except BaseException as error:  # handed to the test's thread
            errors.append(error)

    worker = threading.Thread(target=thread_main, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the scenario did not finish"
    if errors:
        raise errors[0]


def test_committed_results_reach_the_loop_thread_safely(tmp_path: Path) -> None:
    """The queue commits evaluation results on its own thread; handing them to the forwarder
    goes through the gateway's loop (call_soon_threadsafe), never by touching the loop's
    objects from that thread: on a debug loop, which refuses such calls from other threads
    (the sender would never wake, and the stop would wait on it for ever), they still reach
    the downstream."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            config = _config(downstream.url, queue_dir=str(tmp_path), queue_fsync=False,
                             shutdown_timeout_s=1)  # fmt: skip
            gateway = Gateway(config)
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            results = [ResultRequest("traces", 1, traces_request("r"))]
            await asyncio.to_thread(gateway._record_scored, [], [], results)
            await _until(lambda: any(p == "/v1/traces" for p, _, _ in downstream.seen), 10)
            traces = [b for p, _, b in downstream.seen if p == "/v1/traces"]
            assert traces == [traces_request("r")]
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 20))

    _in_a_thread(scenario, debug=True)
    assert reports == [ShutdownReport(0, True)]


def test_a_gateway_runs_on_a_loop_outside_the_main_thread() -> None:
    """Signal handlers can only be installed on the main thread's loop; elsewhere (a loop in
    a worker thread, as an embedding application may run it) the gateway serves without them
    and stops on `stop()`; after the stop it no longer says it is accepting."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url, shutdown_timeout_s=2))
            task = asyncio.create_task(gateway.run())
            await _until(lambda: gateway.ready() or task.done())
            assert not task.done(), task.exception()
            assert gateway.health()["accepting"] is True
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 20))
            assert gateway.health()["accepting"] is False

    _in_a_thread(scenario, debug=False)
    assert reports == [ShutdownReport(0, True)]


def test_a_restarted_gateway_replays_what_its_queue_holds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A request an earlier run could not deliver (downstream refusing, deadline passed) stays
    in the persistent queue; the next gateway on that directory reads it back at start,
    counts it as replayed and delivers it unchanged."""
    body = traces_request("kept")

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "30"}, b"")]
            config = _config(downstream.url, queue_dir=str(tmp_path), queue_fsync=False,
                             shutdown_timeout_s=0.3)  # fmt: skip
            first = Gateway(config)
            task = asyncio.create_task(first.run())
            await _until(first.ready)
            async with aiohttp.ClientSession() as session:
                url = f"http://127.0.0.1:{first.http_port}/v1/traces"
                headers = {"Content-Type": CONTENT_PROTOBUF}
                async with session.post(url, data=body, headers=headers) as response:
                    assert response.status == 200
            await _until(lambda: first.forwarder.last_error == "503")
            first.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)
            again = Gateway(config)
            task = asyncio.create_task(again.run())
            await _until(again.ready)
            await _until(lambda: [b for p, _, b in downstream.seen if p == "/v1/traces"] == [
                body, body])  # fmt: skip
            assert again.metrics.count("queue_replayed") == 1
            again.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)

    with caplog.at_level(logging.WARNING, logger="groundwire.gateway"):
        asyncio.run(scenario())
    replaying = [r.getMessage() for r in caplog.records if "replaying" in r.getMessage()]
    assert len(replaying) == 1
    assert "replaying 1 requests left by an earlier run (1 to forward" in replaying[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_receiver_listens_where_it_is_told_with_a_deep_backlog(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The HTTP receiver binds the configured host and port only (another loopback address is
    refused), with a listen backlog of 1024 (as `ss` reads it), and writes no access log line
    per request."""
    port = _free_port()

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url, listen=f"127.0.0.1:{port}"))
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            assert gateway.http_port == port
            async with aiohttp.ClientSession() as session:
                async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                    assert response.status == 200
                with pytest.raises(aiohttp.ClientConnectionError):
                    async with session.get(f"http://127.0.0.2:{port}/readyz"):
                        pass
            listing = await asyncio.to_thread(
                subprocess.run, ["ss", "-Hltn", f"sport = :{port}"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            assert listing.stdout.split()[2] == "1024", listing.stdout
            gateway.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    access = [r.getMessage() for r in caplog.records if r.name.startswith("aiohttp.access")]
    assert [line for line in access if "/readyz" in line] == []  # the downstream's may log


def test_a_request_refused_for_a_full_buffer_is_counted_in_the_health() -> None:
    """The receivers' refusals are counted on the gateway's own metrics: with the downstream
    refusing and the forward buffer full, the next request is answered 503 and `/healthz`
    counts it as `refused:traces:buffer_full`."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "30"}, b"")] * 5
            body = traces_request("full")
            config = _config(downstream.url, buffer_max_bytes=len(body),
                             max_request_bytes=len(body), shutdown_timeout_s=0.3)  # fmt: skip
            gateway = Gateway(config)
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            url = f"http://127.0.0.1:{gateway.http_port}"
            headers = {"Content-Type": CONTENT_PROTOBUF}
            async with aiohttp.ClientSession() as session:
                async with session.post(url + "/v1/traces", data=body, headers=headers) as first:
                    assert first.status == 200
                async with session.post(url + "/v1/traces", data=body, headers=headers) as second:
                    assert second.status == 503
                async with session.get(url + "/healthz") as response:
                    health = await response.json()
            assert health["counts"]["refused:traces:buffer_full"] == 1
            gateway.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(1, True)

    asyncio.run(scenario())
