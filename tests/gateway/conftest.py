"""Fixtures for the gateway: a real `groundwire serve` process and real downstream receivers.

`RawDownstream` is a real OTLP/HTTP server on loopback that keeps every request as it crossed the
wire (path, headers, body) for all three signals, so tests can check bytes were forwarded
unchanged; it can play a collector that is down (`status`) and be stopped and restarted on its
port. `GatewayProcess` runs `groundwire serve` as a subprocess and reads its bound ports from the
ready line it logs.
"""

from __future__ import annotations

import gc
import gzip
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from groundwire.testing._otlp_decode import ReceivedSpan, decode_spans

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    """`Gateway.run` in a test's process freezes the garbage collector's view of what lives then
    (right for a gateway process); give the test process its collector back afterwards."""
    yield
    gc.unfreeze()


_READY = re.compile(r"gateway ready: http=https?://[^\s:]+:(\d+) grpc=(?:[^\s]+:(\d+)|off)")


@dataclass(frozen=True)
class RawRequest:
    """One request as the downstream received it (body decompressed)."""

    path: str
    headers: dict[str, str]
    body: bytes


class RawDownstream:
    """A real OTLP/HTTP server keeping raw requests; `status` != 200 plays a failing collector."""

    def __init__(self, port: int = 0) -> None:
        self.status = 200
        self.retry_after: str | None = None
        self.script: list[tuple[int, str | None]] = []
        """Answers (status, Retry-After) for the next attempts, one each, before `status`."""
        self._lock = threading.Condition()
        self.requests: list[RawRequest] = []
        self.attempts = 0
        self._port = port
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> Self:
        """Serve on 127.0.0.1 (the same port as before after a restart)."""
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                owner._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving: connections are refused until `start` again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length)
        with self._lock:
            self.attempts += 1
            status, retry_after = self.script.pop(0) if self.script else (self.status, None)
            if retry_after is None:
                retry_after = self.retry_after
        if status != 200:
            handler.send_response(status)
            if retry_after is not None:
                handler.send_header("Retry-After", retry_after)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        if (handler.headers.get("Content-Encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        request = RawRequest(handler.path, dict(handler.headers.items()), body)
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()
        handler.send_response(200)
        handler.send_header("Content-Type", handler.headers.get("Content-Type") or "")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    @property
    def endpoint(self) -> str:
        """Base URL for `--forward`."""
        return f"http://127.0.0.1:{self._port}"

    def bodies(self, path: str) -> list[bytes]:
        """Bodies received on one path."""
        with self._lock:
            return [r.body for r in self.requests if r.path == path]

    def spans(self) -> list[ReceivedSpan]:
        """Every span received (protobuf trace requests), decoded."""
        spans: list[ReceivedSpan] = []
        for request in list(self.requests):
            if request.path != "/v1/traces":
                continue
            message = trace_service_pb2.ExportTraceServiceRequest()
            if "json" in request.headers.get("Content-Type", ""):
                from groundwire.gateway._signals import SIGNALS, decode

                message = decode(SIGNALS["traces"], request.body, "application/json")
            else:
                message.ParseFromString(request.body)
            spans.extend(decode_spans(message))
        return spans

    def wait_for(self, predicate: Callable[[RawDownstream], bool], timeout_s: float = 15) -> bool:
        """Wait until `predicate(self)` holds; False at the timeout."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate(self):
                return True
            time.sleep(0.05)
        return predicate(self)


class GatewayProcess:
    """`groundwire serve` in a subprocess, its stderr in a file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        environment = {**os.environ, **(env or {})}
        environment["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "src"), environment.get("PYTHONPATH", "")]
        )
        self._file = log.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from groundwire.cli import main; main()", "serve", *args],
            stdout=subprocess.DEVNULL,
            stderr=self._file,
            env=environment,
        )
        self.http_port, self.grpc_port = self._wait_ready()

    def _wait_ready(self, timeout_s: float = 30) -> tuple[int, int | None]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            match = _READY.search(self.output())
            if match:
                grpc = int(match.group(2)) if match.group(2) else None
                return int(match.group(1)), grpc
            if self.process.poll() is not None:
                raise RuntimeError(f"groundwire serve exited early:\n{self.output()}")
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"groundwire serve did not become ready:\n{self.output()}")

    def output(self) -> str:
        """What it logged so far."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    @property
    def url(self) -> str:
        """Its OTLP/HTTP base URL."""
        return f"http://127.0.0.1:{self.http_port}"

    def health(self) -> dict[str, Any]:
        """Its `/healthz` document."""
        import json
        import urllib.request

        return json.loads(urllib.request.urlopen(self.url + "/healthz", timeout=5).read())  # type: ignore[no-any-return]

    def wait_health(
        self, predicate: Callable[[dict[str, Any]], bool], timeout_s: float = 10
    ) -> dict[str, Any]:
        """Poll `/healthz` until `predicate` holds (the scoring counts lag up to 0.5 s)."""
        deadline = time.monotonic() + timeout_s
        health = self.health()
        while not predicate(health) and time.monotonic() < deadline:
            time.sleep(0.1)
            health = self.health()
        return health

    def terminate(self, timeout_s: float = 30) -> int:
        """SIGTERM, then wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout_s)
        finally:
            self._file.close()

    def kill(self) -> None:
        """Stop it for good (cleanup)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._file.close()


@pytest.fixture
def downstream() -> Iterator[RawDownstream]:
    """A real downstream OTLP/HTTP receiver."""
    server = RawDownstream().start()
    yield server
    server.stop()


@pytest.fixture
def run_gateway(tmp_path: Path) -> Iterator[Callable[..., GatewayProcess]]:
    """Start `groundwire serve` processes (stopped at the end of the test)."""
    started: list[GatewayProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> GatewayProcess:
        gateway = GatewayProcess(
            ["--listen", "127.0.0.1:0", *args], tmp_path / f"gateway-{len(started)}.log", env
        )
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.kill()
