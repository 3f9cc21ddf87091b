"""Admission and counting (`runner._admission`) on their own: the inbox, the bounded queue, the
turn counters and the hand-over of lost turns, driven from the test's thread with no workers.

`Admission` is usable without threads: `admit` appends, `stats()`/`flush_deferred()` count what
was handed over, `next_job` hands out queued work. That pins its rules exactly, with no timing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire._evaluator import EvaluationOutcome
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig
from groundwire.runner._admission import Admission, plan
from groundwire.runner._emission import Emission
from groundwire.runner._jobs import InlineResult, Job

from .conftest import AnswerLength, HasContext, Judge, Telemetry, make_turn
from .test_runner_emission import Routed, in_memory


@pytest.fixture
def app_telemetry() -> Iterator[Telemetry]:
    """A second set of providers: the app's own, for turns of `shop`."""
    telemetry = in_memory()
    yield telemetry
    telemetry.meter_provider.shutdown()
    telemetry.tracer_provider.shutdown()


def _admission(emitter: Emitter, config: RunnerConfig) -> Admission:
    """An Admission wired as BackgroundRunner wires it, without worker threads."""
    background = tuple(e.name for e in config.background_evaluators)
    emission = Emission(emitter, tuple(e.name for e in config.evaluators), background)
    return Admission(config, emission, has_work=bool(background))


def _next_job(admission: Admission) -> tuple[bool, Job | None]:
    """`admission.next_job()`, failing the test (not hanging it) when it waits over 2 s."""
    result: list[tuple[bool, Job | None]] = []
    waiter = threading.Thread(target=lambda: result.append(admission.next_job()), daemon=True)
    waiter.start()
    waiter.join(2)
    assert result, "next_job() did not return within 2 s"
    return result[0]


def _wait_finished(admission: Admission, timeout_s: float) -> bool:
    """`admission.wait_finished` with a deadline `timeout_s` from now, failing the test (not
    hanging it) when it overstays that deadline by 2 s."""
    result: list[bool] = []
    deadline = time.monotonic() + timeout_s

    def wait() -> None:
        result.append(admission.wait_finished(deadline))

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(timeout_s + 2)
    assert result, f"wait_finished() overstayed its {timeout_s} s deadline"
    return result[0]


def _inline_ok(name: str = "answer_length") -> InlineResult:
    """What inline evaluation did when one evaluator scored 0.5."""
    return InlineResult(outcomes=(EvaluationOutcome(Score(name=name, value=0.5), 0.01, False),))


def test_a_turn_with_no_evaluation_configured_counts_as_sampled_out_without_metrics(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Only inline evaluators and no inline result: the turn is sampled out, no metric point."""
    config = RunnerConfig([AnswerLength()], inline=frozenset({"answer_length"}))
    admission = _admission(emitter, config)
    assert admission.admit(make_turn(1), None) is False
    admission.flush_deferred()
    stats = admission.stats()
    assert (stats.submitted, stats.sampled_out, stats.in_flight) == (1, 1, 0)
    assert telemetry.counts() == {}


def test_a_turn_with_an_inline_result_is_queued_even_without_background_work(
    emitter: Emitter,
) -> None:
    """Inline outcomes (or inline evaluators sampled out) still need a worker to count them."""
    config = RunnerConfig([AnswerLength()], inline=frozenset({"answer_length"}))
    admission = _admission(emitter, config)
    assert admission.admit(make_turn(1), _inline_ok()) is True
    assert admission.admit(make_turn(2), InlineResult(sampled_out=("answer_length",))) is True
    assert admission.stats().in_flight == 2


def test_the_queue_takes_exactly_max_queue_size_turns(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """With max_queue_size=3, three turns are queued and the fourth is dropped and counted."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()], max_queue_size=3))
    assert [admission.admit(make_turn(i), None) for i in range(4)] == [True, True, True, False]
    assert admission.queue_size() == 3
    admission.stats()  # moves the inbox into the queue: the bound still holds
    assert admission.admit(make_turn(9), None) is False
    stats = admission.stats()
    assert (stats.submitted, stats.dropped, stats.in_flight, stats.queue_size) == (5, 2, 3, 3)
    admission.flush_deferred()
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_DROPPED): 2}


def test_queue_size_counts_the_inbox_and_the_queue(emitter: Emitter) -> None:
    """Turns handed over (inbox) and turns queued both count as waiting."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    admission.admit(make_turn(1), None)
    admission.admit(make_turn(2), None)
    admission.stats()  # both queued now
    admission.admit(make_turn(3), None)  # in the inbox
    assert admission.queue_size() == 3


def test_a_dropped_turn_still_records_its_inline_scores(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A turn dropped at a full queue keeps its inline results in the metrics."""
    config = RunnerConfig(
        [AnswerLength(), HasContext()], inline=frozenset({"answer_length"}), max_queue_size=1
    )
    admission = _admission(emitter, config)
    admission.admit(make_turn(1), None)
    assert admission.admit(make_turn(2), _inline_ok()) is False
    admission.flush_deferred()
    counts = telemetry.counts()
    assert counts[("answer_length", semconv.OUTCOME_OK)] == 1


def test_drops_are_logged_once_per_interval_naming_the_bound(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """Many drops in a row give one warning that names max_queue_size."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()], max_queue_size=1))
    admission.admit(make_turn(0), None)
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        for i in range(1, 6):
            assert admission.admit(make_turn(i), None) is False
        admission.count_dropped_turn(None, None)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "max_queue_size=1" in warnings[0].getMessage()
    assert "dropping turns" in warnings[0].getMessage()


def test_a_turn_lost_before_submission_is_counted_dropped_with_its_inline_scores(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """count_dropped_turn counts a dropped turn, its inline results, and warns."""
    admission = _admission(emitter, RunnerConfig([AnswerLength(), HasContext()]))
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        admission.count_dropped_turn(_inline_ok(), make_turn(1))
        admission.count_dropped_turn(None, None)
    assert any("dropping turns" in r.getMessage() for r in caplog.records)
    admission.flush_deferred()
    stats = admission.stats()
    assert (stats.submitted, stats.dropped) == (2, 2)
    assert telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_OK): 1,
        ("answer_length", semconv.OUTCOME_DROPPED): 2,
        ("has_context", semconv.OUTCOME_DROPPED): 2,
    }


def test_a_closed_admission_drops_new_turns(telemetry: Telemetry, emitter: Emitter) -> None:
    """After close() (shutdown draining), a submitted turn is dropped and counted; close()
    says True the first time, and False once stopped."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    assert admission.close() is True
    assert admission.admit(make_turn(1), None) is False
    assert admission.stats().dropped == 1
    assert admission.close() is True  # closing, not stopped yet
    admission.stop()
    assert admission.close() is False


def test_a_turn_handed_over_after_stop_is_counted_dropped_at_once(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A turn that passed the queue check as shutdown stopped (no worker is left) is counted
    as dropped on the spot, in the stats and the metrics, inline scores too."""
    config = RunnerConfig([AnswerLength(), HasContext()], inline=frozenset({"has_context"}))
    admission = _admission(emitter, config)
    assert admission.stop() == []
    assert admission.stopping is True
    inline = _inline_ok("has_context")
    assert admission.admit(make_turn(1), inline) is True  # handed over, then found too late
    assert telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_DROPPED): 1,
        ("has_context", semconv.OUTCOME_OK): 1,
    }
    stats = admission.stats()
    assert (stats.submitted, stats.dropped, stats.in_flight, stats.queue_size) == (1, 1, 0, 0)


def test_a_lost_turn_handed_over_after_stop_is_counted_at_once(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """count_dropped_turn after stop reaches the metrics with no further flush."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    admission.stop()
    admission.count_dropped_turn(None, make_turn(1))
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_DROPPED): 1}


def test_sampled_out_turns_are_counted_per_turn_in_stats_and_metrics(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Sampled-out turns count every configured evaluator once per turn."""
    config = RunnerConfig([AnswerLength(), HasContext()], sample_rate=0.0)
    admission = _admission(emitter, config)
    for i in range(3):
        assert admission.admit(make_turn(i), None) is False
    assert telemetry.counts() == {}  # counted by a worker (here: flush_deferred), not on submit
    admission.flush_deferred()
    assert admission.stats().sampled_out == 3
    assert telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_SAMPLED_OUT): 3,
        ("has_context", semconv.OUTCOME_SAMPLED_OUT): 3,
    }
    admission.flush_deferred()  # counted once
    assert telemetry.counts()[("answer_length", semconv.OUTCOME_SAMPLED_OUT)] == 3


def test_next_job_hands_out_jobs_in_order_and_stop_returns_the_unfinished(
    emitter: Emitter,
) -> None:
    """Jobs come out first in, first out; stop() returns the queued ones, then the running."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    turns = [make_turn(i) for i in range(3)]
    for turn in turns:
        admission.admit(turn, None)
    running, first = _next_job(admission)
    assert running is True and first is not None and first.turn == turns[0]
    leftovers = admission.stop()
    assert [job.turn for job in leftovers] == [turns[1], turns[2], turns[0]]
    assert admission.queue_size() == 0
    assert admission.stats().queue_size == 0
    assert _next_job(admission) == (False, None)


def test_requeue_first_puts_an_unfinished_job_back_at_the_head(emitter: Emitter) -> None:
    """An abandoned worker's job goes back first; a job already done is not requeued."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    for i in range(2):
        admission.admit(make_turn(i), None)
    _, first = _next_job(admission)
    assert first is not None
    admission.requeue_first(first)
    _, again = _next_job(admission)
    assert again is first
    again.done = True
    admission.requeue_first(again)
    assert admission.queue_size() == 1
    assert [job.turn for job in admission.stop()] == [make_turn(1), make_turn(0)]


def test_a_finished_job_is_counted_once_and_flushers_see_it(emitter: Emitter) -> None:
    """count_finished moves a turn from in flight to its outcome; wait_finished then returns."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    admission.admit(make_turn(1), None)
    _, job = _next_job(admission)
    assert job is not None
    assert _wait_finished(admission, 0.05) is False
    finisher = threading.Timer(0.05, admission.count_finished, (job, "scored"))
    finisher.start()
    assert _wait_finished(admission, 5) is True
    stats = admission.stats()
    assert (stats.scored, stats.in_flight) == (1, 0)
    assert admission.stop() == []  # a finished job is no longer running


def test_plan_applies_per_evaluator_rates_and_keeps_sync_and_async_apart(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A rate of 0 leaves an evaluator out (counted sampled out); the rest are split by kind."""
    judge, length, context = Judge(), AnswerLength(), HasContext()
    config = RunnerConfig([length, context, judge], evaluator_sample_rates={"has_context": 0.0})
    emission = Emission(emitter, ("answer_length", "has_context", "judge"), ())
    job = Job(make_turn(1), InlineResult(), {"answer_length", "has_context", "judge"})
    assert plan(job, config, ([length, context], [judge]), emission) is True
    assert job.planned is True
    assert (job.sync, job.asynchronous) == ([length], [judge])
    assert job.pending == {"answer_length", "judge"}
    assert telemetry.counts() == {("has_context", semconv.OUTCOME_SAMPLED_OUT): 1}


def test_plan_with_everything_sampled_out_says_nothing_is_left(emitter: Emitter) -> None:
    """When every evaluator's rate leaves it out, plan returns False."""
    length = AnswerLength()
    config = RunnerConfig([length], evaluator_sample_rates={"answer_length": 0.0})
    emission = Emission(emitter, ("answer_length",), ("answer_length",))
    job = Job(make_turn(1), InlineResult(), {"answer_length"})
    assert plan(job, config, ([length], []), emission) is False
    assert job.pending == set()


def _plan_with_a_filter_raising(error: Exception, emitter: Emitter) -> tuple[Job, bool]:
    """`plan` of one answer_length job under a turn filter that raises `error`: the job and
    what `plan` returned."""

    def broken(turn: RagTurn) -> bool:
        raise error

    length = AnswerLength()
    config = RunnerConfig([length], turn_filter=broken)
    emission = Emission(emitter, ("answer_length",), ("answer_length",))
    job = Job(make_turn(1), InlineResult(), {"answer_length"})
    return job, plan(job, config, ([length], []), emission)


def test_plan_counts_a_raising_filter_as_an_error_of_every_pending_evaluator(
    telemetry: Telemetry, emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """A turn filter that raises fails the job: logged, each pending evaluation an error."""
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        job, planned = _plan_with_a_filter_raising(ValueError("bad filter"), emitter)
    assert planned is False
    assert job.failed is True and job.pending == set() and job.sync == []
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_ERROR): 1}
    assert "turn_filter raised ValueError: bad filter" in caplog.text


def test_plan_keeps_a_turn_the_filter_accepts(emitter: Emitter) -> None:
    """A filter returning True keeps the turn for every evaluator."""
    length = AnswerLength()
    config = RunnerConfig([length], turn_filter=lambda turn: len(turn.query) > 0)
    emission = Emission(emitter, ("answer_length",), ("answer_length",))
    job = Job(make_turn(1), InlineResult(), {"answer_length"})
    assert plan(job, config, ([length], []), emission) is True
    assert job.sync == [length] and job.failed is False


def test_idle_workers_are_woken_by_a_handed_over_turn(
    telemetry: Telemetry, emitter: Emitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the workers' periodic tick far away, a turn handed to an idle runner is still
    scored at once: the hand-over wakes a waiting worker."""
    monkeypatch.setattr("groundwire.runner._admission._IDLE_WAKE_S", 30.0)
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=1), emitter)
    try:
        time.sleep(0.1)  # the worker is waiting
        assert runner.submit(make_turn(1))
        deadline = time.monotonic() + 5
        while telemetry.counts().get(("answer_length", semconv.OUTCOME_OK)) != 1:
            assert time.monotonic() < deadline, "the idle worker was not woken"
            time.sleep(0.01)
    finally:
        runner.shutdown(1)


def test_a_backlog_of_1024_lost_turns_wakes_an_idle_worker(
    telemetry: Telemetry, emitter: Emitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sampled-out turns wake no worker one by one; 1,024 of them do, and get counted."""
    monkeypatch.setattr("groundwire.runner._admission._IDLE_WAKE_S", 30.0)
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], sample_rate=0.0), emitter)
    key = ("answer_length", semconv.OUTCOME_SAMPLED_OUT)
    try:
        time.sleep(0.1)  # the workers are waiting
        for i in range(1023):
            runner.submit(make_turn(i))
        time.sleep(0.2)
        assert key not in telemetry.counts()
        runner.submit(make_turn(1023))
        deadline = time.monotonic() + 5
        while telemetry.counts().get(key) != 1024:
            assert time.monotonic() < deadline, telemetry.counts()
            time.sleep(0.01)
    finally:
        runner.shutdown(1)


def test_shutdown_wakes_idle_workers_so_they_exit_at_once(
    emitter: Emitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stop() notifies every waiting worker: their threads end right after shutdown."""
    monkeypatch.setattr("groundwire.runner._admission._IDLE_WAKE_S", 30.0)
    before = set(threading.enumerate())
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=2), emitter)
    mine = [t for t in threading.enumerate() if t not in before]
    time.sleep(0.1)
    runner.shutdown(1)
    deadline = time.monotonic() + 2
    while any(t.is_alive() for t in mine if t.name.startswith("groundwire-worker")):
        assert time.monotonic() < deadline, "a worker kept waiting after shutdown"
        time.sleep(0.01)


def test_a_requeued_job_is_returned_once_by_stop(emitter: Emitter) -> None:
    """A job put back at the head is no longer counted as running: stop() returns it once."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    for i in range(2):
        admission.admit(make_turn(i), None)
    _, first = _next_job(admission)
    assert first is not None
    admission.requeue_first(first)
    assert [job.turn for job in admission.stop()] == [make_turn(0), make_turn(1)]


def test_a_new_admission_is_open_and_not_stopping(emitter: Emitter) -> None:
    """Before stop() the runner is not stopping (a turn handed over is queued, not dropped)."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    assert admission.stopping is False
    assert admission.admit(make_turn(1), None) is True
    assert admission.stats().in_flight == 1


def test_every_turn_handed_over_after_stop_is_counted(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Two turns that slipped past the queue check after stop() are two dropped turns."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    admission.stop()
    admission.admit(make_turn(1), None)
    admission.admit(make_turn(2), None)
    assert admission.stats().dropped == 2
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_DROPPED): 2}


def test_turns_deferred_across_several_takes_are_all_counted(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Sampled-out turns taken in by separate stats() calls add up before the metrics flush."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()], sample_rate=0.0))
    for i in range(3):
        admission.admit(make_turn(i), None)
        admission.stats()  # takes the inbox in, defers its metric points
    admission.flush_deferred()
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_SAMPLED_OUT): 3}


def test_wait_finished_waits_out_a_short_deadline(emitter: Emitter) -> None:
    """A deadline under a second still waits for the turn in flight (True when it lands)."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()]))
    admission.admit(make_turn(1), None)
    _, job = _next_job(admission)
    assert job is not None
    threading.Timer(0.05, admission.count_finished, (job, "scored")).start()
    assert _wait_finished(admission, 0.8) is True


def test_the_drop_warning_says_where_the_drops_are_counted(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """The warning's full text: the bound, and the metric that counts the dropped turns."""
    admission = _admission(emitter, RunnerConfig([AnswerLength()], max_queue_size=2))
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        admission.close()
        admission.admit(make_turn(1), None)
    assert [r.getMessage() for r in caplog.records] == [
        "evaluation queue full (max_queue_size=2) or shut down: dropping turns "
        "(counted in groundwire.evaluations{groundwire.outcome=dropped})"
    ]


def test_plan_says_nothing_is_left_when_the_filter_rejects_the_turn(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A rejected turn: plan returns False, every pending evaluation counted sampled out."""
    length = AnswerLength()
    config = RunnerConfig([length], turn_filter=lambda turn: False)
    emission = Emission(emitter, ("answer_length",), ("answer_length",))
    job = Job(make_turn(1), InlineResult(), {"answer_length"})
    assert plan(job, config, ([length], []), emission) is False
    assert job.pending == set() and job.sync == []
    assert telemetry.counts() == {("answer_length", semconv.OUTCOME_SAMPLED_OUT): 1}


def test_admission_and_plan_count_under_the_turns_app(
    telemetry: Telemetry, app_telemetry: Telemetry
) -> None:
    """Drops with inline scores, a raising filter and a per-evaluator rate all count under
    the app the turn came from."""
    routed = Routed(telemetry, app_telemetry)
    config = RunnerConfig(
        [AnswerLength(), HasContext()],
        inline=frozenset({"has_context"}),
        max_queue_size=1,
        evaluator_sample_rates={"answer_length": 0.0},
    )
    admission = _admission(routed, config)
    shop = make_turn(1).model_copy(update={"attributes": {semconv.SERVICE_NAME: "shop"}})
    admission.admit(make_turn(0), None)
    assert admission.admit(shop, _inline_ok("has_context")) is False  # the queue is full
    emission = Emission(routed, ("answer_length", "has_context"), ("answer_length",))
    rated = Job(shop, InlineResult(), {"answer_length"})
    assert plan(rated, config, ([AnswerLength()], []), emission) is False

    def broken(turn: RagTurn) -> bool:
        raise ValueError("bad filter")

    failing = RunnerConfig([AnswerLength()], turn_filter=broken)
    assert plan(Job(shop, InlineResult(), {"answer_length"}), failing, ([], []), emission) is False
    admission.flush_deferred()
    assert telemetry.counts() == {}
    assert app_telemetry.counts() == {
        ("has_context", semconv.OUTCOME_OK): 1,
        ("answer_length", semconv.OUTCOME_DROPPED): 1,
        ("answer_length", semconv.OUTCOME_SAMPLED_OUT): 1,
        ("answer_length", semconv.OUTCOME_ERROR): 1,
    }


def test_a_turn_handed_over_after_stop_is_counted_under_its_app(
    telemetry: Telemetry, app_telemetry: Telemetry
) -> None:
    """The late turn's drop and its inline scores land under the app it came from."""
    config = RunnerConfig([AnswerLength(), HasContext()], inline=frozenset({"has_context"}))
    admission = _admission(Routed(telemetry, app_telemetry), config)
    admission.stop()
    shop = make_turn(1).model_copy(update={"attributes": {semconv.SERVICE_NAME: "shop"}})
    admission.admit(shop, _inline_ok("has_context"))
    assert telemetry.counts() == {}
    assert app_telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_DROPPED): 1,
        ("has_context", semconv.OUTCOME_OK): 1,
    }


def test_idle_workers_wait_without_spinning(emitter: Emitter) -> None:
    """Workers with nothing to do sleep on the lock: an idle runner uses almost no CPU."""
    runner = BackgroundRunner(RunnerConfig([AnswerLength()], workers=2), emitter)
    try:
        time.sleep(0.1)
        started = time.process_time()
        time.sleep(1.0)
        assert time.process_time() - started < 0.05
    finally:
        runner.shutdown(1)


def test_a_turn_lost_before_submission_is_counted_under_its_app(
    telemetry: Telemetry, app_telemetry: Telemetry
) -> None:
    """count_dropped_turn counts the drop and the inline scores under the turn's app."""
    config = RunnerConfig([AnswerLength(), HasContext()], inline=frozenset({"has_context"}))
    admission = _admission(Routed(telemetry, app_telemetry), config)
    shop = make_turn(1).model_copy(update={"attributes": {semconv.SERVICE_NAME: "shop"}})
    admission.count_dropped_turn(_inline_ok("has_context"), shop)
    admission.flush_deferred()
    assert telemetry.counts() == {}
    assert app_telemetry.counts() == {
        ("answer_length", semconv.OUTCOME_DROPPED): 1,
        ("has_context", semconv.OUTCOME_OK): 1,
    }


def test_the_filter_warning_names_the_error_exactly(
    emitter: Emitter, caplog: pytest.LogCaptureFixture
) -> None:
    """The one warning for a raising filter reads 'turn_filter raised <type>: <message>'."""
    with caplog.at_level(logging.WARNING, logger="groundwire.runner"):
        _plan_with_a_filter_raising(KeyError("query"), emitter)
    assert [r.getMessage() for r in caplog.records] == ["turn_filter raised KeyError: 'query'"]


class _HoldsTheFirstTurn:
    """A sync evaluator that holds the worker on turn 1 until released; others score at once."""

    name = "holds"

    def __init__(self) -> None:
        self.holding = threading.Event()
        self.release = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        """Hold on turn 1, then score."""
        if turn.query == "question 1":
            self.holding.set()
            self.release.wait(10)
        return Score(name=self.name, value=1.0)


def test_a_second_idle_worker_is_woken_while_the_first_is_busy(
    telemetry: Telemetry, emitter: Emitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every idle worker is counted: with one worker busy on a turn, the other (waiting) is
    woken for the next turn at once, not at its next tick."""
    monkeypatch.setattr("groundwire.runner._admission._IDLE_WAKE_S", 30.0)
    holds = _HoldsTheFirstTurn()
    runner = BackgroundRunner(RunnerConfig([holds], workers=2), emitter)
    try:
        time.sleep(0.1)  # both workers are waiting
        runner.submit(make_turn(1))
        assert holds.holding.wait(5)
        time.sleep(0.05)  # the other worker is waiting again
        runner.submit(make_turn(2))
        deadline = time.monotonic() + 3
        while telemetry.counts().get(("holds", semconv.OUTCOME_OK)) != 1:
            assert time.monotonic() < deadline, "the idle worker was not woken"
            time.sleep(0.01)
    finally:
        holds.release.set()
        runner.shutdown(1)
