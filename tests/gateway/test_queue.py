"""The persistent forward queue (`--queue-dir`) through real `groundwire serve` processes: what was
answered 200 survives a SIGKILL and is forwarded after a restart, in order; damaged records are
skipped and counted; a full disk is a 503 with Retry-After, never a crash or a silent loss; a dead
downstream makes the gateway not ready until the queue drains."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.gateway._traces import protobuf_request
from tests.gateway.conftest import GatewayProcess, RawDownstream

pytestmark = pytest.mark.slow  # real `groundwire serve` processes

_FAST_RETRY = {
    "GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.05",
    "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.2",
}


def _post(url: str, body: bytes) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        url + "/v1/traces",
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-protobuf"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), dict(response.headers.items())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items())


def _ready(gateway: GatewayProcess) -> bool:
    try:
        with urllib.request.urlopen(gateway.url + "/readyz", timeout=5) as response:
            return int(response.status) == 200
    except urllib.error.HTTPError:
        return False


def _span_ids(downstream: RawDownstream) -> list[str]:
    return [span.span_id for span in downstream.spans()]


def _expected(indexes: list[int], spans: int = 10) -> list[str]:
    return [f"{index * 1000 + n + 1:016x}" for index in indexes for n in range(spans)]


def _sigkill(gateway: GatewayProcess) -> None:
    gateway.process.kill()
    gateway.process.wait(10)


def test_a_sigkilled_gateway_forwards_every_accepted_request_after_restart_in_order(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """20 requests answered 200 while the downstream is down, then SIGKILL: the restarted
    gateway on the same directory sends all 200 spans, each once, in the order accepted (they
    are queued before it listens, so ahead of the request sent after the restart); the queue
    ends empty."""
    queue = str(tmp_path / "queue")
    downstream.stop()
    first = run_gateway("--forward", downstream.endpoint, "--queue-dir", queue, env=_FAST_RETRY)
    for index in range(20):
        assert _post(first.url, protobuf_request(index))[0] == 200
    _sigkill(first)
    downstream.start()
    second = run_gateway("--forward", downstream.endpoint, "--queue-dir", queue, env=_FAST_RETRY)
    assert _post(second.url, protobuf_request(20))[0] == 200
    assert downstream.wait_for(lambda d: len(d.spans()) >= 210)
    received = _span_ids(downstream)
    assert sorted(received) == sorted(_expected(list(range(21))))  # each once
    replayed = set(_expected(list(range(20))))
    assert [span_id for span_id in received if span_id in replayed] == _expected(list(range(20)))
    health = second.wait_health(lambda h: h["queue"]["records"] == 0)
    assert health["queue"] == {"dir": queue, "bytes": 0, "records": 0}
    assert health["counts"]["queue_replayed"] == 20
    assert "replaying 20 requests left by an earlier run" in second.output()


def test_damaged_records_are_skipped_counted_and_never_stop_the_replay(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """After a SIGKILL one stored request has a flipped byte and the write-ahead log a torn
    (garbage) tail: the restart skips and counts the damaged request, says so in one log line,
    and forwards the other five."""
    queue = tmp_path / "queue"
    downstream.stop()
    first = run_gateway("--forward", downstream.endpoint, "--queue-dir", str(queue))
    for index in range(6):
        assert _post(first.url, protobuf_request(index))[0] == 200
    _sigkill(first)
    with sqlite3.connect(queue / "queue.sqlite3") as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray((queue / "queue.sqlite3").read_bytes())
    at = data.index(b"op-3-4")
    data[at + 3] ^= 0x01  # one bit, inside request 3's body
    (queue / "queue.sqlite3").write_bytes(bytes(data))
    with (queue / "queue.sqlite3-wal").open("ab") as wal:
        wal.write(os.urandom(3000))  # a torn tail: SQLite's frame checksums reject it
    downstream.start()
    second = run_gateway("--forward", downstream.endpoint, "--queue-dir", str(queue))
    assert downstream.wait_for(lambda d: len(d.spans()) >= 50)
    time.sleep(0.3)
    assert _span_ids(downstream) == _expected([0, 1, 2, 4, 5])
    health = second.wait_health(lambda h: h["queue"]["records"] == 0)
    assert health["counts"]["queue_corrupt"] == 1 and health["counts"]["queue_replayed"] == 5
    assert "request #4 is damaged (checksum mismatch); skipped and removed" in second.output()
    assert second.process.poll() is None


def test_a_database_that_is_not_one_is_moved_aside_and_the_gateway_starts(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """A queue file overwritten with garbage: moved aside with a clear log line, a new queue
    is started, requests flow."""
    queue = tmp_path / "queue"
    queue.mkdir()
    (queue / "queue.sqlite3").write_bytes(os.urandom(8192))
    gateway = run_gateway("--forward", downstream.endpoint, "--queue-dir", str(queue))
    assert _post(gateway.url, protobuf_request(1))[0] == 200
    assert downstream.wait_for(lambda d: len(d.spans()) == 10)
    log = gateway.output()
    assert "is damaged" in log and "moved to queue.sqlite3.damaged-" in log
    assert list(queue.glob("queue.sqlite3.damaged-*"))


def test_dead_downstream_makes_it_not_ready_until_the_queue_drains(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """Downstream dead: requests are taken until the bound, then 503 + Retry-After and
    `/readyz` not ready; downstream back: the queue drains, readiness returns, every accepted
    span arrives once."""
    downstream.stop()
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--queue-dir", str(tmp_path / "queue"),
        "--max-request-bytes", "2000",
        env={
            **_FAST_RETRY,
            "GROUNDWIRE_GATEWAY_BUFFER_MAX_BYTES": "8000",
            "GROUNDWIRE_GATEWAY_QUEUE_FSYNC": "false",  # the same, without fsync
        },
    )  # fmt: skip
    accepted = []
    for index in range(40):
        status, headers = _post(gateway.url, protobuf_request(index))
        if status == 200:
            accepted.append(index)
        else:
            assert status == 503 and int(headers["Retry-After"]) >= 1
    assert 3 < len(accepted) < 40
    assert not _ready(gateway)
    downstream.start()
    assert downstream.wait_for(lambda d: len(d.spans()) >= 10 * len(accepted))
    gateway.wait_health(lambda h: h["queue"]["records"] == 0)
    assert _ready(gateway)
    assert Counter(_span_ids(downstream)) == Counter(_expected(accepted))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs: a disk that fills up."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    path = tmp_path / "small"
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(path)])
    if done.returncode != 0:
        pytest.skip("this container may not mount a tmpfs")
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_full_disk_is_a_503_with_retry_after_and_loses_nothing_accepted(
    downstream: RawDownstream,
    run_gateway: Callable[..., GatewayProcess],
    small_disk: Path,
) -> None:
    """The queue's disk fills up while the downstream is down: 503 with Retry-After and one
    clear log line, the gateway keeps running; when the downstream returns every request that
    was answered 200 arrives, once, the queue empties (recording deliveries needs the room kept
    free) and new requests are taken again."""
    downstream.stop()
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--queue-dir", str(small_disk / "queue"),
        "--max-request-bytes", "20000", env=_FAST_RETRY,
    )  # fmt: skip
    accepted, refused = [], 0
    for index in range(1000):
        status, headers = _post(gateway.url, protobuf_request(index, pad=1500))
        if status == 200:
            accepted.append(index)
        else:
            assert status == 503 and int(headers["Retry-After"]) >= 1
            refused += 1
            if refused == 10:
                break
    assert accepted and refused == 10
    log = gateway.output()
    assert "forward queue: refusing new requests (503): the disk of" in log
    assert "is nearly full (the queue keeps" in log
    assert log.count("refusing new requests") == 1  # one line, not one per request
    assert gateway.process.poll() is None
    downstream.start()
    assert downstream.wait_for(lambda d: len(d.spans()) >= 10 * len(accepted))
    time.sleep(0.3)
    assert Counter(_span_ids(downstream)) == Counter(_expected(accepted))
    assert gateway.health()["counts"]["refused:traces:queue_unavailable"] == refused
    # delivered rows are deleted though the disk was full, and the freed space takes new ones
    health = gateway.wait_health(lambda h: h["queue"]["records"] == 0)
    assert health["queue"]["records"] == 0
    assert _post(gateway.url, protobuf_request(5000, pad=1500))[0] == 200
    assert downstream.wait_for(lambda d: len(d.spans()) == 10 * (len(accepted) + 1))


def test_what_a_shutdown_deadline_leaves_stays_on_disk_for_the_next_start(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess], tmp_path: Path
) -> None:
    """SIGTERM with the downstream down: the requests (over HTTP and over gRPC) are not dropped
    but kept, the log says so, exit 0; the next start delivers them."""
    queue = str(tmp_path / "queue")
    downstream.stop()
    args = ("--forward", downstream.endpoint, "--queue-dir", queue, "--grpc", "127.0.0.1:0")
    first = run_gateway(*args, env={"GROUNDWIRE_GATEWAY_SHUTDOWN_TIMEOUT_S": "1"})
    for index in range(3):
        assert _post(first.url, protobuf_request(index))[0] == 200
    with grpc.insecure_channel(f"127.0.0.1:{first.grpc_port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        stub.Export(ExportTraceServiceRequest.FromString(protobuf_request(3)), timeout=10)
    assert first.terminate() == 0
    assert "40 items not forwarded before the deadline are kept in the queue" in first.output()
    assert "dropped 0" in first.output()
    downstream.start()
    run_gateway(*args)
    assert downstream.wait_for(lambda d: len(d.spans()) >= 40)
    assert Counter(_span_ids(downstream)) == Counter(_expected([0, 1, 2, 3]))
