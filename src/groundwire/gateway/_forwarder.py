"""The forwarder: a bounded retry buffer and sender tasks that pass requests on, unchanged
(binary-protobuf requests queued behind each other are joined into one; see `Forwarder._merged`).

Every accepted request is appended to one buffer, bounded in bytes; `offer` refuses (the receiver
answers 503 with Retry-After) rather than growing it. Sender tasks post buffered requests
downstream as they were received. A retryable failure (connection error, timeout, 429/502/503/504
or the gRPC equivalents) puts the request back at the head and closes a shared gate for a backoff
that doubles per consecutive failure (jittered, capped), or for the downstream's Retry-After;
one success reopens it. A request older than `retry_max_elapsed_s`, or refused for good
(another 4xx), is dropped, counted by reason and logged, never silently lost; at shutdown what is
left after the deadline is counted as `shutdown`. With a persistent queue (`store`) a request
leaves the disk only when delivered or given up for good; what shutdown leaves stays on disk for
the next start (logged, not dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from typing import Final

from groundwire.gateway._config import GatewayConfig
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._signals import CONTENT_PROTOBUF
from groundwire.gateway._transport import Batch, Transport

__all__ = ["MERGE_MAX_BYTES", "Forwarder", "backoff_s"]

logger = logging.getLogger("groundwire.gateway")

MERGE_MAX_BYTES: Final = 1024 * 1024
"""The largest request made by joining queued protobuf requests (downstream limits are larger:
the Collector's OTLP receivers take 4 MiB over gRPC and 20 MiB over HTTP by default)."""


def backoff_s(failures: int, initial_s: float, max_s: float) -> float:
    """The wait after `failures` consecutive failures: doubling from `initial_s`, jittered by
    +-20 %, and never above `max_s` (the jitter is applied inside the cap, not after it)."""
    backoff: float = initial_s * 2 ** min(failures - 1, 60) * random.uniform(0.8, 1.2)
    return min(max_s, backoff)


class Forwarder:
    """The bounded retry buffer and its sender tasks (all on one asyncio loop)."""

    def __init__(
        self,
        transport: Transport,
        metrics: GatewayMetrics,
        config: GatewayConfig,
        *,
        store: DiskQueue | None = None,
    ) -> None:
        """Bound the buffer at `config.buffer_max_bytes`, `config.senders` requests in flight
        at once, retried as its `retry_*` options say; `store`: the persistent queue holding
        each buffered request's copy on disk."""
        self._transport = transport
        self._metrics = metrics
        self._max_bytes = config.buffer_max_bytes
        self._senders = config.senders
        self._initial = config.retry_initial_s
        self._max_backoff = config.retry_max_s
        self._max_elapsed = config.retry_max_elapsed_s
        self._queue: deque[Batch] = deque()
        self._bytes = 0
        self._in_flight = 0
        self._failures = 0
        self._gate_until = 0.0
        self._wake: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._store = store
        self.kept = 0
        """Items left at shutdown and kept in the persistent queue for the next start."""
        self.last_error: str | None = None
        """The last downstream failure (status or error name), None after a success."""

    # --- the receiving side ----------------------------------------------------------------------

    @property
    def buffered_bytes(self) -> int:
        """Bytes held (queued and in flight)."""
        return self._bytes

    @property
    def buffered_requests(self) -> int:
        """Requests held (queued and in flight)."""
        return len(self._queue) + self._in_flight

    @property
    def retry_after_s(self) -> int:
        """What to tell a refused sender: the time until the gate opens (at least 1 s)."""
        return max(1, int(self._gate_until - time.monotonic() + 0.999))

    def has_room(self, size: int, held: int = 0) -> bool:
        """True when `size` more bytes fit in the buffer (beside `held` bytes held elsewhere
        under the same bound: the persistent queue's requests waiting only for scoring)."""
        return not self._stopping and max(self._bytes, held) + size <= self._max_bytes

    def offer(self, batch: Batch) -> bool:
        """Take a batch for forwarding; False (nothing taken) when the buffer is full."""
        if not self.has_room(batch.size):
            return False
        self._queue.append(batch)
        self._bytes += batch.size
        self._metrics.received(batch.signal.name, batch.items)
        if self._wake is not None:
            self._wake.set()
        return True

    def restore(self, batch: Batch) -> None:
        """Queue a batch of the persistent queue: one read back at start (ahead of new requests),
        or evaluation results just committed there. Not counted as received, and not refused:
        it is on disk already."""
        self._queue.append(batch)
        self._bytes += batch.size
        if self._wake is not None:
            self._wake.set()

    # --- the sending side ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the sender tasks on the running loop."""
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks = [
            asyncio.create_task(self._sender(), name=f"gateway-sender-{index}")
            for index in range(self._senders)
        ]

    async def _next(self) -> Batch:
        """The next batch to send, once the gate is open."""
        assert self._wake is not None
        while True:
            delay = self._gate_until - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
                continue
            if self._queue:
                return self._merged(self._queue.popleft())
            self._wake.clear()
            await self._wake.wait()

    def _merged(self, batch: Batch) -> Batch:
        """`batch` joined with the binary-protobuf requests of its signal queued right behind
        it, up to `MERGE_MAX_BYTES`: one downstream request instead of several.

        Concatenated protobuf messages parse as one message whose repeated fields hold all of
        theirs, so the spans, points and records go on byte for byte. Retried requests are
        not merged (each keeps its own age for `retry_max_elapsed_s`), nor is JSON.
        """
        queue = self._queue
        if batch.content_type != CONTENT_PROTOBUF or batch.attempts or not queue:
            return batch
        parts, size, items = [batch], batch.size, batch.items
        while queue:
            head = queue[0]
            if (
                head.signal is not batch.signal
                or head.content_type != CONTENT_PROTOBUF
                or head.attempts
                or size + head.size > MERGE_MAX_BYTES
            ):
                break
            parts.append(queue.popleft())
            size += head.size
            items += head.items
        if len(parts) == 1:
            return batch
        body = b"".join(part.body for part in parts)
        seqs = tuple(seq for part in parts for seq in part.seqs)
        merged = Batch(batch.signal, body, CONTENT_PROTOBUF, items, received=batch.received)
        merged.seqs = seqs
        return merged

    async def _sender(self) -> None:
        """Send batches forever."""
        assert self._idle is not None
        while True:
            batch = await self._next()
            self._in_flight += 1
            self._idle.clear()
            try:
                await self._attempt(batch)
            except asyncio.CancelledError:
                self._drop(batch, "shutdown", "cancelled in flight at the shutdown deadline")
                raise
            except Exception:
                logger.exception("forwarding failed unexpectedly; the request is retried")
                self._queue.appendleft(batch)
            finally:
                self._in_flight -= 1
                if not self._queue and not self._in_flight:
                    self._idle.set()

    async def _attempt(self, batch: Batch) -> None:
        """One try at a batch, then its accounting."""
        if batch.attempts:
            self._metrics.retried(batch.signal.name, batch.items)
        batch.attempts += 1
        outcome = await self._transport.send(batch)
        name = batch.signal.name
        if outcome.ok:
            self._failures = 0
            self._gate_until = 0.0
            self.last_error = None
            self._release(batch)
            delivered = batch.items - min(outcome.rejected, batch.items)
            self._metrics.forwarded(name, delivered)
            if outcome.rejected:
                self._drop(batch, "rejected_downstream", outcome.status, release=False,
                           items=min(outcome.rejected, batch.items))  # fmt: skip
            return
        self.last_error = outcome.status
        if not outcome.retryable:
            self._drop(batch, "rejected_downstream", outcome.status)
            return
        if time.monotonic() - batch.received >= self._max_elapsed:
            self._drop(batch, "expired", outcome.status)
            return
        self._failures += 1
        backoff = backoff_s(self._failures, self._initial, self._max_backoff)
        delay = outcome.retry_after_s if outcome.retry_after_s is not None else backoff
        self._gate_until = max(self._gate_until, time.monotonic() + delay)
        self._queue.appendleft(batch)
        if self._failures == 1 or self._failures % 10 == 0:
            logger.warning(
                "downstream refused or unreachable (%s); retrying in %.1f s with %d requests "
                "(%d bytes) buffered",
                outcome.status,
                delay,
                self.buffered_requests,
                self._bytes,
            )

    def _release(self, batch: Batch) -> None:
        """The batch leaves the buffer, and the persistent queue (delivered or given up)."""
        self._bytes -= batch.size
        if self._store is not None and batch.seqs:
            self._store.done(batch.seqs)

    def _drop(
        self,
        batch: Batch,
        reason: str,
        status: str,
        *,
        release: bool = True,
        items: int | None = None,
    ) -> None:
        """Give a batch up: counted by reason and logged (status only, never content); at
        shutdown with a persistent queue it stays on disk for the next start instead."""
        if reason == "shutdown" and self._store is not None:
            self._bytes -= batch.size
            self.kept += batch.items if items is None else items
            return
        if release:
            self._release(batch)
        count = batch.items if items is None else items
        self._metrics.dropped(batch.signal.name, count, reason)
        logger.error(
            "dropped %d %s items (%s; downstream said %s)", count, batch.signal.name, reason, status
        )

    # --- shutdown --------------------------------------------------------------------------------

    async def drain(self, deadline: float) -> int:
        """Stop taking batches, send what is held until `deadline` (monotonic); items left."""
        self._stopping = True
        assert self._idle is not None
        remaining = deadline - time.monotonic()
        if remaining > 0 and (self._queue or self._in_flight):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._idle.wait(), remaining)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        left = 0
        while self._queue:
            batch = self._queue.popleft()
            self._drop(batch, "shutdown", self.last_error or "not sent before the deadline")
            left += batch.items
        await self._transport.close()
        if self._store is not None:
            if self.kept:
                logger.warning(
                    "%d items not forwarded before the deadline are kept in the queue %s; they "
                    "are sent at the next start",
                    self.kept,
                    self._store.directory,
                )
            return 0
        return left
