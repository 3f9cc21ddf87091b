"""What both receivers do with a request body: decode, hand to the forwarder first, then scoring.

The body is decoded here once, to refuse what is malformed and to count its items (the one count
of spans, points or records every later step uses). The forwarder and the scoring process then
get one request: the bytes that arrived, which a binary-protobuf request (the SDKs' and the
Collector's default) is read from everywhere. An OTLP/JSON request is encoded to protobuf at most
once (`Batch.protobuf`), the form the scoring process and a gRPC downstream read: decoding its JSON
a second time in the scoring process would cost about 300 times that encoding (3 ms against 10 us
for a 60-span request). Forwarding comes first and always: the request is in the forward buffer
before scoring sees it, and a full scoring queue never refuses a request. Only a malformed body
(400 / INVALID_ARGUMENT) or a full forward buffer (503 / UNAVAILABLE, with a Retry-After) is
refused. With a persistent queue (`queue_dir`) the request is committed to disk before it is
answered; a queue that cannot be written (disk full) refuses with 503 and a Retry-After too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue, QueueWriteError
from groundwire.gateway._signals import CONTENT_PROTOBUF, MalformedRequestError, Signal, decode
from groundwire.gateway._transport import Batch
from groundwire.gateway._worker import ScoringProcess

__all__ = ["Intake", "Refusal"]

_QUEUE_RETRY_AFTER_S = 5
"""Retry-After while the persistent queue cannot be written (disk full): long enough for an
operator or the forwarder to free space, short enough not to stall the senders."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not taken."""

    reason: str
    """`malformed`, `buffer_full` or `queue_unavailable` (also the metric attribute)."""
    message: str
    retry_after_s: int | None = None
    """Set for the refusals worth retrying (503 / UNAVAILABLE)."""


class Intake:
    """Decode, forward, score: the receivers' shared path."""

    def __init__(
        self,
        forwarder: Forwarder,
        scorer: ScoringProcess | None,
        metrics: GatewayMetrics,
        queue: DiskQueue | None = None,
    ):
        """Forward through `forwarder`; score traces through `scorer` when given; store each
        request in `queue` first when given."""
        self.forwarder = forwarder
        self.scorer = scorer
        self.metrics = metrics
        self.queue = queue

    def refuse(self, signal: Signal, reason: str, message: str) -> Refusal:
        """Count and describe a refused request."""
        self.metrics.refused(signal.name, reason)
        return Refusal(reason, message)

    async def accept(self, signal: Signal, body: bytes, content_type: str) -> Refusal | None:
        """Take one request body; None when accepted, else why not."""
        held = 0 if self.queue is None else self.queue.held_bytes
        if not self.forwarder.has_room(len(body), held):
            return self._full(signal, "the gateway's forward buffer is full (downstream slow or "
                              "down); retry later")  # fmt: skip
        try:
            message: Any = decode(signal, body, content_type)
        except MalformedRequestError as error:
            return self.refuse(signal, "malformed", str(error))
        items = signal.count(message)
        keep = None if content_type == CONTENT_PROTOBUF else message  # only JSON needs it later
        batch = Batch(signal, body, content_type, items, keep)
        score = self.scorer is not None and signal.name == "traces" and items > 0
        if self.queue is not None:
            try:
                seq = await self.queue.append(signal.name, content_type, items, body, score=score)
            except QueueWriteError as error:
                self.metrics.refused(signal.name, "queue_unavailable")
                return Refusal("queue_unavailable", f"{error}; retry later", _QUEUE_RETRY_AFTER_S)
            batch.seqs = (seq,)
        if not self.forwarder.offer(batch):
            if self.queue is not None:
                self.queue.done(batch.seqs)
                self.queue.scored(batch.seqs, ())
            return self._full(signal, "the gateway's forward buffer is full")
        if score and self.scorer is not None:
            fed = self.scorer.feed(batch.protobuf(), items, batch.seqs)
            if not fed and self.queue is not None:
                self.queue.scored(batch.seqs, ())  # counted as not scored; not kept for it
        return None

    def _full(self, signal: Signal, message: str) -> Refusal:
        self.metrics.refused(signal.name, "buffer_full")
        return Refusal("buffer_full", message, self.forwarder.retry_after_s)
