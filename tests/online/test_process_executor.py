"""executor="process": sync evaluators run in one worker process, with the same accounting,
metrics and deadlines as on threads."""

from __future__ import annotations

import os
import time

from groundwire import RagTurn, Score
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig

from .conftest import AnswerLength, HasContext, Telemetry, make_turn


class WhereAmI:
    """Scores 1 when evaluated outside the test's process (picklable: module level)."""

    name = "where_am_i"

    def __init__(self) -> None:
        self.parent = os.getpid()

    def evaluate(self, turn: RagTurn) -> Score:
        """1.0 in another process, 0.0 here."""
        return Score(name=self.name, value=float(os.getpid() != self.parent))


class HangsOnFirst:
    """Hangs on the turn with trace id 1 (a stuck evaluator)."""

    name = "hangs"

    def evaluate(self, turn: RagTurn) -> Score:
        """Sleep far past any timeout on the first turn."""
        if turn.trace_id == f"{1:032x}":
            time.sleep(60)
        return Score(name=self.name, value=1.0)


def test_turns_are_scored_in_the_worker_process(telemetry: Telemetry, emitter: Emitter) -> None:
    """Every turn is scored by evaluators running in another process; counts add up."""
    config = RunnerConfig([WhereAmI(), HasContext(), AnswerLength()], executor="process")
    runner = BackgroundRunner(config, emitter)
    for i in range(20):
        runner.submit(make_turn(i))
    assert runner.force_flush(60)
    stats = runner.stats()
    assert stats.scored == 20 and stats.adds_up()
    counts = telemetry.counts()
    assert counts[("where_am_i", "ok")] == 20
    scores = list(telemetry.points("groundwire.evaluation.score"))
    assert any(p.attributes["gen_ai.evaluation.name"] == "where_am_i" for p in scores)
    runner.shutdown(5)


def test_a_hung_evaluator_in_the_process_times_out_and_the_process_is_replaced(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """A call overrunning evaluator_timeout_s errors that turn; the next turns are scored by a
    fresh process; shutdown keeps its deadline."""
    config = RunnerConfig([HangsOnFirst()], executor="process", evaluator_timeout_s=3.0, workers=1)
    runner = BackgroundRunner(config, emitter)
    for i in range(4):
        runner.submit(make_turn(i))
    assert runner.force_flush(60)
    stats = runner.stats()
    assert (stats.errored, stats.scored) == (1, 3), stats
    started = time.monotonic()
    runner.shutdown(1)
    assert time.monotonic() - started < 1.5
