"""`BackgroundRunner` (`runner._background`) at its seams: which executor runs the sync
evaluators, what it keeps of each evaluation, the hook told of each finished turn, turns lost
before submission, and shutdown's numbers. Real SDK providers and real threads; each test takes
well under a second (no worker process is started here)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire._evaluator import EvaluationOutcome
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, InlineResult, RunnerConfig

from .conftest import AnswerLength, Gate, HasContext, Judge, Telemetry, make_turn
from .test_runner_services import _ByService, _telemetry, _turn

pytestmark = pytest.mark.timeout(30)


class _Pid:
    """Says which process it runs in."""

    name = "pid"

    def evaluate(self, turn: RagTurn) -> Score:
        """The process id as the explanation."""
        return Score(name=self.name, value=1.0, explanation=str(os.getpid()))


class _NoJudge:
    """A judge evaluator with no judge configured: its score says "skipped", with no value."""

    name = "no_judge"

    def evaluate(self, turn: RagTurn) -> Score:
        """The skipped score every judge evaluator gives without a judge."""
        return Score(name=self.name, value=None, label=semconv.LABEL_SKIPPED)


class _Fails:
    """Gives a failed score (no exception) on every turn."""

    name = "fails"

    def evaluate(self, turn: RagTurn) -> Score:
        """A failed score."""
        return Score.failed(self.name, ValueError("bad turn"))


def _eventually(condition: Callable[[], bool]) -> None:
    """Wait up to 5 s for `condition` (a worker thread's step just after a count)."""
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def _span_scores(telemetry: Telemetry) -> list[list[str]]:
    """The attribute values of each evaluation carrier span, as text."""
    return [
        [str(v) for v in (span.attributes or {}).values()]
        for span in telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    ]


def test_the_threads_executor_runs_sync_evaluators_in_the_apps_process(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """With `executor="threads"` (the default) sync evaluators run here, on a worker thread:
    no worker process is started."""
    before = set(multiprocessing.active_children())
    runner = BackgroundRunner(RunnerConfig([_Pid()], workers=1), emitter)
    try:
        assert set(multiprocessing.active_children()) == before
        runner.submit(make_turn(1))
        assert runner.force_flush(10)
        assert any(str(os.getpid()) in texts for texts in _span_scores(telemetry))
    finally:
        runner.shutdown(1)


def test_the_process_executor_starts_no_process_when_every_evaluator_is_async(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """`executor="process"` moves only sync evaluators: with async judges alone there is
    nothing to move, so no process is started and the judges score on the event loop."""
    before = set(multiprocessing.active_children())
    runner = BackgroundRunner(RunnerConfig([Judge()], executor="process", workers=1), emitter)
    try:
        assert set(multiprocessing.active_children()) == before
        runner.submit(make_turn(1))
        assert runner.force_flush(10)
        assert telemetry.counts() == {("judge", "ok"): 1}
    finally:
        runner.shutdown(1)


def test_a_runner_not_yet_shut_has_dropped_nothing_and_a_second_shutdown_is_a_no_op(
    emitter: Emitter,
) -> None:
    """`dropped_at_shutdown` is (0, 0) until shutdown cuts work; shutting down twice is fine
    and the second says all was drained."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    assert runner.dropped_at_shutdown == (0, 0)
    assert runner.shutdown(1)
    assert runner.dropped_at_shutdown == (0, 0)
    assert runner.shutdown(1) is True


def test_selects_follows_the_sample_rate(emitter: Emitter) -> None:
    """`selects` is the trace-id sampling: every turn at rate 1, none at rate 0."""
    everything = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    nothing = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1, sample_rate=0.0), emitter)
    try:
        turns = [make_turn(i) for i in range(20)]
        assert all(everything.selects(turn) for turn in turns)
        assert not any(nothing.selects(turn) for turn in turns)
    finally:
        everything.shutdown(1)
        nothing.shutdown(1)


def test_warm_up_returns_the_seconds_it_took(emitter: Emitter) -> None:
    """`warm_up` says how long warming up took here: a few seconds at most, never negative."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength(), HasContext()], workers=1), emitter)
    try:
        assert 0.0 <= runner.warm_up() < 30.0
    finally:
        runner.shutdown(1)


def test_a_turn_that_cannot_be_submitted_is_refused_with_one_logged_error(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """`submit` never raises into the app: a turn it cannot take returns False and leaves one
    error line with the traceback."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    try:
        with caplog.at_level(logging.ERROR, logger="groundwire.runner"):
            assert runner.submit(object()) is False  # type: ignore[arg-type]
        assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
            ("ERROR", "could not submit a turn for evaluation")
        ]
        assert caplog.records[0].exc_info is not None
        assert runner.stats().submitted == 0
    finally:
        runner.shutdown(1)


def test_a_turn_lost_before_submission_is_counted_dropped_with_its_inline_scores(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """`count_dropped_turn` counts the turn as dropped and still records what inline
    evaluation scored for it."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    inline = InlineResult(
        outcomes=(EvaluationOutcome(Score(name="answer_length", value=0.5), 0.01, False),)
    )
    try:
        runner.count_dropped_turn(inline, make_turn(1))
        stats = runner.stats()
        assert (stats.submitted, stats.dropped) == (1, 1)
        assert telemetry.counts() == {("answer_length", "ok"): 1}
    finally:
        runner.shutdown(1)


def test_a_skipped_evaluation_is_not_a_score_and_a_failed_one_errors_the_turn(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A "no judge configured" score is not kept (a turn with only that is sampled out, not
    scored); a failed score errors its turn while the other evaluations still count."""
    skipped = BackgroundRunner(RunnerConfig([_NoJudge()], workers=1), emitter)
    failed = BackgroundRunner(RunnerConfig([AnswerLength(), _Fails()], workers=1), emitter)
    try:
        skipped.submit(make_turn(1))
        failed.submit(make_turn(2))
        failed.submit(make_turn(3))
        assert skipped.force_flush(10) and failed.force_flush(10)
        one, two = skipped.stats(), failed.stats()
        assert (one.scored, one.errored, one.sampled_out) == (0, 0, 1)
        assert (two.scored, two.errored, two.sampled_out) == (0, 2, 0)
        assert telemetry.counts()[("answer_length", "ok")] == 2
        assert telemetry.counts()[("fails", "error")] == 2
    finally:
        skipped.shutdown(1)
        failed.shutdown(1)


def test_every_result_of_a_turn_is_kept_once_and_its_outcome_given_to_the_hook(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Each evaluation's score lands on the turn's one carrier span, and `on_finished` hears
    each turn's outcome once."""
    heard: list[tuple[str, str]] = []
    runner = BackgroundRunner(
        RunnerConfig([AnswerLength(), HasContext()], workers=1),
        emitter,
        on_finished=lambda turn, outcome: heard.append((turn.query, outcome)),
    )
    try:
        for i in (1, 2):
            runner.submit(make_turn(i))
        assert runner.force_flush(10)
        _eventually(lambda: len(heard) == 2)  # the hook runs just after the turn is counted
        assert sorted(heard) == [("question 1", "scored"), ("question 2", "scored")]
        assert len(telemetry.finished(semconv.EVALUATION_SPAN_NAME)) == 2
        assert telemetry.counts() == {("answer_length", "ok"): 2, ("has_context", "ok"): 2}
        assert runner.stats().scored == 2
    finally:
        runner.shutdown(1)


def test_a_raising_hook_is_logged_and_the_turn_still_counts(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """An `on_finished` hook that raises leaves one error line; the turn is counted anyway."""

    def hook(turn: RagTurn, outcome: str) -> None:
        raise RuntimeError("hook bug")

    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter, on_finished=hook)
    try:
        with caplog.at_level(logging.ERROR, logger="groundwire.runner"):
            runner.submit(make_turn(1))
            assert runner.force_flush(10)
            _eventually(lambda: bool(caplog.records))  # the hook runs after the count
        assert [r.getMessage() for r in caplog.records] == ["the on_finished hook failed"]
        assert runner.stats().scored == 1
    finally:
        runner.shutdown(1)


def test_shutdown_counts_what_its_deadline_cut_and_says_so_unless_told_not_to(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """Turns still held at shutdown's deadline are dropped, counted as (turns, evaluations)
    with one warning giving the numbers; `report=False` leaves the warning to the caller."""
    for report in (True, False):
        gate = Gate()
        runner = BackgroundRunner(RunnerConfig([gate, AnswerLength()], workers=1), emitter)
        caplog.clear()
        try:
            for i in range(3):
                runner.submit(make_turn(i))
            with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
                assert runner.shutdown(0.2, report=report) is False
            assert runner.dropped_at_shutdown == (3, 6)
            stats = runner.stats()
            assert (stats.dropped, stats.scored) == (3, 0) and stats.adds_up()
            messages = [r.getMessage() for r in caplog.records]
            expected = (
                "shutdown deadline 0.2 s: 3 turns (6 evaluations) not finished, counted as dropped"
            )
            assert messages == ([expected] if report else [])
        finally:
            gate.open.set()


def test_turns_lost_before_submission_and_skipped_judges_count_under_their_app() -> None:
    """Where turns of several apps meet (the gateway's per-app emitters), a turn lost before
    submission and a judge skipped by the spent token budget are counted under the turn's
    own app, not under the runner's default emitter."""
    shop, fallback = _telemetry(), _telemetry()
    emitter = _ByService({"shop": shop}, fallback)
    judge = Judge(tokens=(100, 20))
    config = RunnerConfig([judge], judge_token_budget=100, async_concurrency=1, workers=1)
    runner = BackgroundRunner(config, emitter)
    try:
        for i in range(2):
            runner.submit(_turn(i, "shop"))
            assert runner.force_flush(5)
        assert shop.counts() == {("judge", "ok"): 1, ("judge", "skipped"): 1}
        runner.count_dropped_turn(None, _turn(7, "shop"))
        assert runner.force_flush(5)  # counts what was handed over
        assert runner.stats().dropped == 1
        assert shop.counts() == {
            ("judge", "ok"): 1,
            ("judge", "skipped"): 1,
            ("judge", "dropped"): 1,
        }
        assert fallback.counts() == {}
    finally:
        runner.shutdown(1)


def test_inline_scores_of_a_submitted_turn_count_under_its_app() -> None:
    """What inline evaluation scored for a turn is recorded under the turn's own app when its
    job is planned."""
    shop, fallback = _telemetry(), _telemetry()
    runner = BackgroundRunner(
        RunnerConfig([AnswerLength()], workers=1), _ByService({"shop": shop}, fallback)
    )
    inline = InlineResult(
        outcomes=(EvaluationOutcome(Score(name="has_context", value=1.0), 0.01, False),)
    )
    try:
        runner.submit(_turn(1, "shop"), inline)
        assert runner.force_flush(5)
        assert shop.counts() == {("answer_length", "ok"): 1, ("has_context", "ok"): 1}
        assert fallback.counts() == {}
    finally:
        runner.shutdown(1)
