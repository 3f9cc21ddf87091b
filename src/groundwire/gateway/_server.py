"""`Gateway`: wires receivers, forwarder and scorer on one asyncio loop, and shuts down cleanly.

On SIGTERM or SIGINT it stops being ready, stops accepting (in-flight requests finish), forwards
what it holds, scores the open traces and the queued turns, flushes the evaluation telemetry, all
within `shutdown_timeout_s`, and logs what it left (counted as `shutdown` drops; with a
persistent queue, kept on disk for the next start). With `queue_dir` it first replays what the
queue holds from an earlier run (delivered downstream, and scored, before any new request).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import socket
import sqlite3
import ssl
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundwire import semconv
from groundwire.gateway._config import GatewayConfig, parse_hostport
from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._http import build_app
from groundwire.gateway._intake import Intake
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._replay import forward_results, replay, summary_loop, summary_text
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._telemetry import Providers, build_providers, grpc_target
from groundwire.gateway._transport import GrpcTransport, HttpTransport, Transport
from groundwire.gateway._worker import ScoringProcess, check_evaluators

__all__ = ["Gateway", "ShutdownReport"]

logger = logging.getLogger("groundwire.gateway")

_READY_BUFFER_SHARE = 0.9
"""Not ready once the forward buffer (or the persistent queue) is this full: a load balancer
should send elsewhere."""


@dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What a shutdown left behind."""

    items_left: int
    """Accepted items not forwarded before the deadline (counted as dropped, `shutdown`)."""
    scoring_drained: bool
    """True when every open trace and queued turn was scored in time."""

    @property
    def clean(self) -> bool:
        """Nothing left behind."""
        return self.items_left == 0 and self.scoring_drained


def _transport(config: GatewayConfig) -> Transport:
    """HTTP or gRPC forwarding, from the scheme of `forward`."""
    common: dict[str, Any] = {
        "headers": config.forward_headers,
        "timeout_s": config.forward_timeout_s,
        "compression": config.forward_compression,
        "ca_file": config.forward_ca_file,
    }
    if config.forward_protocol == "grpc":
        target, secure = grpc_target(config.forward)
        return GrpcTransport(target, secure=secure, **common)
    return HttpTransport(config.forward, **common)


def _server_ssl(config: GatewayConfig) -> ssl.SSLContext | None:
    """The receiver's TLS context (client certificates required when a client CA is set)."""
    if not config.tls_cert_file or not config.tls_key_file:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    if config.tls_client_ca_file:
        context.load_verify_locations(config.tls_client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


_DISK_RESERVE_BYTES = 1 << 20
"""Disk kept free under the persistent queue (plus one largest request): recording that requests
were delivered needs a little room, and it is what frees the rest."""


def check_listen(config: GatewayConfig) -> None:
    """Bind the listen addresses once and let go: an address in use is an OSError now, before
    any exporter or process is started (no retry noise on the way out)."""
    for address in (config.listen, config.grpc_listen):
        if address is None:
            continue
        host, port = parse_hostport(address)
        if port == 0:
            continue
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do
            try:
                probe.bind((host, port))
            except OSError as error:
                raise OSError(error.errno, f"{address}: {error.strerror}") from None


def _open_queue(config: GatewayConfig) -> DiskQueue | None:
    """The persistent queue of `queue_dir`, or None; a directory that cannot be used is a
    ValueError naming it. Scored trace ids are kept as long as a stored request can still hold
    spans of them: a request waits for scoring at most about `max_wait_s` after its traces'
    first spans."""
    if config.queue_dir is None:
        return None
    try:
        return DiskQueue(
            Path(config.queue_dir),
            keep_scored_s=max(120.0, 4 * config.max_wait_s),
            reserve_bytes=_DISK_RESERVE_BYTES + config.max_request_bytes,
            fsync=config.queue_fsync,
        )
    except (OSError, sqlite3.Error) as error:
        raise ValueError(
            f"queue_dir: cannot open the queue in {config.queue_dir}: {error}"
        ) from None


class Gateway:
    """One gateway process: `await run()` serves until `stop()` (or a signal), then drains."""

    def __init__(self, config: GatewayConfig) -> None:
        """Build the parts (nothing listens until `run`)."""
        self.config = config
        check_listen(config)
        self.queue = _open_queue(config)
        self.providers: Providers = build_providers(config)
        self.metrics = GatewayMetrics(self.providers.meter_provider)
        self.forwarder = Forwarder(_transport(config), self.metrics, config, store=self.queue)
        self.scorer: ScoringProcess | None = None
        if config.evaluation:
            check_evaluators(config)
            scored: set[str] = set()
            if self.queue is not None:
                scored = self.queue.scored_recently()
            self.scorer = ScoringProcess(
                config,
                self.metrics,
                scored=scored,
                on_scored=None if self.queue is None else self._record_scored,
            )
        self.intake = Intake(self.forwarder, self.scorer, self.metrics, self.queue)
        self.metrics.watch(
            semconv.METRIC_GATEWAY_QUEUE_SIZE, lambda: self.forwarder.buffered_requests
        )
        self.metrics.watch(
            semconv.METRIC_GATEWAY_QUEUE_BYTES, lambda: self.forwarder.buffered_bytes
        )
        self.metrics.watch(semconv.METRIC_GATEWAY_QUEUE_CAPACITY, lambda: config.buffer_max_bytes)
        if self.queue is not None:
            queue = self.queue
            self.metrics.watch(semconv.METRIC_GATEWAY_DISK_BYTES, lambda: queue.held_bytes)
            self.metrics.watch(semconv.METRIC_GATEWAY_DISK_RECORDS, lambda: queue.held_records)
        self.metrics.watch(
            semconv.METRIC_GATEWAY_OPEN_TRACES,
            lambda: self.scorer.open_traces if self.scorer is not None else 0,
        )
        self.http_port: int | None = None
        self.grpc_port: int | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._accepting = False
        self._started = time.monotonic()

    # --- state -----------------------------------------------------------------------------------

    def ready(self) -> bool:
        """Taking requests with room to spare in the forward buffer and the persistent queue
        (below the high mark), and scoring (when on)."""
        held = self.forwarder.buffered_bytes
        if self.queue is not None:
            held = max(held, self.queue.held_bytes)
        share = held / self.config.buffer_max_bytes
        scoring = self.scorer is None or self.scorer.started
        return self._accepting and share < _READY_BUFFER_SHARE and scoring

    def health(self) -> dict[str, Any]:
        """Counters and state, for `/healthz` (no content, no secrets)."""
        out: dict[str, Any] = {
            "status": "ok",
            "uptime_s": round(time.monotonic() - self._started, 3),
            "accepting": self._accepting,
            "buffered_requests": self.forwarder.buffered_requests,
            "buffered_bytes": self.forwarder.buffered_bytes,
            "downstream_error": self.forwarder.last_error,
            "counts": self.metrics.snapshot(),
        }
        if self.queue is not None:
            out["queue"] = {
                "dir": str(self.queue.directory),
                "bytes": self.queue.held_bytes,
                "records": self.queue.held_records,
            }
        if self.scorer is not None:
            child = self.scorer.last
            out["scoring_process"] = "running" if self.scorer.alive else "stopped"
            out["open_traces"] = child.get("open_traces", 0)
            out["scoring_queue"] = self.scorer.queued_requests
            out["turns"] = dict(child.get("turns", {}))
        return out

    def stop(self) -> None:
        """Ask `run` to shut down (thread-safe from the loop's own thread only)."""
        if self._stop is not None:
            self._stop.set()

    def _record_scored(
        self, done: list[int], trace_ids: list[str], results: Sequence[ResultRequest] = ()
    ) -> None:
        """The scoring process's report (on its reader thread): commit the requests done for
        scoring, the traces scored and their evaluation results in one transaction, then hand
        the results to the forwarder like accepted requests (on the loop's thread)."""
        assert self.queue is not None
        committed = self.queue.scored(done, trace_ids, results)
        if results:
            committed.add_done_callback(lambda future: self._results_committed(results, future))

    def _results_committed(
        self, results: Sequence[ResultRequest], future: Future[list[int]]
    ) -> None:
        """Evaluation results are on disk (rows `future.result()`): count them and hand them
        to the forwarder. Not committed (the queue logged why): nothing to forward."""
        if future.exception() is not None:
            return
        for result in results:
            self.metrics.queued_results(result.signal, result.items)
        forward_results(self._loop, self.forwarder, results, future.result())

    # --- lifecycle -------------------------------------------------------------------------------

    async def run(self) -> ShutdownReport:
        """Listen, serve until stopped, then drain within the deadline."""
        from aiohttp import web

        config = self.config
        self._stop = asyncio.Event()
        loop = self._loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self._stop.set)
        if self.queue is not None:
            replay(self.queue, self.forwarder, self.scorer, self.metrics)
        self.forwarder.start()
        app = build_app(self.intake, config, health=self.health, ready=self.ready)
        # a request still arriving at the stop gets what gRPC's calls get: 2 s, or a quarter of a
        # shorter deadline, so a slow upload never holds the stop past shutdown_timeout_s
        grace = min(2.0, config.shutdown_timeout_s / 4)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=grace)
        await runner.setup()
        host, port = parse_hostport(config.listen)
        site = web.TCPSite(runner, host, port, ssl_context=_server_ssl(config), backlog=1024)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.http_port = int(sockets[0].getsockname()[1]) if sockets else port
        grpc_server = None
        if config.grpc_listen is not None:
            from groundwire.gateway._grpc import start_grpc_server

            grpc_server, self.grpc_port = await start_grpc_server(self.intake, config)
        # Everything built so far lives as long as the process: keep it out of the collector's
        # full passes, which otherwise stall the loop for a long time every few seconds.
        gc.collect()
        gc.freeze()
        self._accepting = True
        scheme = "https" if config.tls_cert_file else "http"
        grpc_text = f"{host}:{self.grpc_port}" if self.grpc_port else "off"
        logger.info(
            "groundwire gateway ready: http=%s://%s:%d grpc=%s forward=%s evaluators=%s",
            scheme,
            host,
            self.http_port,
            grpc_text,
            config.forward_protocol,
            ",".join(config.evaluators) or "none",
        )
        summary = asyncio.create_task(
            summary_loop(self.metrics, config.summary_interval_s), name="gateway-summary"
        )
        await self._stop.wait()
        summary.cancel()
        return await self._shutdown(runner, grpc_server)

    async def _shutdown(self, runner: Any, grpc_server: Any) -> ShutdownReport:
        """Stop accepting, then forward and score what is held, all before the deadline."""
        timeout = self.config.shutdown_timeout_s
        deadline = time.monotonic() + timeout
        logger.info("shutting down: no new requests; forwarding and scoring what is held")
        self._accepting = False
        closing = [runner.cleanup()]
        if grpc_server is not None:
            closing.append(grpc_server.stop(grace=min(2.0, timeout / 4)))
        await asyncio.gather(*closing, return_exceptions=True)
        scoring = None
        if self.scorer is not None:
            scorer = self.scorer
            scoring = asyncio.create_task(
                asyncio.to_thread(scorer.shutdown, max(0.0, deadline - time.monotonic() - 0.5))
            )
        drained = True
        if scoring is not None and self.queue is not None:
            # the last results are committed to the queue, then forwarded with the rest
            drained = await scoring
            scoring = None
            await asyncio.to_thread(self.queue.sync)
        left = await self.forwarder.drain(deadline)
        if scoring is not None:
            drained = await scoring
        await asyncio.to_thread(self.providers.shutdown, max(0.5, deadline - time.monotonic()))
        report = ShutdownReport(left, drained)
        if self.queue is not None:
            await asyncio.to_thread(self.queue.close)
        logger.info(
            "stopped: %s; %s",
            summary_text(self.metrics),
            "nothing left behind"
            if report.clean
            else f"{left} items left unforwarded"
            + ("" if drained else "; scoring cut by the deadline"),
        )
        return report
