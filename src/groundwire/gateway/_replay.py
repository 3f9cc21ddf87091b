"""What a gateway does at start with its persistent queue, and the counts it logs while it runs.

`replay` reads back what an earlier run of the gateway left in the queue (a crash, a shutdown
deadline, a downstream that was down) and hands it on before any new request is taken: the
requests not yet delivered go to the head of the forward buffer, in the order they were first
accepted; the traces requests not yet scored go to the scoring process, which skips the traces
the earlier run had already scored. Damaged records are skipped and counted; they never stop it.

`summary_loop` logs one line per `summary_interval_s` with the forwarded, scored and dropped
counts, so that an operator reading the log can see the gateway is doing its job; `summary_text`
is that line's content, also used by the final `stopped:` line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._signals import CONTENT_PROTOBUF, SIGNALS, MalformedRequestError, decode
from groundwire.gateway._transport import Batch
from groundwire.gateway._worker import ScoringProcess

__all__ = ["forward_results", "replay", "summary_loop", "summary_text"]

logger = logging.getLogger("groundwire.gateway")


def replay(
    queue: DiskQueue,
    forwarder: Forwarder,
    scorer: ScoringProcess | None,
    metrics: GatewayMetrics,
) -> int:
    """Hand what `queue` holds to the forwarder and the scorer; the requests read back."""
    count = forward = score = 0
    for stored in queue.replay():
        signal = SIGNALS.get(stored.signal)
        try:
            if signal is None:
                raise MalformedRequestError(f"unknown signal {stored.signal!r}")
            message = None
            if stored.content_type != CONTENT_PROTOBUF:
                message = decode(signal, stored.body, stored.content_type)
        except MalformedRequestError as error:
            logger.error(
                "forward queue: request #%d cannot be read (%s); skipped", stored.seq, error
            )
            queue.corrupt += 1
            queue.done([stored.seq])
            queue.scored([stored.seq], ())
            continue
        count += 1
        batch = Batch(signal, stored.body, stored.content_type, stored.items, message)
        batch.seqs = (stored.seq,)
        if stored.forward:
            forwarder.restore(batch)
            forward += 1
        if stored.score:
            if scorer is not None and scorer.feed(batch.protobuf(), stored.items, batch.seqs, True):
                score += 1
            else:
                queue.scored(batch.seqs, ())
    corrupt = queue.corrupt
    if count:
        metrics.replayed(count)
    if queue.corrupt:
        metrics.corrupt(queue.corrupt)
    if count or queue.corrupt:
        logger.warning(
            "forward queue %s: replaying %d requests left by an earlier run (%d to forward, %d "
            "to score); %d damaged records skipped",
            queue.directory,
            count,
            forward,
            score,
            corrupt,
        )
    return count


def forward_results(
    loop: asyncio.AbstractEventLoop | None,
    forwarder: Forwarder,
    results: Sequence[ResultRequest],
    seqs: Sequence[int],
) -> None:
    """Hand evaluation results just committed to the queue (rows `seqs`) to the forwarder, on
    `loop`'s thread: they are sent, retried and deleted once delivered like any accepted
    request. When the loop is gone (a shutdown's end) they stay on disk for the next start."""
    batches = []
    for result, seq in zip(results, seqs, strict=True):
        batch = Batch(SIGNALS[result.signal], result.body, CONTENT_PROTOBUF, result.items)
        batch.seqs = (seq,)
        batches.append(batch)

    def restore() -> None:
        for batch in batches:
            forwarder.restore(batch)

    if loop is None:
        restore()
        return
    with contextlib.suppress(RuntimeError):  # the loop is closed
        loop.call_soon_threadsafe(restore)


def _by_signal(counts: dict[str, int], kind: str) -> dict[str, int]:
    """`{signal: count}` of the tallies `kind:signal` (not the per-reason ones)."""
    out = {}
    for key, value in counts.items():
        parts = key.split(":")
        if parts[0] == kind and len(parts) == 2:
            out[parts[1]] = value
    return out


def summary_text(metrics: GatewayMetrics) -> str:
    """`forwarded {...}; scored N turns; dropped {...}` from the exact tallies."""
    counts = metrics.snapshot()
    return (
        f"forwarded {_by_signal(counts, 'forwarded') or 0}; "
        f"scored {counts.get('scored_turns', 0)} turns; "
        f"dropped {_by_signal(counts, 'dropped') or 0}"
    )


async def summary_loop(metrics: GatewayMetrics, interval_s: float) -> None:
    """Log `summary_text` every `interval_s` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval_s)
        logger.info("running: %s", summary_text(metrics))
