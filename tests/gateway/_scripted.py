"""A scripted real OTLP/HTTP downstream for in-process gateway tests: an aiohttp server on
127.0.0.1 that keeps every request (path, headers, body) and answers from a script (status,
headers, body), then 200, optionally after a delay (a slow collector)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class HttpDownstream:
    """A real OTLP/HTTP server answering from `script` (status, headers, body), then 200."""

    url: str = ""
    script: list[tuple[int, dict[str, str], bytes]] = field(default_factory=list)
    seen: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    delay_s: float = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append((request.path, dict(request.headers), await request.read()))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        status, headers, body = self.script.pop(0) if self.script else (200, {}, b"")
        return web.Response(status=status, headers=headers, body=body)


@asynccontextmanager
async def http_downstream() -> AsyncIterator[HttpDownstream]:
    downstream = HttpDownstream()
    app = web.Application()
    app.router.add_post("/{tail:.*}", downstream.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    downstream.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield downstream
    finally:
        await runner.cleanup()
