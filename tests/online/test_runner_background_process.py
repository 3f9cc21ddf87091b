"""`BackgroundRunner` with `executor="process"`: the sync evaluators run in one worker process,
with their results recorded and counted as with threads, and the evaluator timeout applied to
the round trip. Real SDK providers and a real worker process."""

from __future__ import annotations

import os

import pytest

from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig

from .conftest import HasContext, Telemetry, make_turn
from .test_runner_background import _Pid, _span_scores

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("reaped")]


def test_the_process_executor_runs_sync_evaluators_in_one_worker_process(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Both turns' sync evaluators run in the same process, which is not the app's, and every
    score is recorded as ok on the evaluated turn's carrier span."""
    runner = BackgroundRunner(RunnerConfig([_Pid(), HasContext()], executor="process"), emitter)
    try:
        runner.submit(make_turn(1))
        runner.submit(make_turn(2))
        assert runner.force_flush(15)
        assert telemetry.counts() == {("pid", "ok"): 2, ("has_context", "ok"): 2}
        pids = {text for texts in _span_scores(telemetry) for text in texts if text.isdecimal()} - {
            "1"
        }
        assert len(pids) == 1 and str(os.getpid()) not in pids, pids
        assert runner.stats().errored == 0
    finally:
        runner.shutdown(5)
