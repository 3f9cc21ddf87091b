"""The export guard's rules, one at a time: where a probe connects, what is counted as exported,
failed or skipped, when the breaker opens, and how the shutdown deadline caps an export.

Real SDK exporters (in-memory, and the OTLP ones for their timeouts) and real loopback sockets: a
bound port that refuses connections and a listening one that accepts them.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from groundwire._breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker
from groundwire.exporters._guard import (
    EXPORT_BREAKER_COOLDOWN_S,
    ExportGuard,
    GuardedLogExporter,
    GuardedMetricExporter,
    GuardedSpanExporter,
    _cap_timeout,
    _reachable,
    probe_address,
)


@pytest.fixture
def refusing() -> Iterator[tuple[str, int]]:
    """A loopback address bound but not listening: connections are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield ("127.0.0.1", int(sock.getsockname()[1]))
    sock.close()


@pytest.fixture
def listening() -> Iterator[tuple[str, int]]:
    """A loopback address that accepts connections."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield ("127.0.0.1", int(sock.getsockname()[1]))
    sock.close()


class Outcomes:
    """An observer that keeps every outcome a guard reports."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, str | None]] = []

    def __call__(self, outcome: str, count: int, why: str | None) -> None:
        """Keep one outcome."""
        self.seen.append((outcome, count, why))


def _spans(count: int) -> list[ReadableSpan]:
    """`count` finished spans."""
    return [ReadableSpan(name=f"span-{i}") for i in range(count)]


class RecordingMetrics(MetricExporter):
    """A metric exporter that keeps what it was asked (the SDK ships no in-memory one)."""

    def __init__(self, result: MetricExportResult = MetricExportResult.SUCCESS) -> None:
        super().__init__()
        self.result = result
        self.timeouts: list[float] = []
        self.flushed: list[float] = []
        self.shut: list[float] = []

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Keep the timeout; answer the set result."""
        self.timeouts.append(timeout_millis)
        return self.result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Keep the timeout; False, so a test sees the answer passed through."""
        self.flushed.append(timeout_millis)
        return False

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Keep the timeout."""
        self.shut.append(timeout_millis)


class RaisingSpans(InMemorySpanExporter):
    """An in-memory span exporter whose export raises."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Raise a long error."""
        raise ConnectionError("x" * 400)


def test_probe_address_reads_host_and_port_from_every_endpoint_form() -> None:
    """Scheme URLs, bare host:port (gRPC) and defaults per scheme give the probe's address."""
    assert probe_address("http://collector:4318/v1/traces", default_port=1) == ("collector", 4318)
    assert probe_address("collector:4317", default_port=1) == ("collector", 4317)
    assert probe_address("collector", default_port=4317) == ("collector", 4317)
    assert probe_address("http://collector/v1/traces", default_port=1) == ("collector", 80)
    assert probe_address("https://collector", default_port=1) == ("collector", 443)
    assert probe_address("grpc://collector", default_port=4317) == ("collector", 4317)


def test_probe_address_is_none_when_nothing_can_be_probed() -> None:
    """No host, an unparsable URL or a bad port: no probe (every failed export then counts)."""
    assert probe_address("", default_port=1) is None
    assert probe_address("http://:4318", default_port=1) is None
    assert probe_address("http://[::1", default_port=1) is None
    assert probe_address("http://collector:99999", default_port=1) is None


def test_probe_address_is_none_behind_a_proxy_unless_the_host_bypasses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A proxy for the scheme would answer the probe itself: no probe, unless NO_PROXY names
    the host; a proxy for another scheme does not matter."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", "http://proxy.internal:3128")
    assert probe_address("http://collector:4318", default_port=1) is None
    assert probe_address("https://collector:4318", default_port=1) == ("collector", 4318)
    assert probe_address("collector:4317", default_port=1) == ("collector", 4317)
    monkeypatch.setenv("no_proxy", "collector")
    assert probe_address("http://collector:4318", default_port=1) == ("collector", 4318)


def test_reachable_tells_a_listening_port_from_a_refusing_one(
    listening: tuple[str, int], refusing: tuple[str, int]
) -> None:
    """A TCP connect decides; a timeout of zero or less still gets a short real attempt."""
    assert _reachable(listening, 1.0) is True
    assert _reachable(listening, 0.0) is True
    assert _reachable(listening, -5.0) is True
    assert _reachable(refusing, 1.0) is False


class _Client:
    """Where the SDK's HTTP exporters keep their timeout."""

    def __init__(self, timeout: object) -> None:
        self._timeout = timeout


class _Owner:
    """An exporter with a client and a timeout of its own."""

    def __init__(self, client: object, timeout: object) -> None:
        self._client = client
        self._timeout = timeout


class _ReadOnly:
    """A client whose timeout cannot be set."""

    @property
    def _timeout(self) -> float:
        return 9.0


def test_cap_timeout_caps_the_sdk_exporters_where_they_keep_it() -> None:
    """The HTTP exporter's client timeout and the gRPC exporter's own are capped to what is left;
    a shorter one is kept; a cap never goes below a millisecond."""
    http = HttpSpans(endpoint="http://127.0.0.1:9/v1/traces", timeout=7)
    _cap_timeout(http, 2.5)
    assert http._client._timeout == 2.5
    grpc = GrpcSpans(endpoint="127.0.0.1:9", insecure=True, timeout=7)
    _cap_timeout(grpc, 3.0)
    assert grpc._timeout == 3.0
    _cap_timeout(grpc, 5.0)
    assert grpc._timeout == 3.0
    _cap_timeout(grpc, -1.0)
    assert grpc._timeout == 0.001


def test_cap_timeout_sets_one_owner_and_leaves_what_is_not_a_number() -> None:
    """The client's timeout wins over the exporter's; without one (or a bool) the exporter's is
    capped; a timeout that cannot be set is left, and the exporter's then too."""
    both = _Owner(_Client(10), 10)
    _cap_timeout(both, 4.0)
    assert (both._client._timeout, both._timeout) == (4.0, 10)
    boolean = _Owner(_Client(True), 10)
    _cap_timeout(boolean, 4.0)
    assert (boolean._client._timeout, boolean._timeout) == (True, 4.0)
    plain = _Owner(None, 6)
    _cap_timeout(plain, 4.0)
    assert plain._timeout == 4.0
    fixed = _Owner(_ReadOnly(), 10)
    _cap_timeout(fixed, 4.0)
    assert (fixed._client._timeout, fixed._timeout) == (9.0, 10)
    text = _Owner(None, "10")
    _cap_timeout(text, 4.0)
    assert text._timeout == "10"


def test_a_new_guard_opens_its_breaker_at_the_first_failure_and_counts_nothing() -> None:
    """Defaults: one failure opens the breaker, probes every EXPORT_BREAKER_COOLDOWN_S; no counts,
    no deadline, no reason yet; what it counts follows its name."""
    guard = ExportGuard("OTLP traces endpoint x", None)
    assert guard.name == "OTLP traces endpoint x" and guard.breaker.name == guard.name
    assert guard.breaker.threshold == 1
    assert guard.breaker.cooldown_s == EXPORT_BREAKER_COOLDOWN_S == 5.0
    assert (guard.exported, guard.not_exported, guard.unsent()) == (0, 0, 0)
    assert guard.deadline is None and guard.remaining_s() is None
    assert (guard.endpoint, guard.last_failure, guard.address) == ("", "", None)
    assert guard.given is None and guard.observer is None and guard.abort is None
    assert guard.kind == "spans"
    assert ExportGuard("OTLP logs endpoint x", None).kind == "log records"
    assert ExportGuard("OTLP metrics endpoint x", None).kind == "metric exports"
    shared = CircuitBreaker("shared", threshold=3)
    assert ExportGuard("g", None, shared).breaker is shared


def test_unsent_is_given_minus_exported_when_the_processor_counts() -> None:
    """With the processor's count: handed over minus exported, never below zero; without it:
    the failed and skipped items."""
    guard = ExportGuard("traces", None)
    guard.settle(False, 4)
    guard.skip(2)
    assert guard.unsent() == 6 == guard.not_exported
    guard.given = lambda: 10
    guard.settle(True, 3)
    assert guard.unsent() == 7
    guard.settle(True, 20)
    assert guard.unsent() == 0


def test_settle_counts_and_tells_the_observer(refusing: tuple[str, int]) -> None:
    """Exported and failed items are counted apart and reported with their reason; a failure
    with no address to probe opens the breaker with the reason kept."""
    guard = ExportGuard("traces", None)
    guard.observer = outcomes = Outcomes()
    guard.settle(True, 3)
    guard.settle(False, 2, "boom")
    assert (guard.exported, guard.not_exported) == (3, 2)
    assert outcomes.seen == [("exported", 3, None), ("failed", 2, "boom")]
    assert guard.breaker.state == OPEN
    assert guard.last_failure == "export failed and the endpoint refuses connections"


def test_a_failure_against_a_refusing_endpoint_opens_the_breaker(
    refusing: tuple[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """The endpoint refuses connections: an outage, logged once with the reason."""
    guard = ExportGuard("OTLP traces endpoint here", refusing)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        guard.settle(False, 1)
    assert guard.breaker.state == OPEN
    assert guard.last_failure == "export failed and the endpoint refuses connections"
    assert "export failed and the endpoint refuses connections" in caplog.text


def test_a_failure_from_an_answering_endpoint_closes_a_probing_breaker(
    listening: tuple[str, int],
) -> None:
    """An error answer proves the endpoint is there: the breaker closes, the items count as
    not exported."""
    guard = ExportGuard("traces", listening)
    guard.breaker.cooldown_s = 0.0
    guard.breaker.failure("down")
    assert guard.breaker.allow() and guard.breaker.state == HALF_OPEN
    guard.settle(False, 2)
    assert guard.breaker.state == CLOSED and guard.not_exported == 2
    assert guard.last_failure == ""
    guard.breaker.failure("down again")
    assert guard.breaker.allow()
    guard.settle(True, 1)
    assert guard.breaker.state == CLOSED and guard.exported == 1


def test_skip_counts_and_says_why(refusing: tuple[str, int]) -> None:
    """Skipped items count as not exported; the reason names the open breaker (with the last
    failure) or the passed deadline."""
    guard = ExportGuard("OTLP traces endpoint here", None)
    guard.observer = outcomes = Outcomes()
    guard.skip(2)
    assert outcomes.seen[-1] == (
        "skipped",
        2,
        "not sent: OTLP traces endpoint here unreachable (circuit open)",
    )
    guard.last_failure = "connection to h:1 failed"
    guard.skip(1)
    assert outcomes.seen[-1][2] == (
        "not sent: OTLP traces endpoint here unreachable (connection to h:1 failed)"
    )
    guard.deadline = time.monotonic() + 60
    guard.skip(1)
    assert "unreachable" in str(outcomes.seen[-1][2])
    guard.deadline = time.monotonic() - 1
    guard.skip(3)
    assert outcomes.seen[-1] == ("skipped", 3, "not sent: the shutdown deadline had passed")
    assert guard.not_exported == 7
    quiet = ExportGuard("logs", None)
    quiet.skip(5)
    assert quiet.not_exported == 5


def test_admit_refuses_after_the_deadline_and_while_the_breaker_is_open() -> None:
    """Past the deadline nothing goes; an open breaker refuses until its cool-down passed."""
    guard = ExportGuard("traces", None)
    assert guard.admit() is True
    guard.deadline = time.monotonic() - 0.001
    assert guard.admit() is False
    guard.deadline = time.monotonic() + 60
    assert guard.admit() is True
    assert 0 < (guard.remaining_s() or 0) <= 60
    guard.deadline = None
    guard.breaker.failure("down")
    assert guard.admit() is False
    assert guard.breaker.refused == 1


def test_admit_probes_only_when_the_breaker_is_not_closed_or_a_deadline_is_set(
    refusing: tuple[str, int], listening: tuple[str, int]
) -> None:
    """A closed breaker without a deadline costs no probe (an unreachable port still admits);
    with a deadline, or when probing after a cool-down, a refusing port is a failure."""
    closed = ExportGuard("traces", refusing)
    assert closed.admit() is True and closed.breaker.state == CLOSED
    closing = ExportGuard("traces", refusing)
    closing.deadline = time.monotonic() + 60
    assert closing.admit() is False
    assert closing.last_failure == f"connection to 127.0.0.1:{refusing[1]} failed"
    assert closing.breaker.state == OPEN
    probing = ExportGuard("traces", refusing)
    probing.breaker.cooldown_s = 0.0
    probing.breaker.failure("down")
    assert probing.admit() is False and probing.breaker.state == OPEN
    back = ExportGuard("traces", listening)
    back.breaker.cooldown_s = 0.0
    back.breaker.failure("down")
    assert back.admit() is True and back.breaker.state == HALF_OPEN
    unprobed = ExportGuard("traces", None)
    unprobed.breaker.cooldown_s = 0.0
    unprobed.breaker.failure("down")
    assert unprobed.admit() is True


def test_close_by_sets_the_deadline_and_stops_an_exporter_whose_endpoint_refuses(
    refusing: tuple[str, int], listening: tuple[str, int]
) -> None:
    """At shutdown a refusing endpoint is a failure at once and the exporter's retries stop;
    an answering one, or one with no address, is left to export."""
    stopped: list[str] = []
    down = ExportGuard("traces", refusing)
    down.abort = lambda: stopped.append("down")
    deadline = time.monotonic() + 5
    down.close_by(deadline)
    assert down.deadline == deadline
    assert stopped == ["down"] and down.breaker.state == OPEN
    assert down.last_failure == f"connection to 127.0.0.1:{refusing[1]} failed"
    up = ExportGuard("traces", listening)
    up.abort = lambda: stopped.append("up")
    up.close_by(deadline)
    assert stopped == ["down"] and up.breaker.state == CLOSED and up.deadline == deadline
    blind = ExportGuard("traces", None)
    blind.abort = lambda: stopped.append("blind")
    blind.close_by(deadline)
    assert stopped == ["down"] and blind.deadline == deadline


def test_stop_survives_an_exporter_that_fails_to_stop(caplog: pytest.LogCaptureFixture) -> None:
    """A failing abort is logged at debug level, never raised; no abort is no call."""
    guard = ExportGuard("traces", None)
    guard.stop()

    def fails() -> None:
        raise RuntimeError("stuck")

    guard.abort = fails
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        guard.stop()
    assert "could not stop the exporter" in caplog.text


def test_a_guarded_span_exporter_exports_and_counts() -> None:
    """Spans go through while the endpoint is fine, counted item by item."""
    inner = InMemorySpanExporter()
    guard = ExportGuard("traces", None)
    exporter = GuardedSpanExporter(inner, guard)
    assert exporter.export(_spans(3)) is SpanExportResult.SUCCESS
    assert len(inner.get_finished_spans()) == 3
    assert guard.exported == 3 and guard.not_exported == 0


def test_a_guarded_export_is_skipped_when_not_admitted() -> None:
    """With the breaker open the inner exporter is not called and the batch counts as skipped."""
    inner = InMemorySpanExporter()
    guard = ExportGuard("traces", None)
    guard.observer = outcomes = Outcomes()
    guard.breaker.failure("down")
    exporter = GuardedSpanExporter(inner, guard)
    assert exporter.export(_spans(4)) is SpanExportResult.FAILURE
    assert inner.get_finished_spans() == ()
    assert guard.not_exported == 4 and outcomes.seen[0][:2] == ("skipped", 4)


def test_a_raising_export_is_a_failure_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    """An exporter that raises gives FAILURE; the reason (type and message, at most 300
    characters) reaches the observer; the traceback only the debug log."""
    guard = ExportGuard("traces", None)
    guard.observer = outcomes = Outcomes()
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        result = GuardedSpanExporter(RaisingSpans(), guard).export(_spans(2))
    assert result is SpanExportResult.FAILURE
    outcome, count, why = outcomes.seen[0]
    assert (outcome, count) == ("failed", 2)
    assert why == ("ConnectionError: " + "x" * 400)[:300] and len(why) == 300
    assert "span export raised" in caplog.text


def test_a_failed_span_export_counts_as_not_exported() -> None:
    """A FAILURE from the inner exporter is passed on and counted."""
    inner = InMemorySpanExporter()
    inner.shutdown()  # the SDK's in-memory exporter refuses after shutdown
    guard = ExportGuard("traces", None)
    result = GuardedSpanExporter(inner, guard).export(_spans(2))
    assert result is SpanExportResult.FAILURE
    assert guard.not_exported == 2 and guard.exported == 0


def test_a_guarded_export_caps_the_exporter_timeout_to_the_deadline() -> None:
    """During shutdown the inner exporter's timeout is capped to what is left."""
    inner = HttpSpans(endpoint="http://127.0.0.1:9/v1/traces", timeout=30)
    guard = ExportGuard("traces", None)
    guard.deadline = time.monotonic() + 0.5
    GuardedSpanExporter(inner, guard).export([])
    assert inner._client._timeout <= 0.5


def test_guarded_shutdown_is_once_and_ends_sending() -> None:
    """The inner exporter is shut once; the guard's deadline becomes now (kept if earlier), and
    the guard's abort is that shutdown."""
    inner = InMemorySpanExporter()
    guard = ExportGuard("traces", None)
    exporter = GuardedSpanExporter(inner, guard)
    assert guard.abort == exporter.shutdown
    before = time.monotonic()
    guard.stop()
    assert guard.deadline is not None and before <= guard.deadline <= time.monotonic()
    first = guard.deadline
    exporter.shutdown()
    assert guard.deadline == first
    assert exporter.export(_spans(1)) is SpanExportResult.FAILURE
    assert guard.not_exported == 1


def test_guarded_log_exporter_exports_and_flushes() -> None:
    """Log records are counted item by item; flush is the inner exporter's."""
    inner = InMemoryLogRecordExporter()
    guard = ExportGuard("logs", None)
    exporter = GuardedLogExporter(inner, guard)
    assert exporter.export([]) is LogRecordExportResult.SUCCESS
    assert exporter.force_flush(10) is True
    guard.breaker.failure("down")
    assert exporter.export([object()]) is LogRecordExportResult.FAILURE  # type: ignore[list-item]
    assert guard.not_exported == 1


def test_guarded_metric_exporter_keeps_the_inner_preferences_and_caps_its_timeout() -> None:
    """A metric export counts one batch; its timeout is capped to the deadline (in ms, at least
    1 ms); flush and shutdown pass their timeouts through; shutdown is once."""
    inner = RecordingMetrics()
    guard = ExportGuard("OTLP metrics endpoint x", None)
    exporter = GuardedMetricExporter(inner, guard)
    assert exporter._preferred_temporality == inner._preferred_temporality
    assert exporter._preferred_aggregation == inner._preferred_aggregation
    data = MetricsData(resource_metrics=[])
    assert exporter.export(data, timeout_millis=4_000) is MetricExportResult.SUCCESS
    assert exporter.export(data) is MetricExportResult.SUCCESS
    assert inner.timeouts == [4_000, 10_000]
    guard.deadline = time.monotonic() + 2.0
    exporter.export(data, timeout_millis=60_000)
    assert 1_000 < inner.timeouts[-1] <= 2_000
    exporter.export(data, timeout_millis=5)
    assert inner.timeouts[-1] == 5
    assert guard.exported == 4
    assert exporter.force_flush(1_234) is False and inner.flushed == [1_234]
    exporter.force_flush()
    assert inner.flushed[-1] == 10_000
    exporter.shutdown(timeout_millis=777)
    exporter.shutdown()
    assert inner.shut == [777]


def test_a_failed_metric_export_counts_one_batch() -> None:
    """FAILURE from the inner metric exporter is one batch not exported."""
    inner = RecordingMetrics(MetricExportResult.FAILURE)
    guard = ExportGuard("metrics", None)
    exporter = GuardedMetricExporter(inner, guard)
    assert exporter.export(MetricsData(resource_metrics=[])) is MetricExportResult.FAILURE
    assert guard.not_exported == 1 and guard.exported == 0


@pytest.fixture
def silent() -> Iterator[tuple[str, int]]:
    """A loopback address whose accept queue is full: a connect waits until its timeout (an
    endpoint that drops connection attempts)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = ("127.0.0.1", int(server.getsockname()[1]))
    filler = socket.create_connection(address, timeout=1.0)
    yield address
    filler.close()
    server.close()


def _timed(call: Any, *args: Any) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    started = time.monotonic()
    result = call(*args)
    return result, time.monotonic() - started


def test_a_probe_waits_no_longer_than_asked(silent: tuple[str, int]) -> None:
    """An endpoint that never answers a connect: the probe gives up after its timeout (a
    floor of 10 ms when none is left), not after the full second."""
    assert _timed(_reachable, silent, 0.2)[1] < 0.6
    reachable, took = _timed(_reachable, silent, 0.0)
    assert reachable is False and took < 0.5


def test_probes_near_the_deadline_wait_only_for_what_is_left(silent: tuple[str, int]) -> None:
    """At shutdown and when admitting an export before the deadline, the probe's wait is
    capped to the time left (under the one-second probe timeout)."""
    closing = ExportGuard("traces", silent)
    _, took = _timed(closing.close_by, time.monotonic() + 0.15)
    assert took < 0.7
    admitting = ExportGuard("traces", silent)
    admitting.deadline = time.monotonic() + 0.15
    admitted, took = _timed(admitting.admit)
    assert admitted is False and took < 0.7


def test_failed_items_add_up() -> None:
    """Every failed or skipped batch adds to the count."""
    guard = ExportGuard("traces", None)
    guard.settle(False, 2)
    guard.settle(False, 3)
    assert guard.not_exported == 5


def test_skip_within_the_last_second_still_names_the_endpoint() -> None:
    """Before the deadline, however close, a skip is for the endpoint, not the deadline."""
    guard = ExportGuard("traces", None)
    guard.observer = outcomes = Outcomes()
    guard.deadline = time.monotonic() + 0.5
    guard.skip(1)
    assert outcomes.seen == [("skipped", 1, "not sent: traces unreachable (circuit open)")]


def test_a_successful_export_reports_no_reason() -> None:
    """The observer hears a successful export with no reason (None, not an empty text)."""
    guard = ExportGuard("traces", None)
    guard.observer = outcomes = Outcomes()
    GuardedSpanExporter(InMemorySpanExporter(), guard).export(_spans(2))
    assert outcomes.seen == [("exported", 2, None)]


def _debug(caplog: pytest.LogCaptureFixture, message: str) -> logging.LogRecord:
    """The one debug record with exactly `message`."""
    (record,) = [r for r in caplog.records if r.getMessage() == message]
    return record


def _traceback_of(record: logging.LogRecord) -> object:
    """The exception type whose traceback a record carries (None when it carries none; a
    record logged with exc_info=False keeps False, which is no traceback either)."""
    info = record.exc_info
    return info[0] if isinstance(info, tuple) else None


def test_debug_lines_carry_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """An exporter that fails to stop or raises during export: the debug line says so exactly,
    with the traceback."""
    guard = ExportGuard("traces", None)

    def fails() -> None:
        raise RuntimeError("stuck")

    guard.abort = fails
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        guard.stop()
        GuardedSpanExporter(RaisingSpans(), ExportGuard("t", None)).export(_spans(1))
    assert _traceback_of(_debug(caplog, "could not stop the exporter")) is RuntimeError
    assert _traceback_of(_debug(caplog, "span export raised")) is ConnectionError


class _FlushRecording(InMemorySpanExporter):
    """An in-memory span exporter that keeps the flush timeouts it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[object] = []

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Keep the timeout."""
        self.flushed.append(timeout_millis)
        return True


def test_batch_flush_passes_its_timeout_default_30_s() -> None:
    """force_flush without a timeout asks the inner exporter for 30 s; a given one is passed."""
    inner = _FlushRecording()
    exporter = GuardedSpanExporter(inner, ExportGuard("traces", None))
    assert exporter.force_flush() is True
    exporter.force_flush(5)
    assert inner.flushed == [30_000, 5]


class KeptMetrics(RecordingMetrics):
    """A metric exporter with its own preferences, timeout and keyword arguments recorded."""

    def __init__(self) -> None:
        from opentelemetry.sdk.metrics import Counter, Histogram
        from opentelemetry.sdk.metrics.export import AggregationTemporality
        from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation

        MetricExporter.__init__(
            self,
            preferred_temporality={Counter: AggregationTemporality.DELTA},
            preferred_aggregation={Histogram: ExplicitBucketHistogramAggregation([1.0, 2.0])},
        )
        self.result = MetricExportResult.SUCCESS
        self.timeouts = []
        self.flushed = []
        self.shut = []
        self.kwargs: list[dict[str, Any]] = []
        self._timeout = 30.0

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Keep the timeout and the keywords."""
        self.kwargs.append(kwargs)
        return super().export(metrics_data, timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Keep the timeout and the keywords."""
        self.kwargs.append(kwargs)
        super().shutdown(timeout_millis)


def test_a_guarded_metric_exporter_keeps_the_inner_preferences() -> None:
    """The SDK reads temporality and aggregation from the exporter: the inner one's are kept."""
    from opentelemetry.sdk.metrics import Counter, Histogram
    from opentelemetry.sdk.metrics.export import AggregationTemporality

    inner = KeptMetrics()
    exporter = GuardedMetricExporter(inner, ExportGuard("metrics", None))
    assert exporter._preferred_temporality[Counter] is AggregationTemporality.DELTA
    assert exporter._preferred_temporality == inner._preferred_temporality
    assert Histogram in exporter._preferred_aggregation
    assert exporter._preferred_aggregation == inner._preferred_aggregation


def test_a_metric_export_near_the_deadline_caps_timeouts_and_passes_keywords() -> None:
    """Within the last second the timeout given is what is left (not a floor of a second), the
    inner exporter's own timeout is capped too, and extra keywords reach it."""
    inner = KeptMetrics()
    guard = ExportGuard("metrics", None)
    exporter = GuardedMetricExporter(inner, guard)
    guard.deadline = time.monotonic() + 0.5
    exporter.export(MetricsData(resource_metrics=[]), timeout_millis=60_000, extra=1)
    assert inner.timeouts[-1] <= 500
    assert inner._timeout <= 0.5
    assert inner.kwargs == [{"extra": 1}]


def test_a_skipped_or_raising_metric_export(caplog: pytest.LogCaptureFixture) -> None:
    """Breaker open: FAILURE without a call; an exporter that raises: FAILURE, and the debug line
    names a metric export."""

    class Raising(RecordingMetrics):
        def export(
            self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            raise OSError("down")

    inner = RecordingMetrics()
    guard = ExportGuard("metrics", None)
    guard.breaker.failure("down")
    data = MetricsData(resource_metrics=[])
    assert GuardedMetricExporter(inner, guard).export(data) is MetricExportResult.FAILURE
    assert inner.timeouts == [] and guard.not_exported == 1
    with caplog.at_level(logging.DEBUG, logger="groundwire"):
        raised = GuardedMetricExporter(Raising(), ExportGuard("m", None)).export(data)
    assert raised is MetricExportResult.FAILURE
    assert _traceback_of(_debug(caplog, "metric export raised")) is OSError


def test_metric_shutdown_default_and_keywords() -> None:
    """shutdown without a timeout gives the inner exporter 30 s; keywords are passed on."""
    inner = KeptMetrics()
    GuardedMetricExporter(inner, ExportGuard("metrics", None)).shutdown()
    assert inner.shut == [30_000]
    other = KeptMetrics()
    GuardedMetricExporter(other, ExportGuard("metrics", None)).shutdown(timeout_millis=5, x=2)
    assert other.shut == [5] and other.kwargs == [{"x": 2}]


class _Refusing:
    """A client whose timeout setter raises TypeError."""

    @property
    def _timeout(self) -> float:
        return 9.0

    @_timeout.setter
    def _timeout(self, value: float) -> None:
        raise TypeError("read only")


def test_cap_timeout_survives_a_setter_that_raises_type_error() -> None:
    """A timeout that refuses a new value with TypeError is left; nothing is raised."""
    owner = _Owner(_Refusing(), 10)
    _cap_timeout(owner, 4.0)
    assert (owner._client._timeout, owner._timeout) == (9.0, 10)
