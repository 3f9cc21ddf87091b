"""The background runner: outcomes, faults, sampling, budget, concurrency and load."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig, TokenBudget

from .conftest import (
    AnswerLength,
    Gate,
    Hangs,
    HasContext,
    Judge,
    Raises,
    Telemetry,
    make_turn,
    random_turn,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_every_turn_is_scored_once_and_counts_add_up(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Each submitted turn is scored once; one carrier span per turn, child of the turn's root."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength(), HasContext()]), emitter)
    turns = [make_turn(i) for i in range(50)]
    assert all(runner.submit(turn) for turn in turns)
    assert runner.force_flush(10)
    stats = runner.stats()
    assert (stats.submitted, stats.scored, stats.in_flight) == (50, 50, 0)
    assert stats.adds_up()
    carriers = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    assert len(carriers) == 50
    by_parent = {format(s.parent.span_id, "016x"): s for s in carriers if s.parent}
    assert set(by_parent) == {turn.span_id for turn in turns}
    for turn in turns:
        span = by_parent[turn.span_id]
        assert format(span.context.trace_id, "032x") == turn.trace_id
        assert [format(link.context.span_id, "016x") for link in span.links] == [turn.span_id]
        assert [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in span.events] == [
            "answer_length",
            "has_context",
        ]
    assert telemetry.counts() == {("answer_length", "ok"): 50, ("has_context", "ok"): 50}
    runner.shutdown(1)


def test_raising_evaluator_is_counted_and_the_others_still_score(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """An evaluator that raises costs only its own score: error counted, error.type emitted."""
    runner = BackgroundRunner(RunnerConfig([Raises(), AnswerLength()]), emitter)
    for i in range(10):
        runner.submit(make_turn(i))
    assert runner.force_flush(10)
    stats = runner.stats()
    assert (stats.errored, stats.scored) == (10, 0)
    assert telemetry.counts() == {("raises", "error"): 10, ("answer_length", "ok"): 10}
    event = telemetry.finished(semconv.EVALUATION_SPAN_NAME)[0].events[0]
    assert event.attributes[semconv.ERROR_TYPE] == "RuntimeError"
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in event.attributes
    runner.shutdown(1)


def test_hung_evaluator_is_abandoned_at_its_timeout_and_work_continues(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A sync evaluator that never returns times out, is counted, and its worker is replaced."""
    hangs = Hangs()
    config = RunnerConfig([hangs, AnswerLength()], workers=1, evaluator_timeout_s=0.2)
    runner = BackgroundRunner(config, emitter)
    try:
        started = time.monotonic()
        for i in range(3):
            runner.submit(make_turn(i))
        assert runner.force_flush(5)
        assert time.monotonic() - started < 3
        assert runner.stats().errored == 3
        assert telemetry.counts() == {("hangs", "error"): 3, ("answer_length", "ok"): 3}
        events = [s.events[0] for s in telemetry.finished(semconv.EVALUATION_SPAN_NAME)]
        assert {e.attributes[semconv.ERROR_TYPE] for e in events} == {"TimeoutError"}
    finally:
        hangs.release.set()
        runner.shutdown(1)


class SlowJudge(Judge):
    """An async judge that never answers in time."""

    name = "slow_judge"

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Sleep past any reasonable timeout."""
        await asyncio.sleep(30)
        return await super().aevaluate(turn)


def test_hung_async_judge_is_cancelled_at_its_timeout_and_others_score(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """An async evaluator past its timeout is cancelled and counted; the others still score."""
    config = RunnerConfig([SlowJudge(), Judge(), AnswerLength()], evaluator_timeout_s=0.2)
    runner = BackgroundRunner(config, emitter)
    for i in range(4):
        runner.submit(make_turn(i))
    assert runner.force_flush(5)
    assert runner.stats().errored == 4
    assert telemetry.counts() == {
        ("slow_judge", "error"): 4,
        ("judge", "ok"): 4,
        ("answer_length", "ok"): 4,
    }
    runner.shutdown(1)


def test_full_queue_drops_and_counts_without_blocking(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """With the worker busy, a full queue drops new turns at once and counts each as dropped."""
    gate = Gate()
    runner = BackgroundRunner(RunnerConfig([gate], workers=1, max_queue_size=2), emitter)
    try:
        started = time.perf_counter()
        accepted = [runner.submit(make_turn(i)) for i in range(10)]
        assert time.perf_counter() - started < 0.5
        stats = runner.stats()
        assert stats.dropped == accepted.count(False) >= 7
        assert stats.adds_up()
        gate.open.set()
        assert runner.force_flush(5)
        stats = runner.stats()
        assert stats.scored + stats.dropped == 10
        assert telemetry.counts()[("gate", "dropped")] == stats.dropped
    finally:
        gate.open.set()
        runner.shutdown(1)


def test_shutdown_with_pending_work_counts_what_missed_the_deadline(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Work still queued or running at shutdown's deadline is counted as dropped, once."""
    gate = Gate()
    runner = BackgroundRunner(RunnerConfig([gate], workers=1), emitter)
    try:
        for i in range(5):
            runner.submit(make_turn(i))
        assert runner.shutdown(0.2) is False
        stats = runner.stats()
        assert (stats.dropped, stats.in_flight, stats.submitted) == (5, 0, 5)
        assert telemetry.counts() == {("gate", "dropped"): 5}
        assert runner.submit(make_turn(99)) is False
        assert runner.stats().dropped == 6
    finally:
        gate.open.set()


def test_shutdown_drains_queued_work_within_its_deadline(emitter: Emitter) -> None:
    """Shutdown first finishes what is queued when there is time to."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()]), emitter)
    for i in range(200):
        runner.submit(make_turn(i))
    assert runner.shutdown(10) is True
    stats = runner.stats()
    assert (stats.scored, stats.dropped) == (200, 0)


def test_sampling_is_by_trace_id_all_evaluators_or_none(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """At rate 0.5 about half the traces are scored, each by every evaluator or by none."""
    runner = BackgroundRunner(
        RunnerConfig([AnswerLength(), HasContext()], sample_rate=0.5), emitter
    )
    turns = [random_turn() for _ in range(400)]
    chosen = [turn for turn in turns if runner.submit(turn)]
    assert runner.force_flush(10)
    assert 120 < len(chosen) < 280
    assert all(runner.selects(turn) for turn in chosen)
    again = BackgroundRunner(RunnerConfig([AnswerLength()], sample_rate=0.5), emitter)
    assert [t for t in turns if again.selects(t)] == chosen
    stats = runner.stats()
    assert (stats.scored, stats.sampled_out) == (len(chosen), 400 - len(chosen))
    counts = telemetry.counts()
    for name in ("answer_length", "has_context"):
        assert counts[(name, "ok")] == len(chosen)
        assert counts[(name, "sampled_out")] == 400 - len(chosen)
    runner.shutdown(1)
    again.shutdown(1)


def test_per_evaluator_rate_scores_a_subset_of_the_traces(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """An evaluator at rate 0.2 scores a subset of the traces the full-rate evaluator scores."""
    config = RunnerConfig(
        [AnswerLength(), HasContext()], evaluator_sample_rates={"has_context": 0.2}
    )
    runner = BackgroundRunner(config, emitter)
    for _ in range(300):
        runner.submit(random_turn())
    assert runner.force_flush(10)
    counts = telemetry.counts()
    assert counts[("answer_length", "ok")] == 300
    assert 30 < counts[("has_context", "ok")] < 90
    assert counts[("has_context", "ok")] + counts[("has_context", "sampled_out")] == 300
    assert runner.stats().scored == 300
    runner.shutdown(1)


def test_turn_filter_samples_out_rejected_turns_and_counts_a_raising_filter(
    emitter: Emitter,
) -> None:
    """Turns the filter rejects are sampled out; a filter that raises marks the turn errored."""

    def only_even(turn: RagTurn) -> bool:
        """Keep even-numbered turns; raise on turn 7."""
        number = int(turn.query.split()[1])
        if number == 7:
            raise ValueError("bad filter")
        return number % 2 == 0

    runner = BackgroundRunner(RunnerConfig([AnswerLength()], turn_filter=only_even), emitter)
    for i in range(10):
        runner.submit(make_turn(i))
    assert runner.force_flush(5)
    stats = runner.stats()
    assert (stats.scored, stats.sampled_out, stats.errored) == (5, 4, 1)
    runner.shutdown(1)


def test_judge_token_budget_skips_and_counts_judges_once_spent(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Past the hourly token budget judge evaluations are skipped and counted as skipped."""
    judge = Judge(tokens=(100, 20))
    config = RunnerConfig([judge], judge_token_budget=250, async_concurrency=1)
    runner = BackgroundRunner(config, emitter)
    for i in range(5):
        runner.submit(make_turn(i))
        assert runner.force_flush(5)
    assert judge.calls == 3
    assert telemetry.counts() == {("judge", "ok"): 3, ("judge", "skipped"): 2}
    tokens = {
        p.attributes[semconv.GEN_AI_TOKEN_TYPE]: p.value
        for p in telemetry.points(semconv.METRIC_JUDGE_TOKENS)
    }
    assert tokens == {"input": 300, "output": 60}
    stats = runner.stats()
    assert (stats.scored, stats.sampled_out) == (3, 2)
    runner.shutdown(1)


def test_token_budget_window_rolls_over_after_an_hour() -> None:
    """Usage older than an hour no longer counts against the budget."""
    now = [1000.0]
    budget = TokenBudget(100, clock=lambda: now[0])
    budget.spend(150)
    assert not budget.allows()
    now[0] += 1800
    assert not budget.allows()
    now[0] += 1900
    assert budget.allows()
    assert budget.used() == 0


def test_async_judges_run_concurrently_up_to_the_limit(emitter: Emitter) -> None:
    """Async evaluators overlap on the event loop, never more than `async_concurrency` at once."""
    judge = Judge(delay_s=0.05)
    runner = BackgroundRunner(RunnerConfig([judge], async_concurrency=3), emitter)
    started = time.monotonic()
    for i in range(12):
        runner.submit(make_turn(i))
    assert runner.force_flush(10)
    assert judge.peak == 3
    assert time.monotonic() - started < 12 * 0.05
    assert runner.stats().scored == 12
    runner.shutdown(1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample_rate": 1.5}, "sample_rate must be in"),
        ({"evaluator_sample_rates": {"nope": 0.5}}, "evaluator_sample_rates names"),
        ({"inline": {"nope"}}, "inline names"),
        ({"inline": {"judge"}}, "inline evaluators must be sync"),
        ({"max_queue_size": 0}, "max_queue_size must be"),
        ({"workers": 0}, "workers must be"),
        ({"evaluator_timeout_s": -1}, "evaluator_timeout_s must be"),
        ({"judge_token_budget": -5}, "judge_token_budget must be"),
    ],
)
def test_bad_options_fail_at_construction_naming_the_option(
    options: dict[str, object], message: str
) -> None:
    """A bad runner option fails at once with a message naming it."""
    with pytest.raises((ValueError, TypeError), match=message):
        RunnerConfig([AnswerLength(), Judge()], **options)  # type: ignore[arg-type]


def test_ten_thousand_turns_run_in_bounded_memory() -> None:
    """10,000 turns pass through the runner; memory returns to where it was (nothing retained)."""
    probe = subprocess.run(
        [sys.executable, "-m", "tests.online._memory_probe"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert (report["scored"], report["dropped"], report["adds_up"]) == (10_500, 0, True)
    # ~5 KB when nothing is kept; keeping 8 bytes per turn would be 84 KB
    assert report["retained"] < 64 * 1024
    assert report["peak"] < 4 * 1024 * 1024
