"""The scoring child's parts, in-process on real parts (gateway config, providers with the result
capture, runner, trace window): the scorer built from the gateway's options, the evaluator check
at start, the counts it reports, and its loop (`_serve`) taking requests, reporting scored
traces and counts, surviving a bad step and stopping at the parent's word. Fast: no child
process (the process-level tests are in test_queue_scoring.py and test_scoring.py)."""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import as_the_child, protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace

from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._results import ResultCapture
from groundwire.gateway._scoring import ScoredReporter
from groundwire.gateway._telemetry import build_providers
from groundwire.gateway._worker import (
    _build_scorer,
    _serve,
    _stats,
    check_evaluators,
    scoring_main,
)

pytestmark = pytest.mark.timeout(30)  # a loop that never stops fails, rather than hangs


@pytest.fixture
def capture() -> ResultCapture:
    """Where the scorer's results go instead of the downstream (a persistent queue's way)."""
    return ResultCapture()


@pytest.fixture
def built(tmp_path: Path, capture: ResultCapture) -> Iterator[tuple[Any, GatewayMetrics]]:
    """A scorer as the child builds it, and its metrics; shut down after the test."""
    config = scoring_config(queue_dir=str(tmp_path))
    providers = build_providers(config, prometheus=False, capture=capture)
    metrics = GatewayMetrics(None)
    scorer = _build_scorer(config, metrics, providers)
    yield scorer, metrics
    scorer.shutdown(5.0)
    providers.shutdown(1.0)


def _until(check: Any, what: str) -> None:
    deadline = time.monotonic() + 10.0
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_the_scorer_takes_its_options_from_the_gateway_config(
    tmp_path: Path, capture: ResultCapture
) -> None:
    """Every scoring option of the gateway's config reaches the runner and the trace window
    under its own name; the evaluator options reach their evaluator."""
    config = scoring_config(
        queue_dir=str(tmp_path),
        sample_rate=0.5,
        evaluator_sample_rates={"quoted_spans": 0.25},
        judge_token_budget=5000,
        workers=3,
        evaluator_timeout_s=4.5,
        eval_queue_size=33,
        quiet_period_s=0.7,
        max_wait_s=7.0,
        max_open_traces=11,
        max_open_spans=222,
        evaluator_options={"quoted_spans": {"min_len": 5}},
    )
    providers = build_providers(config, prometheus=False, capture=capture)
    scorer = _build_scorer(config, GatewayMetrics(None), providers)
    try:
        runner = scorer.runner.config
        assert (runner.sample_rate, runner.workers, runner.evaluator_timeout_s) == (0.5, 3, 4.5)
        assert dict(runner.evaluator_sample_rates) == {"quoted_spans": 0.25}
        assert (runner.judge_token_budget, runner.max_queue_size) == (5000, 33)
        (evaluator,) = runner.evaluators
        assert evaluator.name == "quoted_spans"
        assert evaluator.min_len == 5
        window = scorer._window
        assert (window.quiet, window.max_wait) == (0.7, 7.0)
        assert (window.max_traces, window.max_spans, window.remember) == (11, 222, 100_000)
    finally:
        scorer.shutdown(5.0)
        providers.shutdown(1.0)


def test_traces_scored_before_are_not_scored_again(tmp_path: Path, capture: ResultCapture) -> None:
    """The trace ids a restarted gateway passes are the scorer's `already_scored`."""
    config = scoring_config(queue_dir=str(tmp_path))
    providers = build_providers(config, prometheus=False, capture=capture)
    metrics = GatewayMetrics(None)
    old = openinference_rag_trace()
    scorer = _build_scorer(config, metrics, providers, [old[0]["traceId"]])
    try:
        scorer.add(protobuf_request(old), 3, time.monotonic())
        assert metrics.count("late_spans") == 3 and scorer.open_traces == 0
    finally:
        scorer.shutdown(5.0)
        providers.shutdown(1.0)


def test_flushing_the_scorer_exports_its_result_spans_and_events(
    built: tuple[Any, GatewayMetrics], capture: ResultCapture
) -> None:
    """The scorer's flush pushes the carrier spans and result events out of the providers'
    batches (here into the capture), before a report names their traces."""
    scorer, _ = built
    trace = openinference_rag_trace()
    scorer.add(protobuf_request(trace), 3, time.monotonic())
    scorer.tick(time.monotonic() + 1.0)
    _until(lambda: scorer.stats().finished == 1, "the turn is scored")
    scorer.flush_results()
    signals = sorted(r.signal for r in capture.take([trace[0]["traceId"]]))
    assert signals == ["logs", "traces"]


def test_an_option_for_an_evaluator_not_named_fails_at_start(tmp_path: Path) -> None:
    """Options for an evaluator that is not among the evaluators are an error naming both."""
    config = scoring_config(
        queue_dir=str(tmp_path), evaluator_options={"llm_judge": {"model": "x"}}
    )
    with pytest.raises(ValueError, match="not among the evaluators") as raised:
        check_evaluators(config)
    assert str(raised.value) == (
        "evaluator_options: ['llm_judge'] are not among the evaluators ['quoted_spans']"
    )


def test_an_unknown_evaluator_or_option_fails_at_start(tmp_path: Path) -> None:
    """An evaluator name or option the registry does not know fails the check; good ones
    pass."""
    check_evaluators(
        scoring_config(queue_dir=str(tmp_path), evaluator_options={"quoted_spans": {"min_len": 5}})
    )
    with pytest.raises(Exception, match="no_such_evaluator"):
        check_evaluators(scoring_config(queue_dir=str(tmp_path), evaluators="no_such_evaluator"))
    with pytest.raises(Exception, match="no_such_option"):
        check_evaluators(
            scoring_config(
                queue_dir=str(tmp_path), evaluator_options={"quoted_spans": {"no_such_option": 1}}
            )
        )


def test_the_counts_report_names_every_count(built: tuple[Any, GatewayMetrics]) -> None:
    """A report gives the open traces, the tallies, the lags and each turn count; only the
    final one takes the scored traces (and says whether the runner drained)."""
    scorer, metrics = built
    trace = openinference_rag_trace()
    scorer.add(protobuf_request(trace), 3, time.monotonic(), (4,))
    metrics.late_spans(2)
    report = _stats(scorer, metrics)
    assert report == {
        "final": False,
        "drained": True,
        "open_traces": 1,
        "counts": {"late_spans": 2},
        "lags": [],
        "turns": {
            "submitted": 0,
            "scored": 0,
            "errored": 0,
            "dropped": 0,
            "sampled_out": 0,
            "in_flight": 0,
        },
    }
    scorer.tick(time.monotonic() + 1.0)
    _until(lambda: scorer.stats().finished == 1, "the turn is scored")
    final = _stats(scorer, metrics, final=True, drained=False)
    assert final["scored"] == ([4], [trace[0]["traceId"]])
    assert (final["final"], final["drained"], final["open_traces"]) == (True, False, 0)
    assert final["turns"]["submitted"] == 1 and final["turns"]["scored"] == 1
    assert len(final["lags"]) == 1


def test_the_loop_scores_reports_and_stops_at_the_parents_word(
    built: tuple[Any, GatewayMetrics], caplog: pytest.LogCaptureFixture
) -> None:
    """The child's loop takes fed requests, finds due traces without more input, reports the
    scored ones to the reporter and its counts to the parent; a step that fails is logged and
    the loop goes on; the stop returns the deadline the parent sent."""
    scorer, metrics = built
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    offered: list[tuple[list[int], list[str]]] = []
    reporter = ScoredReporter(lambda: None, lambda done, ids, results: offered.append((done, ids)))
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    stopped: list[float | None] = []
    loop = threading.Thread(
        target=lambda: stopped.append(
            _serve(scorer, metrics, inbox, outbox, reporter, lambda: True)
        )
    )
    trace = openinference_rag_trace()
    inbox.put(("not", "a request"))
    inbox.put((protobuf_request(trace), 3, time.monotonic(), (6,)))
    loop.start()
    try:
        _until(lambda: offered, "the scored trace is reported")
        assert offered == [([6], [trace[0]["traceId"]])]
        first = outbox.get(timeout=5)
        assert first["final"] is False and "turns" in first
        time.sleep(0.6)
        assert not outbox.empty()  # counts again after half a second
    finally:
        inbox.put(("stop", 2.5))
        loop.join(10)
        reporter.close(5.0)
    assert stopped == [2.5]
    assert [r.getMessage() for r in caplog.records] == [
        "scoring step failed; the telemetry was still forwarded"
    ]


def test_the_child_scores_reports_with_the_results_and_ends_with_its_final_counts(
    tmp_path: Path,
) -> None:
    """The child's main ignores the terminal's signals (the parent decides), lowers its
    priority, scores what it is fed and, at the parent's stop, what it holds; with a persistent
    queue the results travel in the report of their traces, and the last message is the final
    count, drained."""
    config = scoring_config(queue_dir=str(tmp_path))
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    trace, old = openinference_rag_trace(), openinference_rag_trace()
    inbox.put((protobuf_request(old), 3, time.monotonic(), (7,)))
    inbox.put((protobuf_request(trace), 3, time.monotonic(), (6,)))
    inbox.put(("stop", 3.0))
    with as_the_child():
        before = os.nice(0)
        scoring_main(config, inbox, outbox, logging.INFO, frozenset({old[0]["traceId"]}))
        assert os.nice(0) == min(19, before + 10)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    messages = []
    while not outbox.empty():
        messages.append(outbox.get())
    reports = [m["scored"] for m in messages if "final" not in m]
    assert [seq for done, _, _ in reports for seq in done] == [7, 6]
    assert [i for _, ids, _ in reports for i in ids] == [trace[0]["traceId"]]
    assert sorted(r.signal for _, _, results in reports for r in results) == ["logs", "traces"]
    final = messages[-1]
    assert (final["final"], final["drained"], final["open_traces"]) == (True, True, 0)
    assert final["scored"] == ([], [])
    assert final["counts"]["late_spans"] == 3
    assert final["turns"]["scored"] == 1
