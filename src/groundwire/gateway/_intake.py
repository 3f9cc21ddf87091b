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
refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._signals import CONTENT_PROTOBUF, MalformedRequestError, Signal, decode
from groundwire.gateway._transport import Batch
from groundwire.gateway._worker import ScoringProcess

__all__ = ["Intake", "Refusal"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not taken."""

    reason: str
    """`malformed` or `buffer_full` (also the metric attribute)."""
    message: str
    retry_after_s: int | None = None


class Intake:
    """Decode, forward, score: the receivers' shared path."""

    def __init__(
        self, forwarder: Forwarder, scorer: ScoringProcess | None, metrics: GatewayMetrics
    ):
        """Forward through `forwarder`; score traces through `scorer` when given."""
        self.forwarder = forwarder
        self.scorer = scorer
        self.metrics = metrics

    def refuse(self, signal: Signal, reason: str, message: str) -> Refusal:
        """Count and describe a refused request."""
        self.metrics.refused(signal.name, reason)
        return Refusal(reason, message)

    def accept(self, signal: Signal, body: bytes, content_type: str) -> Refusal | None:
        """Take one request body; None when accepted, else why not."""
        if not self.forwarder.has_room(len(body)):
            self.metrics.refused(signal.name, "buffer_full")
            return Refusal(
                "buffer_full",
                "the gateway's forward buffer is full (downstream slow or down); retry later",
                self.forwarder.retry_after_s,
            )
        try:
            message: Any = decode(signal, body, content_type)
        except MalformedRequestError as error:
            return self.refuse(signal, "malformed", str(error))
        items = signal.count(message)
        keep = None if content_type == CONTENT_PROTOBUF else message  # only JSON needs it later
        batch = Batch(signal, body, content_type, items, keep)
        if not self.forwarder.offer(batch):
            self.metrics.refused(signal.name, "buffer_full")
            return Refusal(
                "buffer_full", "the gateway's forward buffer is full", self.forwarder.retry_after_s
            )
        if self.scorer is not None and signal.name == "traces" and items:
            self.scorer.feed(batch.protobuf(), items)
        return None
