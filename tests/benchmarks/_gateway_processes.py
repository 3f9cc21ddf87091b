"""The gateway benchmark's processes: the sink, the minimal OTLP proxy and `groundwire serve`,
each in its own process on loopback. A process that never gets ready is stopped, not left
behind, and `Process` is a context manager so a part that fails half-way stops what it started.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROTOBUF = "application/x-protobuf"


def sink_main(port_file: str, record: bool) -> None:
    """The downstream: answers 200 at once; with `record`, decodes spans and notes arrivals."""
    from aiohttp import web

    requests = 0
    spans = 0
    carriers = 0
    arrivals: dict[str, int] = {}

    async def post(request: web.Request) -> web.Response:
        nonlocal requests, spans, carriers
        body = await request.read()
        now = time.monotonic_ns()
        requests += 1
        if record and request.path == "/v1/traces":
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

            message = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            for group in message.resource_spans:
                for scope in group.scope_spans:
                    for span in scope.spans:
                        if span.name == "evaluation":
                            carriers += 1
                            continue
                        spans += 1
                        if span.name.startswith("probe-"):
                            arrivals[span.name] = now
        return web.Response(body=b"", content_type=PROTOBUF)

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(
            {"requests": requests, "spans": spans, "carriers": carriers, "arrivals": arrivals}
        )

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/{signal}", post)
    app.router.add_get("/stats", stats)
    _serve(app, port_file)


def proxy_main(port_file: str, downstream: str) -> None:
    """The minimal OTLP proxy: each body posted on as it came, then an empty 200."""
    import aiohttp
    from aiohttp import web

    session: aiohttp.ClientSession | None = None

    async def post(request: web.Request) -> web.Response:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        body = await request.read()
        async with session.post(
            downstream + request.path, data=body, headers={"Content-Type": request.content_type}
        ) as response:
            await response.read()
        return web.Response(body=b"", content_type=PROTOBUF)

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/{signal}", post)
    _serve(app, port_file)


def _serve(app: Any, port_file: str) -> None:
    """Run an aiohttp app on a free loopback port, written to `port_file`."""
    from aiohttp import web

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(run())


class Process:
    """A role or `groundwire serve` in a subprocess, with its port."""

    def __init__(self, args: list[str], port_file: Path | None, log: Path) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        self._log = log.open("wb")
        self.log = log
        self.process = subprocess.Popen(args, stdout=self._log, stderr=self._log, env=env)
        try:
            self.port = self._wait(port_file)
        except BaseException:
            self.stop()  # a child that never got ready is not left running
            raise

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _wait(self, port_file: Path | None) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if port_file is not None and port_file.exists() and port_file.read_text():
                return int(port_file.read_text())
            if port_file is None:
                text = self.log.read_text(errors="replace")
                marker = "gateway ready: http=http://127.0.0.1:"
                if marker in text:
                    return int(text.split(marker, 1)[1].split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(self.log.read_text(errors="replace"))
            time.sleep(0.05)
        raise RuntimeError(f"not ready: {self.log}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        """Resident memory of the process and its children (the scoring process), in MB."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0.0
        for each in [str(pid), *children]:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        return total

    def stop(self) -> None:
        """Terminate (kill after 30 s) and close the log; safe to call twice."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()


def role(name: str, tmp: Path, *args: object) -> Process:
    """`{name}_main` of this module in its own process, on a free loopback port."""
    port_file = tmp / f"{name}-{time.monotonic_ns()}.port"
    call = (
        f"from tests.benchmarks._gateway_processes import {name}_main as m; "
        f"m(*{[str(port_file), *args]!r})"
    )
    return Process([sys.executable, "-c", call], port_file, tmp / f"{name}.log")


def sink(tmp: Path, record: bool) -> Process:
    """The downstream (`sink_main`)."""
    return role("sink", tmp, record)


def gateway(tmp: Path, forward: str, *extra: str, config: dict[str, Any] | None = None) -> Process:
    """`groundwire serve` forwarding to `forward`, once it answers /readyz."""
    args = [sys.executable, "-c", "from groundwire.cli import main; main()", "serve",
            "--listen", "127.0.0.1:0", "--forward", forward, *extra]  # fmt: skip
    if config:
        path = tmp / f"gateway-{time.monotonic_ns()}.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        args += ["--config", str(path)]
    process = Process(args, None, tmp / f"gateway-{time.monotonic_ns()}.log")
    deadline = time.monotonic() + 60
    while True:  # ready: listening and (when on) the scorer is up
        try:
            urllib.request.urlopen(process.url + "/readyz", timeout=5)
            return process
        except OSError:
            if time.monotonic() > deadline:
                process.stop()
                raise RuntimeError(f"gateway not ready in 60 s: {process.log}") from None
            time.sleep(0.1)


def get(url: str) -> Any:
    """The JSON body at `url`."""
    return json.loads(urllib.request.urlopen(url, timeout=30).read())
