"""A gateway's start with a persistent queue, in-process on real parts (a `DiskQueue` in a temp
directory, a `Forwarder` sending to a real OTLP/HTTP server): what `replay` hands on, skips and
logs; results handed to the forwarder from another thread; the summary line (the whole path
through a restarted `groundwire serve` is in test_queue.py)."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from tests.gateway._traces import new_trace_id, openinference_rag_trace, request
from tests.gateway.conftest import RawDownstream

from groundwire.gateway import GatewayConfig, load_config
from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._replay import forward_results, replay, summary_loop, summary_text
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF
from groundwire.gateway._transport import HttpTransport
from groundwire.gateway._worker import ScoringProcess


def _config(endpoint: str) -> GatewayConfig:
    return load_config(flags={"forward": endpoint, "senders": 1}, environ={})


def _forwarder(endpoint: str, metrics: GatewayMetrics, queue: DiskQueue | None) -> Forwarder:
    """A real forwarder to `endpoint`, one request at a time (so they arrive in order)."""
    transport = HttpTransport(endpoint, headers={}, timeout_s=5, compression="none", ca_file=None)
    return Forwarder(transport, metrics, _config(endpoint), store=queue)


def _send_all(forwarder: Forwarder) -> None:
    """Start the forwarder and send everything it holds."""

    async def run() -> None:
        forwarder.start()
        await forwarder.drain(time.monotonic() + 10)

    asyncio.run(run())


def _traces(name: str) -> bytes:
    """A protobuf traces request of one span named `name`."""
    message = trace_service_pb2.ExportTraceServiceRequest()
    message.resource_spans.add().scope_spans.add().spans.add(name=name)
    return message.SerializeToString()


def _store(queue: DiskQueue, rows: list[tuple[str, str, int, bytes, bool]]) -> list[int]:
    """Append rows (signal, content type, items, body, score) one after another; their seqs."""

    async def run() -> list[int]:
        return [
            await queue.append(signal, content_type, items, body, score=score)
            for signal, content_type, items, body, score in rows
        ]

    return asyncio.run(run())


def test_replay_forwards_what_was_left_in_order_and_skips_what_cannot_be_read(
    tmp_path: Path, downstream: RawDownstream, caplog: pytest.LogCaptureFixture
) -> None:
    """Undelivered requests go to the forwarder in the order first accepted (a JSON one as
    received); a row of an unknown signal or a body that no longer decodes is logged, counted
    as damaged and released; rows waiting only for scoring are released when nothing scores;
    the counts are logged in one line and recorded."""
    queue = DiskQueue(tmp_path, fsync=False)
    json_body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "json"}]}]}]}'
    seqs = _store(
        queue,
        [
            ("traces", CONTENT_PROTOBUF, 1, _traces("first"), False),
            ("bogus", CONTENT_PROTOBUF, 1, b"x", False),
            ("traces", CONTENT_JSON, 1, json_body, True),
            ("traces", CONTENT_JSON, 1, b"{broken", False),
            ("logs", CONTENT_PROTOBUF, 2, b"", False),
            ("traces", CONTENT_PROTOBUF, 3, _traces("scored only"), True),
        ],
    )
    queue.done([seqs[5]])  # delivered already; waits only for its scoring
    queue.sync()
    metrics = GatewayMetrics(None)
    forwarder = _forwarder(downstream.endpoint, metrics, queue)
    caplog.set_level(logging.INFO, logger="groundwire.gateway")
    assert replay(queue, forwarder, None, metrics) == 4
    assert forwarder.buffered_requests == 3
    assert forwarder.buffered_bytes == len(_traces("first")) + len(json_body)
    assert metrics.snapshot() == {"queue_replayed": 4, "queue_corrupt": 2}
    assert queue.corrupt == 2
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        f"forward queue: request #{seqs[1]} cannot be read (unknown signal 'bogus'); skipped",
        f"forward queue: request #{seqs[3]} cannot be read (not valid JSON: Expecting property "
        "name enclosed in double quotes: line 1 column 2 (char 1)); skipped",
        f"forward queue {tmp_path}: replaying 4 requests left by an earlier run (3 to forward, "
        "0 to score); 2 damaged records skipped",
    ]
    buffered = [(b.signal.name, b.content_type, b.items) for b in forwarder._queue]
    assert buffered == [
        ("traces", CONTENT_PROTOBUF, 1),
        ("traces", CONTENT_JSON, 1),
        ("logs", CONTENT_PROTOBUF, 2),
    ]
    _send_all(forwarder)
    assert [r.path for r in downstream.requests] == ["/v1/traces", "/v1/traces", "/v1/logs"]
    assert downstream.requests[0].body == _traces("first")
    assert downstream.requests[1].body == json_body
    assert downstream.requests[1].headers["Content-Type"] == CONTENT_JSON
    queue.sync()
    assert queue.held_records == 0  # delivered, damaged or not to be scored: all released
    queue.close()


def test_each_request_read_back_is_buffered_as_it_was_stored(tmp_path: Path) -> None:
    """The batches handed to the forwarder carry their signal, content type, item count, row
    and body as stored; a JSON one also its decoded message (for a gRPC downstream)."""
    queue = DiskQueue(tmp_path, fsync=False)
    json_body = b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{}, {}]}]}]}'
    seqs = _store(
        queue,
        [
            ("traces", CONTENT_PROTOBUF, 1, _traces("first"), False),
            ("logs", CONTENT_JSON, 2, json_body, False),
        ],
    )
    metrics = GatewayMetrics(None)
    forwarder = _forwarder("http://127.0.0.1:9", metrics, queue)
    assert replay(queue, forwarder, None, metrics) == 2
    first, second = forwarder._queue
    assert (first.signal.name, first.content_type, first.items, first.seqs, first.body) == (
        "traces", CONTENT_PROTOBUF, 1, (seqs[0],), _traces("first"))  # fmt: skip
    assert (second.signal.name, second.content_type, second.items, second.seqs) == (
        "logs", CONTENT_JSON, 2, (seqs[1],))  # fmt: skip
    assert second.message is not None and len(second.protobuf()) > 0
    queue.close()


def test_requests_left_unscored_are_fed_to_a_live_scorer_which_reports_their_rows(
    tmp_path: Path, downstream: RawDownstream, caplog: pytest.LogCaptureFixture
) -> None:
    """Traces requests delivered but not scored by the earlier run go to a real scoring
    process (counted "to score" in the log line), which scores them and reports their rows
    done and their traces scored."""
    queue = DiskQueue(tmp_path, fsync=False)
    trace_ids = [new_trace_id(), new_trace_id()]
    seqs = _store(
        queue,
        [("traces", CONTENT_JSON, 3, request(openinference_rag_trace(t)), True) for t in trace_ids],
    )
    queue.done(seqs)
    queue.sync()
    flags = {"evaluators": "quoted_spans", "quiet_period_s": 0.1, "max_wait_s": 1}
    config = load_config(flags={"forward": downstream.endpoint, **flags}, environ={})
    metrics = GatewayMetrics(None)
    reports: list[tuple[object, ...]] = []
    scorer = ScoringProcess(config, metrics, on_scored=lambda *report: reports.append(report))
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    try:
        assert replay(queue, _forwarder(config.forward, metrics, queue), scorer, metrics) == 2
        line = caplog.records[-1].getMessage()
        assert line.endswith(
            "replaying 2 requests left by an earlier run (0 to forward, 2 to score); 0 damaged "
            "records skipped"
        )
        deadline = time.monotonic() + 20
        while len([t for r in reports for t in r[1]]) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        scorer.shutdown(10.0)
        queue.close()
    done = [seq for report in reports for seq in report[0]]
    scored = [trace for report in reports for trace in report[1]]
    assert sorted(done) == seqs
    assert sorted(scored) == sorted(trace_ids)
    assert metrics.count("not_scored:scoring_queue_full") == 0


def test_an_empty_queue_replays_nothing_and_logs_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing left by an earlier run: nothing handed on, counted or logged."""
    queue = DiskQueue(tmp_path, fsync=False)
    metrics = GatewayMetrics(None)
    caplog.set_level(logging.INFO, logger="groundwire.gateway")
    assert replay(queue, _forwarder("http://127.0.0.1:9", metrics, queue), None, metrics) == 0
    assert metrics.snapshot() == {} and caplog.records == []
    queue.close()


def test_only_damaged_records_are_still_logged_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A queue holding only unreadable rows: none replayed, the damaged ones counted and the
    summary line logged all the same."""
    queue = DiskQueue(tmp_path, fsync=False)
    _store(queue, [("bogus", CONTENT_PROTOBUF, 1, b"x", False)])
    metrics = GatewayMetrics(None)
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    assert replay(queue, _forwarder("http://127.0.0.1:9", metrics, queue), None, metrics) == 0
    assert metrics.snapshot() == {"queue_corrupt": 1}
    assert caplog.records[-1].getMessage() == (
        f"forward queue {tmp_path}: replaying 0 requests left by an earlier run (0 to forward, "
        "0 to score); 1 damaged records skipped"
    )
    queue.close()


def _results() -> list[ResultRequest]:
    return [ResultRequest("traces", 1, _traces("result")), ResultRequest("logs", 2, b"")]


def test_results_without_a_loop_are_handed_on_at_once(downstream: RawDownstream) -> None:
    """No loop (the scoring process's report after the loop ended): the results are in the
    forward buffer when the call returns, each with its own row, and are sent as protobuf."""
    metrics = GatewayMetrics(None)
    forwarder = _forwarder(downstream.endpoint, metrics, None)
    forward_results(None, forwarder, _results(), [7, 8])
    assert forwarder.buffered_requests == 2
    _send_all(forwarder)
    assert [(r.path, r.body) for r in downstream.requests] == [
        ("/v1/traces", _traces("result")),
        ("/v1/logs", b""),
    ]
    assert downstream.requests[0].headers["Content-Type"] == CONTENT_PROTOBUF
    assert metrics.count("received:traces") == 0  # not received: no client sent them


def test_results_from_another_thread_are_handed_on_on_the_loop(downstream: RawDownstream) -> None:
    """With a running loop the results join the buffer on the loop's own thread; a closed loop
    is no error (they stay on disk for the next start)."""
    metrics = GatewayMetrics(None)
    forwarder = _forwarder(downstream.endpoint, metrics, None)

    async def run() -> int:
        loop = asyncio.get_running_loop()
        caller = threading.Thread(
            target=forward_results, args=(loop, forwarder, _results(), [1, 2])
        )
        caller.start()
        caller.join()
        await asyncio.sleep(0.05)
        return forwarder.buffered_requests

    assert asyncio.run(run()) == 2
    closed = asyncio.new_event_loop()
    closed.close()
    forward_results(closed, forwarder, _results(), [3, 4])
    assert forwarder.buffered_requests == 2


def test_results_committed_to_the_queue_are_delivered_counted_and_released(
    tmp_path: Path, downstream: RawDownstream
) -> None:
    """Results stored in the queue and handed on: each reaches the downstream at its signal's
    path, is counted as forwarded by its items, and delivery releases its own row."""
    queue = DiskQueue(tmp_path, fsync=False)
    seqs = queue.scored([], ["ab" * 16], _results()).result(timeout=10)
    queue.sync()
    assert queue.held_records == 2
    metrics = GatewayMetrics(None)
    forwarder = _forwarder(downstream.endpoint, metrics, queue)
    forward_results(None, forwarder, _results(), seqs)
    _send_all(forwarder)
    assert [r.path for r in downstream.requests] == ["/v1/traces", "/v1/logs"]
    assert metrics.snapshot() == {"forwarded:traces": 1, "forwarded:logs": 2}
    queue.sync()
    assert queue.held_records == 0
    queue.close()


def test_results_handed_on_are_batches_of_their_signal_items_and_row() -> None:
    """Each result becomes a protobuf batch of its own signal, item count and row, read at once
    from the buffer (nothing sent)."""
    forwarder = _forwarder("http://127.0.0.1:9", GatewayMetrics(None), None)
    forward_results(None, forwarder, _results(), [7, 8])
    got = [(b.signal.name, b.content_type, b.items, b.seqs) for b in forwarder._queue]
    assert got == [("traces", CONTENT_PROTOBUF, 1, (7,)), ("logs", CONTENT_PROTOBUF, 2, (8,))]


def test_results_and_rows_must_pair_up() -> None:
    """Each result needs its row: a count that differs is a programming error, not a loss."""
    forwarder = _forwarder("http://127.0.0.1:9", GatewayMetrics(None), None)
    with pytest.raises(ValueError, match="zip"):
        forward_results(None, forwarder, _results(), [1])


def test_the_summary_names_forwarded_scored_and_dropped_by_signal() -> None:
    """`forwarded {signal: n}; scored N turns; dropped {signal: n}` from the tallies, the
    per-reason drops left out; 0 for what has none."""
    metrics = GatewayMetrics(None)
    assert summary_text(metrics) == "forwarded 0; scored 0 turns; dropped 0"
    metrics.forwarded("traces", 3)
    metrics.forwarded("logs", 1)
    metrics.dropped("traces", 2, "expired")
    metrics.scored_turns(5)
    metrics.received("traces", 9)
    assert summary_text(metrics) == (
        "forwarded {'traces': 3, 'logs': 1}; scored 5 turns; dropped {'traces': 2}"
    )


def test_the_summary_loop_logs_the_line_every_interval(caplog: pytest.LogCaptureFixture) -> None:
    """`summary_loop` logs `running: <summary>` once per interval until cancelled."""
    metrics = GatewayMetrics(None)
    metrics.scored_turns(1)
    caplog.set_level(logging.INFO, logger="groundwire.gateway")

    async def run() -> None:
        task = asyncio.create_task(summary_loop(metrics, 0.05))
        await asyncio.sleep(0.3)
        task.cancel()

    asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records]
    assert 2 <= len(lines) <= 7
    assert set(lines) == {"running: forwarded 0; scored 1 turns; dropped 0"}
