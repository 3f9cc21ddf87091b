"""A real HTTP server on loopback speaking the OpenAI chat-completions protocol, scripted per test.

Point any OpenAI client at `server.base_url` and script what it answers: a queue of `Reply`
objects (or callables `(request_json) -> Reply`) consumed one per request, then a default handler.
Replies can carry any status code, headers (`Retry-After`), a delay, a malformed body or a usage
block. Every request is recorded (`server.requests`), so a test can check what crossed the wire.

    with OpenAIServer() as server:
        server.enqueue(Reply.error(429, headers={"Retry-After": "0"}), structured({"rating": 2}))
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")

The server is threaded (one thread per connection, HTTP/1.1 keep-alive), so concurrency and
latency measured against it are real. The script's parts (`Reply`, `structured`, the
`RecordedRequest`s) live in `_openai_replies`; this module is the server that plays them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from groundwire.testing._openai_replies import RecordedRequest, Reply, ReplySource

__all__ = ["OpenAIServer"]

_NOT_FOUND = Reply.error(404, "only POST /v1/chat/completions is served")


class _Handler(BaseHTTPRequestHandler):
    """Serves one connection: records each request and answers from the owner's script."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each small reply waits ~40 ms for a delayed ACK
    server: _Server

    def do_POST(self) -> None:
        """Read the request, record it, and send the scripted reply."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        recorded = RecordedRequest(
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=raw,
            json=parsed,
            received_at=time.monotonic(),
        )
        owner = self.server.owner
        owner._record(recorded)
        if self.path.rstrip("/").endswith("/chat/completions"):
            reply = owner._next_reply(parsed)
        else:
            reply = _NOT_FOUND
        owner._enter()
        try:
            self._send(reply, owner._stopping)
        finally:
            owner._leave()

    def do_GET(self) -> None:
        """Only chat completions are served."""
        self._send(_NOT_FOUND, self.server.owner._stopping)

    def _send(self, reply: Reply, stopping: threading.Event) -> None:
        """Wait out the reply's delay (unless stopping), then send it; a vanished client is fine."""
        if reply.delay_s > 0 and stopping.wait(reply.delay_s):
            self.close_connection = True
            return
        if reply.body is not None:
            payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
        else:
            payload = json.dumps(reply.json).encode()
        try:
            self.send_response(reply.status)
            headers = {k.lower(): v for k, v in reply.headers.items()}
            self.send_header("Content-Type", headers.pop("content-type", "application/json"))
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read `server.requests` instead of a log."""


class _Server(ThreadingHTTPServer):
    """A threaded HTTP server that knows its `OpenAIServer`."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 256  # the default listen backlog of 5 refuses bursts of connections
    owner: OpenAIServer


class OpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 with scripted replies.

    Replies come from the queue (`enqueue`) first, then from `default` (a reply source); with
    neither, the server answers 500 so a test that runs out of script fails loudly.
    """

    def __init__(
        self, default: ReplySource | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._lock = threading.Lock()
        self._queue: deque[ReplySource] = deque()
        self._default = default
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._host = host
        self._port = port
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self.record_requests = True
        """Set False in long benchmarks so recorded requests do not grow memory."""
        self.request_count = 0
        """How many requests arrived (counted even when not recorded)."""
        self.in_flight = 0
        """Requests being answered right now (waiting out their delay or being sent)."""
        self.max_in_flight = 0
        """The most requests answered at once since start (or `clear`): real concurrency."""

    # --- lifecycle --------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind and serve in a daemon thread; returns self."""
        if self._httpd is not None:
            raise RuntimeError("OpenAIServer is already running")
        self._stopping.clear()
        httpd = _Server((self._host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="groundwire-openai-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed replies still pending are abandoned."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- addresses ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (the server must be running)."""
        if self._httpd is None:
            raise RuntimeError(
                "OpenAIServer is not running; call start() or use it in a with block"
            )
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give an OpenAI client: `http://127.0.0.1:PORT/v1`."""
        return f"http://{self._host}:{self.port}/v1"

    # --- scripting ----------------------------------------------------------------------------

    def enqueue(self, *replies: ReplySource) -> None:
        """Append replies; each request consumes the oldest one."""
        with self._lock:
            self._queue.extend(replies)

    def set_default(self, default: ReplySource | None) -> None:
        """Set the reply source used when the queue is empty."""
        with self._lock:
            self._default = default

    @property
    def pending(self) -> int:
        """Scripted replies not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self._requests.clear()
            self._queue.clear()
            self.request_count = 0
            self.max_in_flight = self.in_flight

    # --- used by the handler ------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        """Count the request and keep it unless recording is off."""
        with self._lock:
            self.request_count += 1
            if self.record_requests:
                self._requests.append(request)

    def _enter(self) -> None:
        """Note one more request being answered."""
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        """Note one request answered."""
        with self._lock:
            self.in_flight -= 1

    def _next_reply(self, request_json: Any) -> Reply:
        """The next scripted reply: the queue, then the default, else a 500 naming the problem."""
        with self._lock:
            source = self._queue.popleft() if self._queue else self._default
        if source is None:
            return Reply.error(500, "OpenAIServer: no scripted reply left for this request")
        if isinstance(source, Reply):
            return source
        try:
            return source(request_json)
        except Exception as error:  # a broken script must show up in the test, not hang it
            return Reply.error(500, f"OpenAIServer: reply callable raised {error!r}")
