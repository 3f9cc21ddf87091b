"""`Gateway` in-process (forwarding only, no scoring child): `run()` on this test's event loop
with both receivers on free ports of 127.0.0.1, a real aiohttp client and a scripted real
OTLP/HTTP downstream; readiness, health, the gauges it watches, a clean stop and one cut by
the deadline; plus the module's helpers (transport choice, TLS context, listen check, queue
opening). A gateway starts and stops in well under a second."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc  # type: ignore[import-untyped]
import pytest
from tests.gateway._in_process import gateway_config as _config
from tests.gateway._scripted import HttpDownstream, http_downstream, traces_request

from groundwire import semconv
from groundwire.gateway import Gateway, ShutdownReport
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._server import _open_queue, _server_ssl, _transport, check_listen
from groundwire.gateway._signals import CONTENT_PROTOBUF, SIGNALS
from groundwire.gateway._transport import GrpcTransport, HttpTransport


def _run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


@asynccontextmanager
async def _running(
    gateway: Gateway, reports: list[ShutdownReport]
) -> AsyncIterator[tuple[Gateway, aiohttp.ClientSession]]:
    """`gateway.run()` as a task until ready; stopped (its report kept) on the way out."""
    task = asyncio.create_task(gateway.run())
    deadline = time.monotonic() + 20
    while not gateway.ready():
        assert not task.done(), task.exception()
        assert time.monotonic() < deadline, "the gateway did not get ready"
        await asyncio.sleep(0.01)
    async with aiohttp.ClientSession() as session:
        try:
            yield gateway, session
        finally:
            gateway.stop()
            reports.append(await asyncio.wait_for(task, 30))


def test_shutdown_report_is_clean_only_with_nothing_left() -> None:
    """Clean needs no item left and scoring drained."""
    assert ShutdownReport(0, True).clean
    assert not ShutdownReport(1, True).clean
    assert not ShutdownReport(0, False).clean


def test_the_forward_scheme_picks_the_transport() -> None:
    """grpc:// forwards with gRPC (plain text), https:// with gRPC's TLS when asked for grpc,
    an http(s) URL with OTLP/HTTP."""
    assert isinstance(_transport(_config("http://127.0.0.1:4318")), HttpTransport)
    grpc_transport = _transport(_config("grpc://127.0.0.1:4317"))
    assert isinstance(grpc_transport, GrpcTransport)
    assert grpc_transport._target == "127.0.0.1:4317"
    assert grpc_transport._secure is False
    http = _transport(_config("http://127.0.0.1:4318/", forward_headers="x-a=1",
                              forward_timeout_s=3, forward_compression="gzip"))  # fmt: skip
    assert isinstance(http, HttpTransport)
    assert (http._base, http._headers, http._timeout_s, http._gzip) == (
        "http://127.0.0.1:4318",
        {"x-a": "1"},
        3.0,
        True,
    )


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    directory = tmp_path_factory.mktemp("tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1")  # fmt: skip
    return cert, key


def test_the_receiver_tls_context(certificate: tuple[Path, Path]) -> None:
    """No certificate: no TLS. A certificate and key: a server context that does not ask for
    client certificates; with a client CA too, one that requires them."""
    cert, key = certificate
    assert _server_ssl(_config("http://127.0.0.1:9")) is None
    plain = _server_ssl(
        _config("http://127.0.0.1:9", tls_cert_file=str(cert), tls_key_file=str(key))
    )
    assert plain is not None
    assert plain.verify_mode == ssl.CERT_NONE
    strict = _server_ssl(
        _config("http://127.0.0.1:9", tls_cert_file=str(cert), tls_key_file=str(key),
                tls_client_ca_file=str(cert))
    )  # fmt: skip
    assert strict is not None
    assert strict.verify_mode == ssl.CERT_REQUIRED
    assert strict.get_ca_certs()[0]["subject"] == ((("commonName", "127.0.0.1"),),)


def test_an_address_in_use_is_refused_before_anything_starts() -> None:
    """check_listen binds each address once: one in use (HTTP or gRPC) is an OSError naming it;
    port 0 and an unset gRPC address are not checked; a free address passes and stays free."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(OSError, match="already in use") as error:
            check_listen(_config("http://127.0.0.1:9", listen=address))
        assert error.value.errno == errno.EADDRINUSE
        assert error.value.strerror == f"{address}: {os.strerror(errno.EADDRINUSE)}"
        with pytest.raises(OSError, match=rf"^\[Errno \d+\] {address}: "):
            check_listen(_config("http://127.0.0.1:9", grpc_listen=address))
    check_listen(_config("http://127.0.0.1:9", listen="127.0.0.1:0", grpc_listen="127.0.0.1:0"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = f"127.0.0.1:{probe.getsockname()[1]}"
    check_listen(_config("http://127.0.0.1:9", listen=free))
    with socket.socket() as again:
        again.bind(("127.0.0.1", int(free.rsplit(":", 1)[1])))


def test_an_ipv6_address_in_use_is_refused() -> None:
    """A bracketed IPv6 listen address is checked on an IPv6 socket."""
    with socket.socket(socket.AF_INET6) as taken:
        try:
            taken.bind(("::1", 0))
        except OSError:
            pytest.skip("no IPv6 loopback on this machine")
        taken.listen()
        address = f"[::1]:{taken.getsockname()[1]}"
        with pytest.raises(OSError, match=r"^\[Errno \d+\] \[::1\]:\d+: "):
            check_listen(_config("http://127.0.0.1:9", listen=address))


def test_the_queue_is_opened_from_queue_dir(tmp_path: Path) -> None:
    """No queue_dir: no queue. A directory: a queue keeping scored ids at least 120 s (or
    four times max_wait_s), reserving 1 MiB plus one largest request, with the fsync option;
    a path that cannot hold it is a ValueError naming it."""
    assert _open_queue(_config("http://127.0.0.1:9")) is None
    queue = _open_queue(
        _config("http://127.0.0.1:9", queue_dir=str(tmp_path / "q"), max_wait_s=10,
                max_request_bytes=1000, queue_fsync=False)
    )  # fmt: skip
    assert queue is not None
    assert queue.directory == tmp_path / "q"
    assert queue.keep_scored_s == 120.0
    assert queue.room.reserve_bytes == (1 << 20) + 1000
    assert queue.fsync is False
    queue.close()
    longer = _open_queue(
        _config("http://127.0.0.1:9", queue_dir=str(tmp_path / "r"), max_wait_s=40)
    )
    assert longer is not None
    assert longer.keep_scored_s == 160.0
    assert longer.fsync is True
    longer.close()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match=f"^queue_dir: cannot open the queue in {blocker}/q: "):
        _open_queue(_config("http://127.0.0.1:9", queue_dir=str(blocker / "q")))


def test_a_gateway_serves_forwards_and_stops_clean(caplog: pytest.LogCaptureFixture) -> None:
    """Running: ready, both receivers take requests, which reach the downstream unchanged;
    /readyz and /healthz answer with the state; the gauges read the buffer. Stopped: not ready,
    nothing left, the ready and stopped lines logged."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            config = _config(downstream.url, grpc_listen="127.0.0.1:0", buffer_max_bytes=1000,
                             max_request_bytes=500, shutdown_timeout_s=5)  # fmt: skip
            gateway = Gateway(config)
            assert not gateway.ready()
            async with _running(gateway, reports) as (gateway, session):
                base = f"http://127.0.0.1:{gateway.http_port}"
                headers = {"Content-Type": CONTENT_PROTOBUF}
                async with session.post(
                    base + "/v1/traces", data=traces_request("h"), headers=headers
                ):
                    pass
                assert gateway.grpc_port is not None
                async with grpc.aio.insecure_channel(f"127.0.0.1:{gateway.grpc_port}") as channel:
                    call = channel.unary_unary(SIGNALS["traces"].grpc_method)
                    assert await call(traces_request("g"), timeout=10) == b""
                await _until(lambda: len(_bodies(downstream)) == 2)
                assert sorted(_bodies(downstream)) == sorted(
                    [traces_request("h"), traces_request("g")]
                )
                async with session.get(base + "/readyz") as response:
                    assert (response.status, await response.json()) == (200, {"ready": True})
                async with session.get(base + "/healthz") as response:
                    health = await response.json()
                assert health["status"] == "ok"
                assert health["accepting"] is True
                assert health["counts"]["received:traces"] == 2
                assert {"uptime_s", "buffered_requests", "buffered_bytes",
                        "downstream_error"} <= set(health)  # fmt: skip
                assert "queue" not in health
                assert "scoring_process" not in health
                metrics = gateway.metrics
                assert metrics.gauge(semconv.METRIC_GATEWAY_QUEUE_CAPACITY) == 1000
                assert metrics.gauge(semconv.METRIC_GATEWAY_OPEN_TRACES) == 0
            assert not gateway.ready()

    with caplog.at_level(logging.INFO, logger="groundwire.gateway"):
        _run(scenario)
    assert reports == [ShutdownReport(0, True)]
    lines = [r.getMessage() for r in caplog.records]
    ready = [line for line in lines if line.startswith("groundwire gateway ready: ")]
    assert len(ready) == 1
    assert ready[0].startswith("groundwire gateway ready: http=http://127.0.0.1:")
    assert " grpc=127.0.0.1:" in ready[0]
    assert ready[0].endswith(" forward=http/protobuf evaluators=none")
    assert "shutting down: no new requests; forwarding and scoring what is held" in lines
    stopped = [line for line in lines if line.startswith("stopped: ")]
    assert len(stopped) == 1
    assert stopped[0].endswith("; nothing left behind")


def _bodies(downstream: HttpDownstream) -> list[bytes]:
    """Bodies the downstream got on /v1/traces (the gateway's own metrics go elsewhere)."""
    return [body for path, _, body in downstream.seen if path == "/v1/traces"]


async def _until(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_readiness_follows_the_buffer_and_the_gauges_read_it() -> None:
    """With the downstream refusing (503), what is held stays in the buffer: the gauges read
    it, and past 90 % of buffer_max_bytes the gateway is not ready (503 on /readyz); gRPC is
    off (`grpc=off`)."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "30"}, b"")] * 5
            body = traces_request("x" * 80)
            config = _config(downstream.url, buffer_max_bytes=10 * len(body),
                             max_request_bytes=len(body), shutdown_timeout_s=0.3)  # fmt: skip
            gateway = Gateway(config)
            async with _running(gateway, reports) as (gateway, session):
                assert gateway.grpc_port is None
                base = f"http://127.0.0.1:{gateway.http_port}"
                headers = {"Content-Type": CONTENT_PROTOBUF}
                for sent in range(1, 10):
                    async with session.post(base + "/v1/traces", data=body, headers=headers):
                        pass
                    held = gateway.metrics.gauge(semconv.METRIC_GATEWAY_QUEUE_BYTES)
                    assert held == sent * len(body)
                    assert gateway.metrics.gauge(semconv.METRIC_GATEWAY_QUEUE_SIZE) == sent
                    assert gateway.ready() == (sent < 9), sent
                async with session.get(base + "/readyz") as response:
                    assert response.status == 503
                async with session.get(base + "/healthz") as response:
                    health = await response.json()
                assert health["downstream_error"] == "503"
                assert health["buffered_requests"] == 9

    _run(scenario)
    assert reports == [ShutdownReport(9, True)]
    assert not reports[0].clean


def test_a_stop_cut_by_the_deadline_reports_what_is_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Downstream down at shutdown: the report counts the items left and the stopped line says
    so, within shutdown_timeout_s."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "30"}, b"")]
            gateway = Gateway(_config(downstream.url, shutdown_timeout_s=0.3))
            async with _running(gateway, reports) as (gateway, session):
                base = f"http://127.0.0.1:{gateway.http_port}"
                headers = {"Content-Type": CONTENT_PROTOBUF}
                async with session.post(
                    base + "/v1/traces", data=traces_request("a", "b"), headers=headers
                ):
                    pass
                await _until(lambda: gateway.forwarder.last_error == "503")
                stopping = time.monotonic()
            assert time.monotonic() - stopping < 4

    with caplog.at_level(logging.INFO, logger="groundwire.gateway"):
        _run(scenario)
    assert reports == [ShutdownReport(2, True)]
    stopped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stopped: ")]
    assert len(stopped) == 1
    assert stopped[0].endswith("; 2 items left unforwarded")


def test_with_a_queue_the_health_shows_it_and_the_gauges_read_it(tmp_path: Path) -> None:
    """With queue_dir, /healthz has the queue (dir, bytes, records) and the disk gauges read
    it; what the deadline leaves is kept on disk, so nothing counts as left."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "30"}, b"")]
            config = _config(downstream.url, queue_dir=str(tmp_path), queue_fsync=False,
                             shutdown_timeout_s=0.3)  # fmt: skip
            gateway = Gateway(config)
            async with _running(gateway, reports) as (gateway, session):
                base = f"http://127.0.0.1:{gateway.http_port}"
                headers = {"Content-Type": CONTENT_PROTOBUF}
                body = traces_request("q")
                async with session.post(base + "/v1/traces", data=body, headers=headers):
                    pass
                assert gateway.queue is not None
                await asyncio.to_thread(gateway.queue.sync)
                async with session.get(base + "/healthz") as response:
                    health = await response.json()
                assert health["queue"] == {"dir": str(tmp_path), "bytes": len(body),
                                           "records": 1}  # fmt: skip
                metrics = gateway.metrics
                assert metrics.gauge(semconv.METRIC_GATEWAY_DISK_BYTES) == len(body)
                assert metrics.gauge(semconv.METRIC_GATEWAY_DISK_RECORDS) == 1

    _run(scenario)
    assert reports == [ShutdownReport(0, True)]


def test_committed_results_are_counted_and_forwarded(tmp_path: Path) -> None:
    """With a queue, the scoring report (`_record_scored`, as the scoring process's reader
    thread calls it) commits the evaluation results to disk, counts them as queued results and
    hands them to the forwarder, which delivers them downstream and releases their rows."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            config = _config(downstream.url, queue_dir=str(tmp_path), queue_fsync=False)
            gateway = Gateway(config)
            async with _running(gateway, reports) as (gateway, _):
                results = [ResultRequest("traces", 2, traces_request("e1", "e2")),
                           ResultRequest("logs", 1, b"\x0a\x00")]  # fmt: skip
                await asyncio.to_thread(gateway._record_scored, [], ["ab" * 16], results)
                await _until(lambda: len(_bodies(downstream)) == 1)
                await _until(lambda: any(p == "/v1/logs" for p, _, _ in downstream.seen))
                assert _bodies(downstream) == [traces_request("e1", "e2")]
                counts = gateway.metrics.snapshot()
                assert counts["queue_results:traces"] == 2
                assert counts["queue_results:logs"] == 1
                assert "received:traces" not in counts
                assert gateway.queue is not None
                await _until(lambda: gateway.queue is not None and gateway.queue.held_records == 0)
                assert "ab" * 16 in gateway.queue.scored_recently()

    _run(scenario)
    assert reports == [ShutdownReport(0, True)]


def test_sigint_stops_a_running_gateway() -> None:
    """`run` installs handlers for SIGTERM and SIGINT on its loop: a SIGINT ends it with a
    report instead of interrupting the process."""
    reports: list[ShutdownReport] = []

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url, shutdown_timeout_s=1))
            task = asyncio.create_task(gateway.run())
            await _until(gateway.ready)
            os.kill(os.getpid(), signal.SIGINT)
            reports.append(await asyncio.wait_for(task, 10))
            gateway2 = Gateway(_config(downstream.url, shutdown_timeout_s=1))
            task = asyncio.create_task(gateway2.run())
            await _until(gateway2.ready)
            os.kill(os.getpid(), signal.SIGTERM)
            reports.append(await asyncio.wait_for(task, 10))

    _run(scenario)
    assert reports == [ShutdownReport(0, True), ShutdownReport(0, True)]
