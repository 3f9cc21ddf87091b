"""`OnlineEvaluation` (`groundwire._online`), the handle `configure()` returns, built here from
real parts (a `BackgroundRunner`, an `EvaluationSpanProcessor`, SDK providers, `ExportGuard`s)
and provider handles whose calls the tests watch: what `stats()` reports, how `force_flush` and
`shutdown` share one deadline between the runner and the providers, and what shutdown says and
undoes. No OTLP endpoint, no worker process; each test takes well under two seconds."""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from groundwire._online import DEADLINE_SLACK_S, OnlineEvaluation, ProviderHandle
from groundwire._switch import SwitchInterval
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.exporters import ExportGuard
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig

from .conftest import AnswerLength, Gate, HasContext, Telemetry, make_turn

pytestmark = pytest.mark.timeout(30)


class _Calls:
    """A provider's flush or close: records the seconds it was given, then returns `result`
    (after `hold_s`, to stand for an exporter that hangs)."""

    def __init__(self, result: object = True, hold_s: float = 0.0) -> None:
        self.result = result
        self.hold_s = hold_s
        self.given: list[float] = []

    def __call__(self, seconds: float) -> object:
        """Record, wait, answer."""
        self.given.append(seconds)
        time.sleep(self.hold_s)
        return self.result


class _Instrumentor:
    """An integration's instrumentor: counts uninstrument calls, or raises on them."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.uninstrumented = 0

    def uninstrument(self) -> None:
        """Undo the instrumentation (or fail to)."""
        self.uninstrumented += 1
        if self.fails:
            raise RuntimeError("cannot uninstrument")


@pytest.fixture
def make(telemetry: Telemetry, emitter: Emitter) -> Iterator[Any]:
    """Builds handles on the test's providers; whatever a test left running is shut after."""
    built: list[OnlineEvaluation] = []

    def build(evaluators: list[Any] | None = None, **fields: Any) -> OnlineEvaluation:
        config = RunnerConfig(evaluators or [AnswerLength()], workers=1)
        runner = BackgroundRunner(config, emitter)
        handle = OnlineEvaluation(
            runner=runner,
            processor=EvaluationSpanProcessor(runner, emitter),
            emitter=emitter,
            tracer_provider=telemetry.tracer_provider,
            meter_provider=telemetry.meter_provider,
            owns_tracer_provider=False,
            owns_meter_provider=False,
            **fields,
        )
        built.append(handle)
        return handle

    yield build
    for handle in built:
        handle.runner.shutdown(1)


def _guard(name: str, not_exported: int = 0, down: bool = False) -> ExportGuard:
    """A real export guard with `not_exported` items counted, its breaker open when `down`."""
    guard = ExportGuard(name, None)
    guard.not_exported = not_exported
    if down:
        guard.breaker.failure("refused")
    return guard


def test_stats_report_the_setup_and_count_only_unsent_spans(make: Any) -> None:
    """`stats()` carries the runner's counts plus the evaluators, the instrumented
    integrations, the exporter, the spans (not metric exports) not yet sent, and the
    endpoints whose breaker is open."""
    guards = [
        _guard("OTLP traces http://a", not_exported=3, down=True),
        _guard("OTLP metrics http://a", not_exported=5),
        _guard("OTLP logs http://b", down=True),
    ]
    handle = make(
        [AnswerLength(), HasContext()],
        instrumented=["langchain"],
        exporter="OTLP http://a",
        guards=guards,
    )
    handle.runner.submit(make_turn(1))
    assert handle.runner.force_flush(10)
    stats = handle.stats()
    assert (stats.submitted, stats.scored, stats.in_flight) == (1, 1, 0)
    assert stats.evaluators == ("answer_length", "has_context")
    assert stats.instrumented == ("langchain",)
    assert stats.exporter == "OTLP http://a"
    assert stats.spans_not_exported == 3
    assert stats.unreachable == ("OTLP traces http://a", "OTLP logs http://b")


def test_the_prometheus_url_names_the_scrape_endpoint(make: Any) -> None:
    """With a Prometheus server the handle names its /metrics URL; without one, None."""
    assert make().prometheus_url is None
    server = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    try:
        port = server.server_address[1]
        handle = make(_prometheus_server=server)
        assert handle.prometheus_url == f"http://127.0.0.1:{port}/metrics"
    finally:
        server.server_close()


def test_force_flush_gives_each_provider_the_seconds_left_and_says_if_all_flushed(
    make: Any,
) -> None:
    """Every provider with a flush is flushed once with the seconds left (at most the
    timeout); the answer is True only when each flush returned something other than False."""
    fine, also_fine, close_only = _Calls(), _Calls(result=None), _Calls()
    handle = make(
        providers=[
            ProviderHandle("a", fine, None),
            ProviderHandle("b", also_fine, None),
            ProviderHandle("c", None, close_only),
        ]
    )
    assert handle.force_flush(2.0) is True
    assert len(fine.given) == len(also_fine.given) == 1 and close_only.given == []
    assert 0.0 < fine.given[0] <= 2.0
    refused = _Calls(result=False)
    both = make(providers=[ProviderHandle("a", fine, None), ProviderHandle("b", refused, None)])
    assert both.force_flush(2.0) is False


def test_force_flush_keeps_its_deadline_when_a_provider_hangs(make: Any) -> None:
    """A flush that outlasts the deadline is abandoned: False, within timeout + slack."""
    handle = make(providers=[ProviderHandle("slow", _Calls(hold_s=5.0), None)])
    started = time.monotonic()
    assert handle.force_flush(0.4) is False
    assert time.monotonic() - started < 0.4 + DEADLINE_SLACK_S + 0.5


def test_force_flush_gives_the_runner_three_quarters_of_a_short_budget(make: Any) -> None:
    """The runner may use the budget less the export reserve (a quarter of a short budget):
    work that never finishes holds force_flush about 0.75 of its timeout, not all of it and
    not none of it, and the answer is False."""
    gate = Gate()
    handle = make([gate])
    try:
        handle.runner.submit(make_turn(1))
        started = time.monotonic()
        assert handle.force_flush(1.2) is False
        waited = time.monotonic() - started
        assert 0.85 <= waited < 1.2 + DEADLINE_SLACK_S, waited
    finally:
        gate.open.set()


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), "1"])
def test_flush_and_shutdown_refuse_a_bad_timeout_naming_it(make: Any, bad: object) -> None:
    """A timeout that is not a positive number of seconds is a ValueError naming timeout_s,
    raised before anything is flushed or shut."""
    flush = _Calls()
    handle = make(providers=[ProviderHandle("a", flush, flush)])
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds"):
        handle.force_flush(bad)
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds"):
        handle.shutdown(bad)
    assert flush.given == []
    assert handle.shutdown(1.0) is True


def test_shutdown_shuts_each_provider_once_and_undoes_what_configure_did(make: Any) -> None:
    """Shutdown closes every provider with a close (with the seconds left), uninstruments
    each integration (one that fails is logged, the others still run), stops live content
    capture, unfreezes the gc, restores the switch interval, and says True; a second
    shutdown does nothing and says True."""
    flush, close = _Calls(), _Calls()
    first, failing = _Instrumentor(), _Instrumentor(fails=True)
    before = sys.getswitchinterval()
    switch = SwitchInterval.apply(before * 2 + 0.001, explicit=True)
    gc.freeze()
    LIVE_CONTENT.enabled = True
    handle = make(
        providers=[ProviderHandle("a", flush, close), ProviderHandle("b", flush, None)],
        _instrumentors=[("one", first), ("two", failing)],
        _froze_gc=True,
        _switch=switch,
    )
    try:
        assert handle.shutdown(2.0) is True
        assert len(close.given) == 1 and 0.0 < close.given[0] <= 2.0
        assert flush.given == []
        assert (first.uninstrumented, failing.uninstrumented) == (1, 1)
        assert LIVE_CONTENT.enabled is False
        assert gc.get_freeze_count() == 0
        assert sys.getswitchinterval() == before
        assert handle.shutdown(2.0) is True
        assert len(close.given) == 1 and first.uninstrumented == 1
    finally:
        gc.unfreeze()
        sys.setswitchinterval(before)
        LIVE_CONTENT.enabled = False


def test_a_failing_uninstrument_is_one_warning_naming_the_integration(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """An instrumentor that cannot undo itself leaves one warning naming it."""
    handle = make(_instrumentors=[("llamaindex", _Instrumentor(fails=True))])
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert handle.shutdown(1.0) is True
    assert [r.getMessage() for r in caplog.records] == ["could not uninstrument llamaindex"]


def test_shutdown_sets_each_guards_deadline_and_stops_them_when_a_provider_hangs(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Every export guard gets the shutdown deadline; a provider still shutting at the
    deadline is abandoned, the guards' retries are stopped, and one warning names it."""
    guard = _guard("OTLP metrics http://c")
    stopped = threading.Event()
    guard.abort = stopped.set
    handle = make(
        providers=[ProviderHandle("meter provider", None, _Calls(hold_s=5.0))], guards=[guard]
    )
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert handle.shutdown(0.4) is False
    assert time.monotonic() - started < 0.4 + DEADLINE_SLACK_S + 0.5
    assert guard.deadline is not None and guard.deadline <= started + 0.5
    assert stopped.is_set()
    assert [r.getMessage() for r in caplog.records] == [
        "shutdown deadline 0.4 s: 0 spans and 0 evaluations not exported; still running, "
        "abandoned: shut meter provider"
    ]


def test_shutdown_does_not_stop_the_guards_when_every_provider_finished(make: Any) -> None:
    """Guards are stopped only when a provider was abandoned."""
    guard = _guard("OTLP metrics http://c")
    stopped = threading.Event()
    guard.abort = stopped.set
    handle = make(providers=[ProviderHandle("p", None, _Calls())], guards=[guard])
    assert handle.shutdown(1.0) is True
    assert not stopped.is_set()


def test_shutdown_says_false_and_why_when_spans_were_not_exported(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Spans still unsent make shutdown False, with one warning giving the count and naming
    the endpoints whose breaker is open."""
    handle = make(guards=[_guard("OTLP traces http://d", not_exported=2, down=True)])
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert handle.shutdown(1.0) is False
    assert [r.getMessage() for r in caplog.records if r.filename == "_online.py"] == [
        "shutdown deadline 1 s: 2 spans and 0 evaluations not exported; unreachable: "
        "OTLP traces http://d"
    ]


def test_shutdown_counts_the_turns_its_deadline_cut_in_its_one_warning(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Turns still held at the deadline are counted as dropped and told once, by the
    handle (the runner does not warn as well)."""
    gate = Gate()
    handle = make([gate, AnswerLength()])
    try:
        for i in range(2):
            handle.runner.submit(make_turn(i))
        with caplog.at_level(logging.WARNING):
            assert handle.shutdown(0.5) is False
        assert handle.runner.stats().dropped == 2
        assert [r.getMessage() for r in caplog.records] == [
            "shutdown deadline 0.5 s: 0 spans and 4 evaluations not exported (2 turns "
            "unfinished, counted as dropped)"
        ]
    finally:
        gate.open.set()


def test_force_flush_keeps_a_short_deadline_when_the_runners_work_never_finishes(
    make: Any,
) -> None:
    """Work that never finishes holds force_flush(0.4) no longer than its deadline plus the
    slack: the runner's share of a short budget is a part of it, never a floor of its own."""
    gate = Gate()
    handle = make([gate])
    try:
        handle.runner.submit(make_turn(1))
        started = time.monotonic()
        assert handle.force_flush(0.4) is False
        assert time.monotonic() - started < 0.4 + DEADLINE_SLACK_S
    finally:
        gate.open.set()


def test_shutdown_gives_the_runner_its_share_and_the_providers_what_is_left(
    make: Any,
) -> None:
    """Work that never finishes holds shutdown(1.2) for the runner's share (three quarters)
    and no more; the providers then get only the seconds left of the same deadline, and a
    short shutdown(0.4) keeps its deadline too."""
    for timeout_s, least in ((1.2, 0.85), (0.4, 0.25)):
        gate, close = Gate(), _Calls()
        handle = make([gate], providers=[ProviderHandle("p", None, close)])
        try:
            handle.runner.submit(make_turn(1))
            started = time.monotonic()
            assert handle.shutdown(timeout_s) is False
            waited = time.monotonic() - started
            assert least <= waited < timeout_s + DEADLINE_SLACK_S, (timeout_s, waited)
            assert len(close.given) == 1 and close.given[0] <= timeout_s * 0.25 + 0.05
        finally:
            gate.open.set()


def test_a_failing_uninstrument_is_logged_with_its_traceback(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning for an instrumentor that cannot undo itself carries the exception."""
    handle = make(_instrumentors=[("langchain", _Instrumentor(fails=True))])
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert handle.shutdown(1.0) is True
    (record,) = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError


def test_the_shutdown_warning_lists_every_abandoned_provider_and_unreachable_endpoint(
    make: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Several abandoned providers and several endpoints with an open breaker are listed,
    comma-separated, in the one warning."""
    guards = [_guard("OTLP traces http://e", down=True), _guard("OTLP logs http://e", down=True)]
    slow = [ProviderHandle(name, None, _Calls(hold_s=5.0)) for name in ("tracer", "meter")]
    handle = make(providers=slow, guards=guards)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        assert handle.shutdown(0.3) is False
    assert [r.getMessage() for r in caplog.records if r.filename == "_online.py"] == [
        "shutdown deadline 0.3 s: 0 spans and 0 evaluations not exported; still running, "
        "abandoned: shut tracer, shut meter; unreachable: OTLP traces http://e, "
        "OTLP logs http://e"
    ]
