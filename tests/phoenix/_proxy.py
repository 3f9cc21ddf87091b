"""A real HTTP proxy in front of Phoenix that breaks things on purpose.

It forwards every request to the real server; `corrupt_span` spoils one span of the first page of
the span listing (what a damaged row or a server bug would hand a client), and `die_after_pages`
drops every connection after that many listing pages, then closes the listening socket (Phoenix
going away mid-run); `fail_annotations` answers annotation posts with 503; `throttle` answers the
first listing requests 429 (rate limited).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import httpx

_LISTING = "/spans/otlpv1"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if owner.dead:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)  # gone: no answer at all
            return
        owner.authorization.append(self.headers.get("authorization"))
        owner.arrivals.append(time.monotonic())
        if owner.throttle and _LISTING in self.path:
            owner.throttle -= 1
            self.send_response(429)
            self.send_header("retry-after", "0.2")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if owner.fail_annotations and self.command == "POST" and "span_annotations" in self.path:
            owner.refused_posts += 1
            self.send_error(503, "annotations switched off")
            return
        response = httpx.request(
            self.command,
            f"{owner.upstream}{self.path}",
            content=body,
            headers={"content-type": self.headers.get("content-type", "application/json")},
            timeout=30,
        )
        content = response.content
        listing = _LISTING in self.path and response.status_code == 200
        if listing:
            content = owner.rewrite_page(content)
            owner.page_served()  # before answering: the next request must find the proxy dead
        self.send_response(response.status_code)
        self.send_header("content-type", response.headers.get("content-type", "application/json"))
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: PhoenixProxy


class PhoenixProxy:
    """Forwards to `upstream` on 127.0.0.1:0; optionally corrupts a span or dies mid-listing."""

    def __init__(
        self,
        upstream: str,
        *,
        corrupt_span: int | None = None,
        die_after_pages: int | None = None,
        fail_annotations: bool = False,
        throttle: int = 0,
    ) -> None:
        self.upstream = upstream
        self.throttle = throttle
        """How many listing requests to answer 429 (Retry-After: 0.2) before forwarding."""
        self.arrivals: list[float] = []
        """When each request arrived (monotonic clock)."""
        self.authorization: list[str | None] = []
        """The Authorization header of every request."""
        self.fail_annotations = fail_annotations
        self.refused_posts = 0
        self.dead = False
        self.corrupt_span = corrupt_span
        self.die_after_pages = die_after_pages
        self.pages = 0
        self.corrupted_span_id: str | None = None
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._closed = False

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def rewrite_page(self, content: bytes) -> bytes:
        """Spoil span `corrupt_span` of the first page (its trace id), once."""
        if self.corrupt_span is None or self.corrupted_span_id is not None:
            return content
        body = json.loads(content)
        span = body["data"][self.corrupt_span]
        span["trace_id"] = "not-a-trace-id"
        self.corrupted_span_id = span["span_id"]
        return json.dumps(body).encode()

    def page_served(self) -> None:
        """Count a listing page; close the socket once `die_after_pages` were served."""
        self.pages += 1
        if self.die_after_pages is not None and self.pages >= self.die_after_pages:
            self.dead = True
            threading.Thread(target=self.close, daemon=True).start()

    def close(self) -> None:
        """Stop serving and close the listening socket (connections are then refused)."""
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> PhoenixProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        self._thread.join(timeout=5)
