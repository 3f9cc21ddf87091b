"""The forwarder in-process: its bounded buffer, merging, retries, drops and shutdown, with a real
`HttpTransport` posting to a scripted real OTLP/HTTP downstream on 127.0.0.1 (and a real
`DiskQueue` in a temp directory where the persistent queue matters). One event loop per test;
the longest waits are a 1 s Retry-After gate."""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._scripted import http_downstream

from groundwire.gateway import load_config
from groundwire.gateway._forwarder import MERGE_MAX_BYTES, Forwarder, backoff_s
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS
from groundwire.gateway._transport import Batch, HttpTransport

_TRACES = SIGNALS["traces"]
_LOGS = SIGNALS["logs"]


def _forwarder(endpoint: str, *, store: DiskQueue | None = None, **flags: Any) -> Forwarder:
    """A forwarder (not started) posting to `endpoint` with the gateway options `flags`."""
    config = load_config(flags={"forward": endpoint, "senders": 1, **flags}, environ={})
    transport = HttpTransport(endpoint, headers={}, timeout_s=5, compression="none", ca_file=None)
    return Forwarder(transport, GatewayMetrics(None), config, store=store)


def _batch(body: bytes, items: int = 1, *, signal: Any = _TRACES, **fields: Any) -> Batch:
    content_type = fields.pop("content_type", CONTENT_PROTOBUF)
    return Batch(signal, body, content_type, items, **fields)


def _counts(forwarder: Forwarder) -> dict[str, int]:
    return forwarder._metrics.snapshot()


class _Expired(SystemExit):
    """A test past its time: not an Exception (the forwarder's own `except Exception` must not
    swallow it), and a SystemExit, which asyncio lets out of the loop, ending the test there."""


def _run(scenario: Callable[[], Coroutine[Any, Any, None]], limit_s: float = 20) -> None:
    """Run `scenario` on a new event loop, failing it after `limit_s`: a forwarder task that
    spins without awaiting starves the loop, and only a signal gets the test out."""

    def expired(signum: int, frame: Any) -> None:
        raise _Expired(f"the test's event loop ran past {limit_s} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        asyncio.run(scenario())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


async def _until(predicate: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def test_backoff_doubles_with_jitter_inside_the_cap() -> None:
    """The wait doubles per failure from initial_s, jittered within +-20 % (both ends reached),
    and never exceeds max_s, however many failures."""
    random.seed(7)
    first = [backoff_s(1, 1.0, 100.0) for _ in range(400)]
    assert 0.8 <= min(first) < 0.82
    assert 1.18 < max(first) <= 1.2
    third = [backoff_s(3, 1.0, 100.0) for _ in range(400)]
    assert 3.2 <= min(third) < 3.3
    assert 4.7 < max(third) <= 4.8
    assert all(backoff_s(10, 1.0, 5.0) == 5.0 for _ in range(50))
    assert backoff_s(10_000, 0.5, 30.0) == 30.0


def test_the_buffer_is_bounded_in_bytes() -> None:
    """Offers are taken while their bytes fit (exactly full is fine) and counted as received
    by items; one more byte is refused and not counted. `held` bytes elsewhere count under the
    same bound; restored batches are held but not counted as received."""
    forwarder = _forwarder("http://127.0.0.1:9", max_request_bytes=100, buffer_max_bytes=100)
    assert forwarder.has_room(100)
    assert not forwarder.has_room(101)
    assert forwarder.offer(_batch(b"a" * 60, 3))
    assert forwarder.offer(_batch(b"b" * 40, 2, signal=_LOGS))
    assert not forwarder.offer(_batch(b"c", 1))
    assert (forwarder.buffered_bytes, forwarder.buffered_requests) == (100, 2)
    assert _counts(forwarder) == {"received:traces": 3, "received:logs": 2}
    other = _forwarder("http://127.0.0.1:9", max_request_bytes=100, buffer_max_bytes=100)
    assert other.has_room(5, held=95)
    assert not other.has_room(6, held=95)
    other.offer(_batch(b"x" * 10))
    assert other.has_room(90, held=5)
    assert not other.has_room(91, held=5)
    other.restore(_batch(b"r" * 50, 4))
    assert (other.buffered_bytes, other.buffered_requests) == (60, 2)
    assert _counts(other) == {"received:traces": 1}


def test_the_retry_advice_is_at_least_a_second() -> None:
    """Without a closed gate a refused sender is told 1 s."""
    assert _forwarder("http://127.0.0.1:9").retry_after_s == 1


def test_held_requests_are_delivered_unchanged_and_counted() -> None:
    """Started, the forwarder posts what it holds in order (a JSON body as it came, another
    signal on its own path), counts it forwarded and is empty; drain leaves nothing."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"\x0a\x00", 2))
            forwarder.offer(_batch(b'{"resourceSpans": []}', 1, content_type=CONTENT_JSON))
            forwarder.offer(_batch(b"\x0a\x01\x00", 4, signal=_LOGS))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 3)
            assert await forwarder.drain(time.monotonic() + 5) == 0
            assert [(path, body) for path, _, body in downstream.seen] == [
                ("/v1/traces", b"\x0a\x00"),
                ("/v1/traces", b'{"resourceSpans": []}'),
                ("/v1/logs", b"\x0a\x01\x00"),
            ]
            assert downstream.seen[1][1]["Content-Type"] == CONTENT_JSON
            assert (forwarder.buffered_bytes, forwarder.buffered_requests) == (0, 0)
            assert forwarder.last_error is None
            assert _counts(forwarder) == {
                "received:traces": 3,
                "received:logs": 4,
                "forwarded:traces": 3,
                "forwarded:logs": 4,
            }

    _run(scenario)


def test_queued_protobuf_requests_of_one_signal_are_joined() -> None:
    """Protobuf requests of one signal queued behind each other go out as one body (their bytes
    joined, their items summed); a JSON request, another signal, or a request that would pass
    MERGE_MAX_BYTES ends the run (exactly MERGE_MAX_BYTES is joined)."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            forwarder = _forwarder(downstream.url)
            half = MERGE_MAX_BYTES // 2
            for batch in (
                _batch(b"A", 1),
                _batch(b"B", 2),
                _batch(b"j", 1, content_type=CONTENT_JSON),
                _batch(b"C", 1),
                _batch(b"L", 5, signal=_LOGS),
                _batch(b"D" * half, 1),
                _batch(b"E" * half, 1),
                _batch(b"F", 1),
                _batch(b"G" * (MERGE_MAX_BYTES - 1), 1),
                _batch(b"H", 1),
                _batch(b"I", 1),
            ):
                assert forwarder.offer(batch)
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 7)
            await forwarder.drain(time.monotonic() + 5)
            bodies = [(path, body[:1], len(body)) for path, _, body in downstream.seen]
            assert bodies == [
                ("/v1/traces", b"A", 2),
                ("/v1/traces", b"j", 1),
                ("/v1/traces", b"C", 1),
                ("/v1/logs", b"L", 1),
                ("/v1/traces", b"D", 2 * half),
                ("/v1/traces", b"F", MERGE_MAX_BYTES),
                ("/v1/traces", b"H", 2),
            ]
            assert downstream.seen[0][2] == b"AB"
            assert _counts(forwarder)["forwarded:traces"] == 11

    _run(scenario)


def test_a_joined_request_releases_every_row_it_holds(tmp_path: Path) -> None:
    """With a persistent queue, delivering a joined request marks each of its rows done."""

    async def scenario() -> None:
        queue = DiskQueue(tmp_path, fsync=False)
        async with http_downstream() as downstream:
            forwarder = _forwarder(downstream.url, store=queue)
            for name in (b"a", b"b", b"c"):
                seq = await queue.append("traces", CONTENT_PROTOBUF, 1, name, score=False)
                batch = _batch(name, 1, seqs=(seq,))
                forwarder.offer(batch)
            queue.sync()
            assert queue.held_records == 3
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            await forwarder.drain(time.monotonic() + 5)
            assert downstream.seen[0][2] == b"abc"
            queue.sync()
            assert queue.held_records == 0
        queue.close()

    _run(scenario)


def test_a_retryable_failure_closes_the_gate_for_the_retry_after() -> None:
    """A 503 with Retry-After 1: the request goes back to the head, the gate stays closed about
    a second (a refused sender is told so), a request offered meanwhile is not joined to the
    retried one, and both arrive after; the retry is counted, the error cleared."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {"Retry-After": "1"}, b"")]
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"first", 2))
            forwarder.start()
            await _until(lambda: forwarder.last_error == "503")
            failed_at = time.monotonic()
            assert forwarder.retry_after_s == 1
            forwarder.offer(_batch(b"second", 1))
            await _until(lambda: len(downstream.seen) == 3)
            assert time.monotonic() - failed_at >= 0.9
            await forwarder.drain(time.monotonic() + 5)
            assert [body for _, _, body in downstream.seen] == [b"first", b"first", b"second"]
            assert forwarder.last_error is None
            assert _counts(forwarder) == {
                "received:traces": 3,
                "retried:traces": 2,
                "forwarded:traces": 3,
            }

    _run(scenario)


def test_the_gate_advice_counts_whole_seconds_up() -> None:
    """With the gate closed for 3 s (Retry-After 3), a refused sender is told 3 s; after one
    success it opens again."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(429, {"Retry-After": "3"}, b"")]
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"x"))
            forwarder.start()
            await _until(lambda: forwarder.last_error == "429")
            assert forwarder.retry_after_s == 3
            left = await forwarder.drain(time.monotonic() + 0.2)
            assert left == 1
            assert _counts(forwarder)["dropped:traces:shutdown"] == 1

    _run(scenario)


def _warnings_after(failures: int, caplog: pytest.LogCaptureFixture) -> list[str]:
    """The forwarder's warnings while `failures` 502s (no Retry-After) come before a 200; the
    retries back off from retry_initial_s 0.01 s, capped at 0.02 s. Every item arrives once."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(502, {}, b"")] * failures
            forwarder = _forwarder(downstream.url, retry_initial_s=0.01, retry_max_s=0.02)
            forwarder.offer(_batch(b"abc", 5))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == failures + 1)
            await forwarder.drain(time.monotonic() + 5)
            assert _counts(forwarder) == {
                "received:traces": 5,
                "retried:traces": 5 * failures,
                "forwarded:traces": 5,
            }

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="groundwire.gateway"):
        _run(scenario)
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "groundwire.gateway"
    ]  # the forwarder's own: an exporter guard of an earlier test may warn meanwhile


def test_failures_back_off_and_are_logged_at_the_first_and_every_tenth(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ten 502s: retried after a backoff of retry_initial_s doubling (capped at retry_max_s),
    a warning at the 1st and the 10th failure only (one, after a single failure), naming the
    status, the delay and what is buffered (the request back in the queue and the one in
    flight); then delivered."""
    warnings = _warnings_after(10, caplog)
    assert len(warnings) == 2
    for text in warnings:
        assert text.startswith("downstream refused or unreachable (502); retrying in 0.0")
        assert text.endswith(" s with 2 requests (3 bytes) buffered")  # 1 queued, 1 in flight
    assert len(_warnings_after(1, caplog)) == 1
    assert len(_warnings_after(9, caplog)) == 1


def test_drain_closes_the_transport() -> None:
    """After drain the transport's connections are released (its session is gone)."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"x"))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            transport: Any = forwarder._transport
            assert transport._session is not None
            await forwarder.drain(time.monotonic() + 5)
            assert transport._session is None

    _run(scenario)


def test_a_backoff_without_retry_after_waits_for_the_gate() -> None:
    """A 502 without Retry-After closes the gate for the backoff (retry_initial_s 0.5 s, jitter
    inside +-20 %): the retry comes no sooner than 0.4 s later."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(502, {}, b"")]
            forwarder = _forwarder(downstream.url, retry_initial_s=0.5)
            forwarder.offer(_batch(b"x"))
            forwarder.start()
            await _until(lambda: forwarder.last_error == "502")
            failed_at = time.monotonic()
            await _until(lambda: len(downstream.seen) == 2)
            assert time.monotonic() - failed_at >= 0.35
            await forwarder.drain(time.monotonic() + 5)

    _run(scenario)


def test_a_request_refused_for_good_is_dropped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 400 is not retried: the request is dropped as rejected_downstream, counted by items,
    logged with the status, and leaves the buffer; the error stays visible."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(400, {}, b"")]
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"bad", 4))
            forwarder.offer(_batch(b"ok", 1, signal=_LOGS))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 2)
            await forwarder.drain(time.monotonic() + 5)
            assert forwarder.buffered_bytes == 0
            assert _counts(forwarder) == {
                "received:traces": 4,
                "received:logs": 1,
                "dropped:traces:rejected_downstream": 4,
                "dropped:traces": 4,
                "forwarded:logs": 1,
            }

    with caplog.at_level(logging.ERROR, logger="groundwire.gateway"):
        _run(scenario)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "dropped 4 traces items (rejected_downstream; downstream said 400)"
    ]


def test_a_partial_success_drops_only_the_rejected_items() -> None:
    """A 200 rejecting 2 of 3 spans: 1 forwarded, 2 dropped as rejected_downstream; one
    rejecting 9 of 3 drops the 3 it held, never more."""

    async def scenario() -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        def partial(rejected: int) -> bytes:
            response = trace_service_pb2.ExportTraceServiceResponse()
            response.partial_success.rejected_spans = rejected
            return bytes(response.SerializeToString())

        async with http_downstream() as downstream:
            downstream.script = [(200, {}, partial(2)), (200, {}, partial(9))]
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"x", 3))
            forwarder.offer(_batch(b"y", 3, attempts=1))  # retried: not joined to x
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 2)
            await forwarder.drain(time.monotonic() + 5)
            assert _counts(forwarder) == {
                "received:traces": 6,
                "retried:traces": 3,
                "forwarded:traces": 1,
                "dropped:traces:rejected_downstream": 5,
                "dropped:traces": 5,
            }
            assert forwarder.buffered_bytes == 0

    _run(scenario)


def test_a_partial_success_counts_what_was_delivered() -> None:
    """A 200 rejecting 2 of 5 spans: 3 forwarded, 2 dropped."""

    async def scenario() -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        response = trace_service_pb2.ExportTraceServiceResponse()
        response.partial_success.rejected_spans = 2
        async with http_downstream() as downstream:
            downstream.script = [(200, {}, bytes(response.SerializeToString()))]
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"x", 5))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            await forwarder.drain(time.monotonic() + 5)
            assert _counts(forwarder) == {
                "received:traces": 5,
                "forwarded:traces": 3,
                "dropped:traces:rejected_downstream": 2,
                "dropped:traces": 2,
            }

    _run(scenario)


def test_a_request_past_the_retry_window_is_expired() -> None:
    """A retryable failure of a request older than retry_max_elapsed_s: dropped as expired,
    not retried."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {}, b"")]
            forwarder = _forwarder(downstream.url, retry_max_elapsed_s=60)
            forwarder.offer(_batch(b"old", 2, received=time.monotonic() - 61))
            forwarder.offer(_batch(b"new", 1, signal=_LOGS))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 2)
            await forwarder.drain(time.monotonic() + 5)
            assert _counts(forwarder) == {
                "received:traces": 2,
                "received:logs": 1,
                "dropped:traces:expired": 2,
                "dropped:traces": 2,
                "forwarded:logs": 1,
            }

    _run(scenario)


def test_shutdown_counts_what_the_deadline_left(caplog: pytest.LogCaptureFixture) -> None:
    """Downstream unreachable: drain stops taking requests, waits to the deadline, then counts
    every held request as dropped (shutdown, with the last error) and returns the items left."""

    async def scenario() -> None:
        forwarder = _forwarder("http://127.0.0.1:9", retry_initial_s=5)
        forwarder.offer(_batch(b"a", 2))
        forwarder.offer(_batch(b"b", 3, content_type=CONTENT_JSON))
        forwarder.start()
        await _until(lambda: forwarder.last_error is not None)
        started = time.monotonic()
        assert await forwarder.drain(started + 0.3) == 5
        assert 0.25 <= time.monotonic() - started < 3
        assert not forwarder.has_room(1)
        assert not forwarder.offer(_batch(b"c"))
        assert _counts(forwarder)["dropped:traces:shutdown"] == 5
        assert forwarder.buffered_requests == 0

    with caplog.at_level(logging.ERROR, logger="groundwire.gateway"):
        _run(scenario)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert errors[0].startswith("dropped 2 traces items (shutdown; downstream said Client")


def test_shutdown_before_any_failure_names_the_deadline() -> None:
    """A request never sent (the gate was never opened: no sender) is dropped at shutdown
    saying it was not sent before the deadline; an empty forwarder drains at once."""

    async def scenario() -> None:
        forwarder = _forwarder("http://127.0.0.1:9", senders=1)
        forwarder.start()
        for task in forwarder._tasks:
            task.cancel()
        forwarder.offer(_batch(b"a", 2))
        assert await forwarder.drain(time.monotonic() + 0.1) == 2
        empty = _forwarder("http://127.0.0.1:9")
        empty.start()
        started = time.monotonic()
        assert await empty.drain(started + 5) == 0
        assert time.monotonic() - started < 1

    _run(scenario)


def test_a_request_in_flight_at_the_deadline_is_cancelled_and_counted() -> None:
    """A downstream slower than the deadline: the request in flight is cancelled and counted as
    dropped (shutdown); it is not among the queued items drain returns."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 3.0
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"slow", 4))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            assert forwarder.buffered_requests == 1
            assert await forwarder.drain(time.monotonic() + 0.2) == 0
            assert _counts(forwarder)["dropped:traces:shutdown"] == 4
            assert forwarder.buffered_requests == 0

    _run(scenario)


def test_with_a_queue_shutdown_keeps_what_is_left_on_disk(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With a persistent queue, what the deadline left is kept (counted in `kept`, logged with
    the queue's directory), not dropped, and drain reports nothing left."""

    async def scenario() -> None:
        queue = DiskQueue(tmp_path, fsync=False)
        forwarder = _forwarder("http://127.0.0.1:9", store=queue, retry_initial_s=5)
        seq = await queue.append("traces", CONTENT_PROTOBUF, 3, b"abc", score=False)
        forwarder.offer(_batch(b"abc", 3, seqs=(seq,)))
        forwarder.start()
        await _until(lambda: forwarder.last_error is not None)
        assert await forwarder.drain(time.monotonic() + 0.1) == 0
        assert forwarder.kept == 3
        assert forwarder.buffered_bytes == 0
        assert "dropped:traces:shutdown" not in _counts(forwarder)
        queue.sync()
        assert queue.held_records == 1
        queue.close()

    with caplog.at_level(logging.WARNING, logger="groundwire.gateway"):
        _run(scenario)
    assert (
        f"3 items not forwarded before the deadline are kept in the queue {tmp_path}; they are "
        "sent at the next start"
    ) in [r.getMessage() for r in caplog.records]


def test_senders_send_in_parallel() -> None:
    """With senders 3 and a slow downstream, three requests are in flight at once (not joined:
    JSON), and the buffer counts them until delivered."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 0.5
            forwarder = _forwarder(downstream.url, senders=3)
            for name in (b"1", b"2", b"3"):
                forwarder.offer(_batch(name, content_type=CONTENT_JSON))
            forwarder.start()
            started = time.monotonic()
            await _until(lambda: len(downstream.seen) == 3)
            assert time.monotonic() - started < 0.45
            assert forwarder.buffered_requests == 3
            assert forwarder.buffered_bytes == 3
            await forwarder.drain(time.monotonic() + 5)
            assert forwarder.buffered_requests == 0

    _run(scenario)


def test_a_restored_batch_is_delivered_without_being_counted_as_received() -> None:
    """A batch read back from the queue (`restore`) is sent like any other and counted as
    forwarded, never as received."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            forwarder = _forwarder(downstream.url)
            forwarder.restore(_batch(b"back", 3))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            await forwarder.drain(time.monotonic() + 5)
            assert downstream.seen[0][2] == b"back"
            assert _counts(forwarder) == {"forwarded:traces": 3}

    _run(scenario)


def test_with_a_queue_every_batch_left_at_shutdown_is_kept(tmp_path: Path) -> None:
    """Several requests left at the deadline with a persistent queue: `kept` counts the items
    of all of them (a JSON one too: not joined)."""

    async def scenario() -> None:
        queue = DiskQueue(tmp_path, fsync=False)
        forwarder = _forwarder("http://127.0.0.1:9", store=queue, retry_initial_s=5)
        for items, content_type in ((2, CONTENT_JSON), (3, CONTENT_JSON)):
            seq = await queue.append("traces", content_type, items, b"{}", score=False)
            forwarder.offer(_batch(b"{}", items, content_type=content_type, seqs=(seq,)))
        forwarder.start()
        await _until(lambda: forwarder.last_error is not None)
        assert await forwarder.drain(time.monotonic() + 0.1) == 0
        assert forwarder.kept == 5
        queue.close()

    _run(scenario)


def test_a_joined_request_keeps_the_age_of_its_oldest_part() -> None:
    """Joined requests that are all past retry_max_elapsed_s are dropped as expired at their
    first retryable failure: the joined request is as old as its first part."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(503, {}, b"")]
            forwarder = _forwarder(downstream.url, retry_max_elapsed_s=60)
            old = time.monotonic() - 61
            forwarder.offer(_batch(b"a", 2, received=old))
            forwarder.offer(_batch(b"b", 1, received=old + 0.5))
            forwarder.start()
            await _until(lambda: _counts(forwarder).get("dropped:traces:expired") == 3)
            await forwarder.drain(time.monotonic() + 5)
            assert [body for _, _, body in downstream.seen] == [b"ab"]

    _run(scenario)


def test_a_request_cancelled_in_flight_is_logged_as_such(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The drop of a request cut in flight by the deadline says so in the log."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 3.0
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"slow", 4))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            await forwarder.drain(time.monotonic() + 0.2)

    with caplog.at_level(logging.ERROR, logger="groundwire.gateway"):
        _run(scenario)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "dropped 4 traces items (shutdown; downstream said cancelled in flight at the shutdown "
        "deadline)"
    ]


def test_drain_returns_as_soon_as_everything_is_delivered() -> None:
    """Once the last request is delivered the forwarder is idle: drain does not wait for its
    deadline."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 0.2
            forwarder = _forwarder(downstream.url)
            forwarder.offer(_batch(b"x", content_type=CONTENT_JSON))
            forwarder.offer(_batch(b"y", content_type=CONTENT_JSON))
            forwarder.start()
            started = time.monotonic()
            assert await forwarder.drain(started + 10) == 0
            assert time.monotonic() - started < 3
            assert len(downstream.seen) == 2

    _run(scenario)


def test_a_success_ends_an_outage_so_the_next_failure_warns_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A delivery resets the failure count: the first failure after it is the first of a new
    outage, warned about and backed off from retry_initial_s again."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(200, {}, b""), (502, {}, b"")]
            forwarder = _forwarder(downstream.url, retry_initial_s=0.01, retry_max_s=0.02)
            forwarder.offer(_batch(b"a", content_type=CONTENT_JSON))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 1)
            await _until(lambda: forwarder.buffered_requests == 0)
            forwarder.offer(_batch(b"b", content_type=CONTENT_JSON))
            await _until(lambda: len(downstream.seen) == 3)
            await forwarder.drain(time.monotonic() + 5)
            assert _counts(forwarder)["forwarded:traces"] == 2

    with caplog.at_level(logging.WARNING, logger="groundwire.gateway"):
        _run(scenario)
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "groundwire.gateway"
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith("downstream refused or unreachable (502); retrying in 0.0")


def test_partial_and_expired_drops_are_logged_with_the_downstream_status(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The log line of a drop names what the downstream said: the 200 of a partial success,
    the 503 that found a request past its retry window."""

    async def scenario() -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        response = trace_service_pb2.ExportTraceServiceResponse()
        response.partial_success.rejected_spans = 1
        async with http_downstream() as downstream:
            downstream.script = [(200, {}, bytes(response.SerializeToString())), (503, {}, b"")]
            forwarder = _forwarder(downstream.url, retry_max_elapsed_s=60)
            forwarder.offer(_batch(b"x", 2))
            forwarder.offer(_batch(b"y", 3, received=time.monotonic() - 61, attempts=1))
            forwarder.start()
            await _until(lambda: len(downstream.seen) == 2)
            await forwarder.drain(time.monotonic() + 5)

    with caplog.at_level(logging.ERROR, logger="groundwire.gateway"):
        _run(scenario)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "dropped 1 traces items (rejected_downstream; downstream said 200)",
        "dropped 3 traces items (expired; downstream said 503)",
    ]


def test_a_new_forwarder_has_no_error_and_names_its_senders(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before any failure there is no downstream error (None, for /healthz); the sender tasks
    are named gateway-sender-<n>; a request never sent is dropped at shutdown saying it was not
    sent before the deadline."""

    async def scenario() -> None:
        forwarder = _forwarder("http://127.0.0.1:9", senders=2)
        assert forwarder.last_error is None
        forwarder.start()
        names = sorted(task.get_name() for task in forwarder._tasks)
        assert names == ["gateway-sender-0", "gateway-sender-1"]
        for task in forwarder._tasks:
            task.cancel()
        forwarder.offer(_batch(b"a", 2))
        assert await forwarder.drain(time.monotonic() + 0.1) == 2

    with caplog.at_level(logging.ERROR, logger="groundwire.gateway"):
        _run(scenario)
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
        "dropped 2 traces items (shutdown; downstream said not sent before the deadline)"
    ]
