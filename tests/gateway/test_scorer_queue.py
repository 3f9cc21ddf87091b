"""The scoring process's `Scorer` and `ScoredReporter` with a persistent queue, in-process on real
parts (runner, emitter, SDK providers, trace window): which queued requests are done for scoring
and which traces are scored (`take_scored`), in order, only once their turns are finished;
requests that hold nothing to score are done at once; traces scored before a restart are not
scored again; and the reporter flushes before it reports, once for everything waiting."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway._traces import genai_rag_trace, openinference_rag_trace, request

from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._scoring import ScoredReporter, Scorer, build_scorer
from groundwire.gateway._signals import (
    CONTENT_JSON,
    CONTENT_PROTOBUF,
    SIGNALS,
    MalformedRequestError,
    decode,
)
from groundwire.runner import RunnerConfig
from groundwire.trace_window import TraceWindow


class _Constant:
    """An evaluator that scores every turn 1.0 at once (no judge)."""

    name = "constant"

    def evaluate(self, turn: RagTurn) -> Score:
        return Score(name=self.name, value=1.0)


def _protobuf(trace: list[dict[str, Any]]) -> bytes:
    """The protobuf encoding of an OTLP/JSON request of `trace` (what the intake hands over)."""
    return bytes(decode(SIGNALS["traces"], request(trace), CONTENT_JSON).SerializeToString())


def _scorer(
    *,
    already: tuple[str, ...] = (),
    sample_rate: float = 1.0,
    max_traces: int = 100,
    flush: Any = None,
) -> tuple[Scorer, GatewayMetrics, InMemorySpanExporter]:
    """A scorer as the scoring process builds it, emitting carrier spans in memory."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = RunnerConfig(evaluators=[_Constant()], workers=1, sample_rate=sample_rate)
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=max_traces)
    metrics = GatewayMetrics(None)
    scorer = build_scorer(
        config,
        Emitter(tracer_provider=provider),
        window,
        metrics,
        already_scored=already,
        flush=flush,
    )
    return scorer, metrics, exporter


def _until_scored(scorer: Scorer) -> tuple[list[int], list[str]]:
    """`take_scored` once it names something (within 10 s)."""
    deadline = time.monotonic() + 10.0
    while True:
        done, ids = scorer.take_scored()
        if done or ids:
            return done, ids
        assert time.monotonic() < deadline, scorer.stats()
        time.sleep(0.01)


def test_a_request_is_done_when_every_trace_it_holds_is_scored() -> None:
    """Request 1 holds traces A and B, request 2 holds B's other spans: neither is done until
    both traces are released and their turns finished; then both, with both trace ids."""
    scorer, metrics, exporter = _scorer()
    try:
        a, b = openinference_rag_trace(), genai_rag_trace()
        now = time.monotonic()
        scorer.add(_protobuf(a + b[:1]), 4, now, (1,))
        scorer.add(_protobuf(b[1:]), 2, now, (2,))
        assert scorer.open_traces == 2 and scorer.take_scored() == ([], [])
        scorer.tick(time.monotonic() + 0.5)
        assert scorer.turns_submitted == 2
        done, ids = _until_scored(scorer)
        while scorer.stats().finished < 2:
            time.sleep(0.01)
        more = scorer.take_scored()
        assert sorted(done + more[0]) == [1, 2]
        assert sorted(ids + more[1]) == sorted([a[0]["traceId"], b[0]["traceId"]])
        assert metrics.count("scored_traces") == 2
        assert metrics.take_lags() and all(lag >= 0.0 for lag in metrics.take_lags() or [0.0])
    finally:
        scorer.shutdown(5.0)
    carriers = [s for s in exporter.get_finished_spans() if s.name == semconv.EVALUATION_SPAN_NAME]
    assert len(carriers) == 2


def test_an_unreadable_request_is_done_at_once_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A queued request the scorer cannot read holds nothing to score: it is done (not left on
    disk forever), with no trace scored, and a warning says it was forwarded."""
    scorer, metrics, _ = _scorer()
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    try:
        scorer.add(b"\xff\x00 not a message", 4, time.monotonic(), (7, 8))
        assert scorer.take_scored() == ([7, 8], [])
        assert scorer.take_scored() == ([], [])
        assert metrics.count("not_scored:unreadable") == 4
        messages = [r.getMessage() for r in caplog.records]
        assert len(messages) == 1
        assert messages[0].startswith("a traces request cannot be scored (it was forwarded): ")
    finally:
        scorer.shutdown(5.0)


def test_traces_scored_before_a_restart_are_late_and_their_requests_done() -> None:
    """A restarted gateway's scorer drops the spans of traces scored before (counted late), and
    a queued request holding only those is done at once; other traces are grouped as usual."""
    old = openinference_rag_trace()
    scorer, metrics, _ = _scorer(already=(old[0]["traceId"],))
    try:
        scorer.add(_protobuf(old), 3, time.monotonic(), (4,))
        assert metrics.count("late_spans") == 3
        assert scorer.open_traces == 0
        assert scorer.take_scored() == ([4], [])
        fresh = genai_rag_trace()
        scorer.add(_protobuf(fresh + old[:1]), 4, time.monotonic(), (5,))
        assert metrics.count("late_spans") == 4 and scorer.open_traces == 1
        scorer.tick(time.monotonic() + 0.5)
        assert _until_scored(scorer) == ([5], [fresh[0]["traceId"]])
    finally:
        scorer.shutdown(5.0)


def test_a_request_of_a_just_released_trace_is_done_at_once() -> None:
    """Spans arriving after their trace was released are late: the request holding only them
    is done at once, not left waiting for a trace that will not open again."""
    scorer, metrics, _ = _scorer()
    try:
        trace = openinference_rag_trace()
        scorer.add(_protobuf(trace), 3, time.monotonic(), (1,))
        scorer.tick(time.monotonic() + 0.5)
        assert _until_scored(scorer) == ([1], [trace[0]["traceId"]])
        late = dict(trace[0], spanId="00000000000000aa")
        scorer.add(_protobuf([late]), 1, time.monotonic(), (2,))
        assert metrics.count("late_spans") == 1
        assert scorer.take_scored() == ([2], [])
    finally:
        scorer.shutdown(5.0)


def test_a_request_of_no_queue_row_is_not_tracked() -> None:
    """Without a persistent queue (no rows), scored traces are still named, no request is."""
    scorer, _, _ = _scorer()
    try:
        trace = openinference_rag_trace()
        scorer.add(_protobuf(trace), 3, time.monotonic())
        scorer.tick(time.monotonic() + 0.5)
        assert _until_scored(scorer) == ([], [trace[0]["traceId"]])
    finally:
        scorer.shutdown(5.0)


def test_sampled_out_turns_leave_their_traces_scored_at_once() -> None:
    """A turn the runner samples out is never finished by it: its trace counts as scored as
    soon as it is submitted, not never."""
    scorer, _, exporter = _scorer(sample_rate=0.0)
    try:
        trace = openinference_rag_trace()
        scorer.add(_protobuf(trace), 3, time.monotonic(), (3,))
        scorer.tick(time.monotonic() + 0.5)
        assert scorer.take_scored() == ([3], [trace[0]["traceId"]])
        assert scorer.stats().sampled_out == 1
    finally:
        scorer.shutdown(5.0)
    assert exporter.get_finished_spans() == ()


def test_a_forced_trace_is_evicted_submitted_and_its_request_done() -> None:
    """At the open-trace bound the oldest trace is forced out: counted evicted, its turn
    submitted at once and its request done once scored."""
    scorer, metrics, _ = _scorer(max_traces=1)
    try:
        first, second = openinference_rag_trace(), genai_rag_trace()
        scorer.add(_protobuf(first), 3, time.monotonic(), (1,))
        scorer.add(_protobuf(second), 3, time.monotonic(), (2,))
        assert metrics.count("evicted_traces") == 1 and scorer.turns_submitted == 1
        assert _until_scored(scorer) == ([1], [first[0]["traceId"]])
    finally:
        scorer.shutdown(5.0)


class _Held:
    """An evaluator that holds every turn until released (a slow judge call)."""

    name = "held"

    def __init__(self) -> None:
        self.release = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        self.release.wait(10.0)
        return Score(name=self.name, value=1.0)


def test_a_dropped_turn_does_not_count_as_finished() -> None:
    """The runner reporting a turn dropped (shutdown's deadline) does not finish it: its trace
    is not named scored until the turn is really finished (a restarted gateway scores a
    dropped one from the queue)."""
    held = _Held()
    provider = TracerProvider()
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=100)
    config = RunnerConfig(evaluators=[held], workers=1)
    scorer = build_scorer(config, Emitter(tracer_provider=provider), window, GatewayMetrics(None))
    try:
        trace = openinference_rag_trace()
        scorer.add(_protobuf(trace), 3, time.monotonic(), (1,))
        scorer.tick(time.monotonic() + 0.5)
        turn = RagTurn(query="q", answer="a", contexts=["c"], trace_id=trace[0]["traceId"])
        scorer.turn_finished(turn, semconv.OUTCOME_DROPPED)
        assert scorer.take_scored() == ([], [])
        held.release.set()
        assert _until_scored(scorer) == ([1], [trace[0]["traceId"]])
    finally:
        held.release.set()
        scorer.shutdown(5.0)


def test_shutdown_scores_the_open_traces_and_reports_them() -> None:
    """At shutdown the open traces are scored as they stand and their requests done."""
    scorer, _, exporter = _scorer()
    trace = openinference_rag_trace()
    scorer.add(_protobuf(trace), 3, time.monotonic(), (9,))
    assert scorer.shutdown(5.0) == (1, True)
    assert scorer.take_scored() == ([9], [trace[0]["traceId"]])
    assert len(exporter.get_finished_spans()) >= 1


def test_flush_results_calls_the_flush_given() -> None:
    """`flush_results` exports through the flush it was given; without one it does nothing."""
    calls: list[int] = []
    scorer, _, _ = _scorer(flush=lambda: calls.append(1))
    try:
        scorer.flush_results()
        assert calls == [1]
    finally:
        scorer.shutdown(5.0)
    plain, _, _ = _scorer()
    plain.flush_results()
    plain.shutdown(5.0)


class _Reports:
    """What a `ScoredReporter` did, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.gate.set()

    def flush(self) -> None:
        self.gate.wait(10)
        with self.lock:
            self.events.append(("flush",))

    def send(self, done: list[int], ids: list[str], results: list[ResultRequest]) -> None:
        with self.lock:
            self.events.append(("send", done, ids, results))

    def results(self, ids: list[str], last: bool) -> list[ResultRequest]:
        with self.lock:
            self.events.append(("results", ids, last))
        return [ResultRequest("traces", 1, b"r")] if last else []


def test_the_reporter_flushes_then_reports_everything_waiting_at_once() -> None:
    """Reports offered while a flush runs go out together after one more flush; each report
    is sent only after its results are flushed."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send)
    reports.gate.clear()
    reporter.offer([1], ["a"])
    time.sleep(0.1)  # the reporter is in the first flush
    reporter.offer([2], ["b"])
    reporter.offer([3], [])
    reports.gate.set()
    reporter.close(5.0)
    assert reports.events == [
        ("flush",),
        ("send", [1], ["a"], []),
        ("flush",),
        ("send", [2, 3], ["b"], []),
    ]


def test_the_reporter_does_not_flush_for_requests_alone_nor_send_nothing() -> None:
    """Requests done with no trace scored need no flush; an empty report is not sent."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send)
    reporter.offer([4], [])
    reporter.offer([], [])
    reporter.close(5.0)
    assert reports.events == [("send", [4], [], [])]


def test_the_reporter_takes_the_results_and_all_of_them_at_the_last_report() -> None:
    """With a results source, each report takes its traces' results; the last one takes every
    result still held, after a flush, and is sent even with no trace to name."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send, reports.results)
    reporter.offer([1], ["a"])
    time.sleep(0.2)
    reporter.close(5.0)
    assert reports.events == [
        ("flush",),
        ("results", ["a"], False),
        ("send", [1], ["a"], []),
        ("flush",),
        ("results", [], True),
        ("send", [], [], [ResultRequest("traces", 1, b"r")]),
    ]


def test_a_failing_report_is_logged_and_the_reporter_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A report that fails (the flush raises) is logged; the next one is still sent."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    sent: list[list[int]] = []
    failures = [RuntimeError("exporter gone")]

    def flush() -> None:
        if failures:
            raise failures.pop()

    reporter = ScoredReporter(flush, lambda done, ids, results: sent.append(done))
    reporter.offer([1], ["a"])
    time.sleep(0.2)
    reporter.offer([2], ["b"])
    reporter.close(5.0)
    assert sent == [[2]]
    assert [r.getMessage() for r in caplog.records] == ["reporting scored traces failed"]


def test_the_reporter_thread_is_named_and_ends_at_close() -> None:
    """The reporter runs on a daemon thread named for it, which ends at `close`."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send)
    (thread,) = [t for t in threading.enumerate() if t.name == "gateway-scored"]
    assert thread.daemon
    reporter.close(5.0)
    assert not thread.is_alive()


class _SecondHeld:
    """An evaluator that scores the first turn at once and holds the second until released."""

    name = "second_held"

    def __init__(self) -> None:
        self.release = threading.Event()
        self._calls = 0
        self._lock = threading.Lock()

    def evaluate(self, turn: RagTurn) -> Score:
        with self._lock:
            self._calls += 1
            second = self._calls == 2
        if second:
            self.release.wait(10.0)
        return Score(name=self.name, value=1.0)


def test_a_trace_of_two_turns_is_scored_only_when_both_are_finished() -> None:
    """A trace the assembler makes two turns of (two root chains): with the first turn
    finished and the second still with the runner, the trace is not named scored; once the
    second finishes, it is, once."""
    held = _SecondHeld()
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=100)
    config = RunnerConfig(evaluators=[held], workers=2)
    scorer = build_scorer(
        config, Emitter(tracer_provider=TracerProvider()), window, GatewayMetrics(None)
    )
    try:
        trace_id = openinference_rag_trace()[0]["traceId"]
        spans = openinference_rag_trace(trace_id) + openinference_rag_trace(trace_id)
        scorer.add(_protobuf(spans), 6, time.monotonic(), (3,))
        scorer.tick(time.monotonic() + 0.5)
        assert scorer.turns_submitted == 2
        _until_finished = time.monotonic() + 10.0
        while scorer.stats().finished < 1:
            assert time.monotonic() < _until_finished
            time.sleep(0.01)
        time.sleep(0.05)
        assert scorer.take_scored() == ([], [])
        held.release.set()
        assert _until_scored(scorer) == ([3], [trace_id])
        assert scorer.take_scored() == ([], [])
    finally:
        held.release.set()
        scorer.shutdown(5.0)


def test_turns_the_runner_drops_at_shutdown_leave_their_traces_unscored() -> None:
    """The runner's own report of turns dropped by shutdown's deadline (one slow, one queued
    behind it) reaches the scorer: neither trace is named scored, even once the slow turn has
    run (a restarted gateway scores both from the queue)."""
    held = _Held()
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=100)
    config = RunnerConfig(evaluators=[held], workers=1)
    scorer = build_scorer(
        config, Emitter(tracer_provider=TracerProvider()), window, GatewayMetrics(None)
    )
    try:
        scorer.add(_protobuf(openinference_rag_trace()), 3, time.monotonic(), (1,))
        scorer.tick(time.monotonic() + 0.5)
        scorer.add(_protobuf(openinference_rag_trace()), 3, time.monotonic(), (2,))
        scorer.tick(time.monotonic() + 0.5)
        threading.Timer(0.5, held.release.set).start()
        _, drained = scorer.shutdown(0.2)
        assert drained is False
    finally:
        held.release.set()
    time.sleep(1.0)
    assert scorer.take_scored() == ([], [])


def test_a_stop_arriving_with_more_reports_ends_with_the_last_one() -> None:
    """A report and the stop offered while a flush runs: the reporter sends them as the last
    report (taking every result still held) and ends at once."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send, reports.results)
    reports.gate.clear()
    reporter.offer([1], ["a"])
    time.sleep(0.1)  # the reporter is in the first flush
    reporter.offer([2], ["b"])
    started = time.monotonic()
    reporter._items.put(None)  # what close() sends, without waiting for the thread
    reports.gate.set()
    reporter.close(5.0)
    assert time.monotonic() - started < 2.0
    assert reports.events[-3:] == [
        ("flush",),
        ("results", ["b"], True),
        ("send", [2], ["b"], [ResultRequest("traces", 1, b"r")]),
    ]


def test_close_waits_no_longer_than_its_timeout() -> None:
    """A report stuck in its flush (the downstream hangs) holds `close` only `timeout_s`."""
    reports = _Reports()
    reporter = ScoredReporter(reports.flush, reports.send)
    reports.gate.clear()
    reporter.offer([1], ["a"])
    started = time.monotonic()
    reporter.close(0.3)
    assert time.monotonic() - started < 2.0
    reports.gate.set()


def test_a_trace_is_timed_from_when_its_request_arrived() -> None:
    """The quiet period runs from when spans were seen here, the scoring lag from when the
    request was received (here 5 s before it reached the scorer)."""
    scorer, metrics, _ = _scorer()
    try:
        scorer.add(_protobuf(openinference_rag_trace()), 3, time.monotonic() - 5.0)
        scorer.tick(time.monotonic())
        assert scorer.turns_submitted == 0  # seen just now: not quiet yet
        scorer.tick(time.monotonic() + 0.5)
        assert scorer.turns_submitted == 1
        (lag,) = metrics.take_lags()
        assert 5.0 <= lag < 15.0
    finally:
        scorer.shutdown(5.0)


def test_each_request_counts_only_its_own_late_spans() -> None:
    """Two requests of late spans, one after the other: each adds its own count."""
    scorer, metrics, _ = _scorer()
    try:
        trace = openinference_rag_trace()
        scorer.add(_protobuf(trace), 3, time.monotonic())
        scorer.tick(time.monotonic() + 0.5)
        scorer.add(_protobuf([dict(trace[0], spanId="00000000000000aa")]), 1, time.monotonic())
        assert metrics.count("late_spans") == 1
        scorer.add(_protobuf([dict(trace[0], spanId="00000000000000bb")]), 1, time.monotonic())
        assert metrics.count("late_spans") == 2
    finally:
        scorer.shutdown(5.0)


def test_the_warning_of_an_unreadable_request_names_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The warning gives the decoding error."""
    body = b"\xff\x00 not a message"
    with pytest.raises(MalformedRequestError) as raised:
        decode(SIGNALS["traces"], body, CONTENT_PROTOBUF)
    scorer, _, _ = _scorer()
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    try:
        scorer.add(body, 1, time.monotonic())
        assert [r.getMessage() for r in caplog.records] == [
            f"a traces request cannot be scored (it was forwarded): {raised.value}"
        ]
    finally:
        scorer.shutdown(5.0)


def test_shutdown_gives_the_runner_no_more_than_the_time_left() -> None:
    """A turn still being evaluated: shutdown returns within its timeout, not drained."""
    held = _Held()
    window = TraceWindow(quiet=0.2, max_wait=30.0, max_spans=1000, max_traces=100)
    config = RunnerConfig(evaluators=[held], workers=1)
    scorer = build_scorer(
        config, Emitter(tracer_provider=TracerProvider()), window, GatewayMetrics(None)
    )
    try:
        scorer.add(_protobuf(openinference_rag_trace()), 3, time.monotonic())
        scorer.tick(time.monotonic() + 0.5)
        threading.Timer(3.0, held.release.set).start()
        started = time.monotonic()
        _, drained = scorer.shutdown(0.3)
        assert drained is False
        assert time.monotonic() - started < 0.9
    finally:
        held.release.set()
