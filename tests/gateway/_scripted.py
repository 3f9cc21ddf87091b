"""A scripted real OTLP/HTTP downstream for in-process gateway tests: an aiohttp server on
127.0.0.1 that keeps every request (path, headers, body) and answers from a script (status,
headers, body), then 200, optionally after a delay (a slow collector), optionally over TLS;
and `make_certificates` for such TLS tests."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


@dataclass
class HttpDownstream:
    """A real OTLP/HTTP server answering from `script` (status, headers, body), then 200."""

    url: str = ""
    script: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    seen: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    delay_s: float = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        """Keep the request; answer the next scripted answer (200 when the script is out)."""
        self.seen.append((request.path, dict(request.headers), await request.read()))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        status, headers, body = self.script.pop(0) if self.script else (200, {}, b"")
        return web.Response(status=status, headers=headers, body=body)


@asynccontextmanager
async def http_downstream(tls: ssl.SSLContext | None = None) -> AsyncIterator[HttpDownstream]:
    """A scripted downstream serving on a free port of 127.0.0.1 (https with `tls`)."""
    downstream = HttpDownstream()
    app = web.Application()
    app.router.add_post("/{tail:.*}", downstream.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    scheme = "https" if tls is not None else "http"
    downstream.url = f"{scheme}://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield downstream
    finally:
        await runner.cleanup()


def make_certificates(directory: Path) -> dict[str, Path]:
    """A CA (`ca.pem`) and a server certificate for 127.0.0.1 signed by it (`server.pem`,
    `server.key`), made with openssl (EC P-256: fast)."""

    def openssl(*args: str | Path) -> None:
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)

    paths = {name: directory / name for name in ("ca.key", "ca.pem", "san.ext", "server.key",
                                                 "server.csr", "server.pem")}  # fmt: skip
    paths["san.ext"].write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    openssl("req", "-x509", *ec, "-keyout", paths["ca.key"], "-out", paths["ca.pem"],
            "-days", "1", "-subj", "/CN=test-ca")  # fmt: skip
    openssl("req", *ec, "-keyout", paths["server.key"], "-out", paths["server.csr"],
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    openssl("x509", "-req", "-in", paths["server.csr"], "-CA", paths["ca.pem"], "-CAkey",
            paths["ca.key"], "-CAcreateserial", "-out", paths["server.pem"], "-days", "1",
            "-extfile", paths["san.ext"])  # fmt: skip
    return paths


def traces_request(*names: str) -> bytes:
    """A protobuf OTLP traces request (`ExportTraceServiceRequest`) with one span per name."""
    message = trace_service_pb2.ExportTraceServiceRequest()
    spans = message.resource_spans.add().scope_spans.add().spans
    for name in names:
        spans.add(name=name)
    return bytes(message.SerializeToString())
