"""The receivers' shared path in-process, on real parts (a `Forwarder` sending to a real
OTLP/HTTP server, a `DiskQueue` in a temp directory, a real scoring process): what is refused and
why, what is stored, forwarded and handed to scoring (the receivers themselves are covered
through `groundwire serve` in test_forwarding.py and test_queue.py)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from tests.gateway._scripted import traces_request
from tests.gateway._traces import new_trace_id, openinference_rag_trace, request
from tests.gateway.conftest import RawDownstream

from groundwire.gateway import GatewayConfig, load_config
from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._intake import Intake, Refusal
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS
from groundwire.gateway._transport import HttpTransport
from groundwire.gateway._worker import ScoringProcess

_TRACES = SIGNALS["traces"]


def _config(endpoint: str, **flags: Any) -> GatewayConfig:
    return load_config(flags={"forward": endpoint, "senders": 1, **flags}, environ={})


def _intake(
    endpoint: str,
    *,
    queue: DiskQueue | None = None,
    scorer: ScoringProcess | None = None,
    **flags: Any,
) -> Intake:
    """An intake with a real forwarder to `endpoint` (not started)."""
    config = _config(endpoint, **flags)
    metrics = GatewayMetrics(None)
    transport = HttpTransport(endpoint, headers={}, timeout_s=5, compression="none", ca_file=None)
    return Intake(Forwarder(transport, metrics, config, store=queue), scorer, metrics, queue)


def _send_all(forwarder: Forwarder) -> None:
    async def run() -> None:
        forwarder.start()
        await forwarder.drain(time.monotonic() + 10)

    asyncio.run(run())


def _rows(directory: Path) -> list[tuple[Any, ...]]:
    """(signal, content_type, items, forward, score) of every row of the queue, in order."""
    with sqlite3.connect(directory / "queue.sqlite3") as db:
        return db.execute(
            "SELECT signal, content_type, items, forward, score FROM requests ORDER BY seq"
        ).fetchall()


@pytest.fixture(scope="module")
def stopped_scorer() -> ScoringProcess:
    """A real scoring process, already shut down: it takes nothing more (counted)."""
    config = _config("http://127.0.0.1:9", evaluators="quoted_spans")
    scorer = ScoringProcess(config, GatewayMetrics(None))
    scorer.shutdown(10.0)
    return scorer


def test_a_request_is_forwarded_as_received_and_counted(downstream: RawDownstream) -> None:
    """Protobuf and JSON requests are accepted (None), counted by their items and forwarded as
    the bytes that arrived, in order."""
    intake = _intake(downstream.endpoint)
    json_body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a"}, {"name": "b"}]}]}]}'
    assert (
        asyncio.run(intake.accept(_TRACES, traces_request("x", "y", "z"), CONTENT_PROTOBUF)) is None
    )
    assert asyncio.run(intake.accept(_TRACES, json_body, CONTENT_JSON)) is None
    assert intake.metrics.snapshot() == {"received:traces": 5}
    _send_all(intake.forwarder)
    assert [r.body for r in downstream.requests] == [traces_request("x", "y", "z"), json_body]


def test_a_malformed_body_is_refused_and_counted_not_forwarded() -> None:
    """A body that does not decode: refused as malformed with the decoder's message, no retry
    advice, counted by signal and reason, nothing buffered."""
    intake = _intake("http://127.0.0.1:9")
    refusal = asyncio.run(intake.accept(_TRACES, b"{nope", CONTENT_JSON))
    assert refusal is not None
    assert (refusal.reason, refusal.retry_after_s) == ("malformed", None)
    assert refusal.message.startswith("not valid JSON: ")
    assert intake.metrics.snapshot() == {"refused:traces:malformed": 1}
    assert intake.forwarder.buffered_requests == 0


def test_a_full_buffer_refuses_with_a_retry_after() -> None:
    """A body that does not fit the forward buffer: refused as buffer_full with the retry advice
    of the forwarder (at least 1 s), counted, not even decoded."""
    intake = _intake("http://127.0.0.1:9", max_request_bytes=10, buffer_max_bytes=10)
    refusal = asyncio.run(intake.accept(_TRACES, b"garbage that is too long", CONTENT_PROTOBUF))
    assert refusal == Refusal(
        "buffer_full",
        "the gateway's forward buffer is full (downstream slow or down); retry later",
        1,
    )
    assert intake.metrics.snapshot() == {"refused:traces:buffer_full": 1}


def test_the_bytes_held_on_disk_count_against_the_buffer(tmp_path: Path) -> None:
    """With a persistent queue, what it holds (waiting for scoring) counts against the same
    bound: a request that fits the empty buffer is refused when the disk holds enough."""
    queue = DiskQueue(tmp_path, fsync=False)
    body = traces_request("held")
    intake = _intake("http://127.0.0.1:9", queue=queue, max_request_bytes=len(body) + 10,
                     buffer_max_bytes=len(body) + 10)  # fmt: skip
    asyncio.run(queue.append("traces", CONTENT_PROTOBUF, 1, body, score=False))
    assert queue.held_bytes == len(body)
    refusal = asyncio.run(intake.accept(_TRACES, body, CONTENT_PROTOBUF))
    assert refusal is not None and refusal.reason == "buffer_full"
    queue.close()


def test_with_a_queue_each_request_is_stored_first_with_its_row(
    tmp_path: Path, downstream: RawDownstream
) -> None:
    """Each accepted request is a row on disk (not marked for scoring without a scorer) before
    it is answered; the forwarded batch knows its row, which delivery releases."""
    queue = DiskQueue(tmp_path, fsync=False)
    intake = _intake(downstream.endpoint, queue=queue)
    assert asyncio.run(intake.accept(_TRACES, traces_request("a", "b"), CONTENT_PROTOBUF)) is None
    assert asyncio.run(intake.accept(SIGNALS["logs"], b"", CONTENT_PROTOBUF)) is None
    queue.sync()
    assert _rows(tmp_path) == [
        ("traces", CONTENT_PROTOBUF, 2, 1, 0),
        ("logs", CONTENT_PROTOBUF, 0, 1, 0),
    ]
    _send_all(intake.forwarder)
    queue.sync()
    assert queue.held_records == 0
    queue.close()


def test_a_queue_that_cannot_store_refuses_with_503_advice(tmp_path: Path) -> None:
    """A queue that refuses the write (no room on its disk): refused as queue_unavailable with
    the queue's reason, a 5 s Retry-After, counted; nothing forwarded."""
    queue = DiskQueue(tmp_path, fsync=False, reserve_bytes=1 << 62)
    intake = _intake("http://127.0.0.1:9", queue=queue)
    refusal = asyncio.run(intake.accept(_TRACES, traces_request("a"), CONTENT_PROTOBUF))
    assert refusal is not None
    assert (refusal.reason, refusal.retry_after_s) == ("queue_unavailable", 5)
    assert refusal.message.startswith("the forward queue cannot take it: ")
    assert refusal.message.endswith("; retry later")
    assert intake.metrics.snapshot() == {"refused:traces:queue_unavailable": 1}
    assert intake.forwarder.buffered_requests == 0
    queue.close()


def test_a_request_stored_but_not_taken_by_the_buffer_is_released(tmp_path: Path) -> None:
    """Two requests stored at once when only one fits the buffer: the second, already on disk,
    is refused as buffer_full and its row released (not forwarded, not scored)."""
    queue = DiskQueue(tmp_path, fsync=False)
    body = traces_request("one")
    intake = _intake("http://127.0.0.1:9", queue=queue, max_request_bytes=len(body),
                     buffer_max_bytes=len(body))  # fmt: skip

    async def both() -> list[Refusal | None]:
        return list(
            await asyncio.gather(
                intake.accept(_TRACES, body, CONTENT_PROTOBUF),
                intake.accept(_TRACES, body, CONTENT_PROTOBUF),
            )
        )

    first, second = asyncio.run(both())
    assert first is None
    assert second == Refusal("buffer_full", "the gateway's forward buffer is full", 1)
    queue.sync()
    assert queue.held_records == 1
    queue.close()


def test_traces_go_to_the_scorer_and_what_it_cannot_take_is_released(
    tmp_path: Path, stopped_scorer: ScoringProcess
) -> None:
    """With a scorer, a traces request with spans is stored marked for scoring and fed to it;
    one the scorer does not take (here: it has stopped) is counted as not scored and its
    scoring mark released. Logs and empty traces requests are never marked."""
    queue = DiskQueue(tmp_path, fsync=False)
    before = stopped_scorer._metrics.count("not_scored:shutdown")
    intake = _intake("http://127.0.0.1:9", queue=queue, scorer=stopped_scorer)
    assert (
        asyncio.run(intake.accept(_TRACES, traces_request("a", "b", "c"), CONTENT_PROTOBUF)) is None
    )
    assert asyncio.run(intake.accept(_TRACES, b"", CONTENT_PROTOBUF)) is None
    assert asyncio.run(intake.accept(SIGNALS["logs"], b"", CONTENT_PROTOBUF)) is None
    queue.sync()
    assert [row[3:] for row in _rows(tmp_path)] == [(1, 0), (1, 0), (1, 0)]
    assert stopped_scorer._metrics.count("not_scored:shutdown") == before + 3
    queue.close()


def test_without_a_queue_traces_are_fed_to_the_scorer(stopped_scorer: ScoringProcess) -> None:
    """No queue: the request is forwarded and fed to the scorer all the same (counted as not
    scored when it cannot take it)."""
    before = stopped_scorer._metrics.count("not_scored:shutdown")
    intake = _intake("http://127.0.0.1:9", scorer=stopped_scorer)
    assert asyncio.run(intake.accept(_TRACES, traces_request("a", "b"), CONTENT_PROTOBUF)) is None
    assert stopped_scorer._metrics.count("not_scored:shutdown") == before + 2
    assert intake.forwarder.buffered_requests == 1


def test_a_request_that_fills_the_empty_buffer_exactly_is_taken() -> None:
    """Without a persistent queue nothing else counts against the bound: a request of exactly
    the buffer's size is accepted."""
    body = traces_request("exact")
    intake = _intake("http://127.0.0.1:9", max_request_bytes=len(body), buffer_max_bytes=len(body))
    assert asyncio.run(intake.accept(_TRACES, body, CONTENT_PROTOBUF)) is None
    assert intake.forwarder.buffered_bytes == len(body)


def test_only_a_json_request_keeps_its_decoded_message_for_later(
    stopped_scorer: ScoringProcess,
) -> None:
    """A protobuf request is buffered as its bytes alone; a JSON one keeps its decoded message,
    from which scoring (or a gRPC downstream) gets protobuf without decoding it again."""
    intake = _intake("http://127.0.0.1:9", scorer=stopped_scorer)
    json_body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a"}]}]}]}'
    before = stopped_scorer._metrics.count("not_scored:shutdown")
    assert asyncio.run(intake.accept(_TRACES, traces_request("p"), CONTENT_PROTOBUF)) is None
    assert asyncio.run(intake.accept(_TRACES, json_body, CONTENT_JSON)) is None
    assert stopped_scorer._metrics.count("not_scored:shutdown") == before + 2
    protobuf, json_batch = intake.forwarder._queue
    assert protobuf.message is None and protobuf.encoded is None
    assert json_batch.protobuf() == traces_request("a")


def _logs(records: int) -> bytes:
    """A protobuf logs request of `records` log records."""
    message = logs_service_pb2.ExportLogsServiceRequest()
    scope = message.resource_logs.add().scope_logs.add()
    for _ in range(records):
        scope.log_records.add()
    return message.SerializeToString()


def test_only_traces_with_spans_are_fed_to_the_scorer_one_span_is_enough(
    tmp_path: Path, stopped_scorer: ScoringProcess
) -> None:
    """A traces request of one span is fed to the scorer; a logs request of two records is not
    (the stopped scorer counts what it was fed); each row keeps the body that arrived."""
    queue = DiskQueue(tmp_path, fsync=False)
    before = stopped_scorer._metrics.count("not_scored:shutdown")
    intake = _intake("http://127.0.0.1:9", queue=queue, scorer=stopped_scorer)
    assert asyncio.run(intake.accept(_TRACES, traces_request("one"), CONTENT_PROTOBUF)) is None
    assert asyncio.run(intake.accept(SIGNALS["logs"], _logs(2), CONTENT_PROTOBUF)) is None
    assert stopped_scorer._metrics.count("not_scored:shutdown") == before + 1
    queue.sync()
    with sqlite3.connect(tmp_path / "queue.sqlite3") as db:
        bodies = [row[0] for row in db.execute("SELECT body FROM requests ORDER BY seq")]
    assert bodies == [traces_request("one"), _logs(2)]
    queue.close()


def test_a_stored_request_is_answered_within_its_commit(tmp_path: Path) -> None:
    """With a persistent queue the answer comes once the row is committed, in well under a
    few seconds (a commit that never answers would hold the client forever)."""
    queue = DiskQueue(tmp_path, fsync=False)
    intake = _intake("http://127.0.0.1:9", queue=queue)

    async def accept() -> Refusal | None:
        return await asyncio.wait_for(
            intake.accept(_TRACES, traces_request("a"), CONTENT_PROTOBUF), 2
        )

    assert asyncio.run(accept()) is None
    queue.sync()
    assert queue.held_records == 1 and queue.held_bytes == len(traces_request("a"))
    queue.close()


def test_a_live_scorer_gets_the_request_and_its_row_and_reports_both(
    tmp_path: Path, downstream: RawDownstream
) -> None:
    """With a running scoring process, an accepted traces request reaches it as protobuf with
    its row: the process scores the trace and reports that row done and the trace scored."""
    queue = DiskQueue(tmp_path, fsync=False)
    flags = {"evaluators": "quoted_spans", "quiet_period_s": 0.1, "max_wait_s": 1}
    config = _config(downstream.endpoint, **flags)
    reports: list[tuple[Any, ...]] = []
    scorer = ScoringProcess(config, GatewayMetrics(None), on_scored=lambda *r: reports.append(r))
    trace_id = new_trace_id()
    intake = _intake(downstream.endpoint, queue=queue, scorer=scorer)
    try:
        body = request(openinference_rag_trace(trace_id))
        assert asyncio.run(intake.accept(_TRACES, body, CONTENT_JSON)) is None
        deadline = time.monotonic() + 20
        while not any(report[1] for report in reports) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        scorer.shutdown(10.0)
        queue.close()
    assert [seq for report in reports for seq in report[0]] == [1]
    assert [trace for report in reports for trace in report[1]] == [trace_id]
