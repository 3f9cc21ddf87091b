"""The real groundedness judge in the background runner, against a scripted OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwire import semconv
from groundwire.emit import Emitter
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.judges import JudgeClient
from groundwire.runner import BackgroundRunner, RunnerConfig
from groundwire.testing import OpenAIServer, structured
from tests.judges._helpers import ADDED, SUPPORT, fast_config, route

from .conftest import Telemetry, make_turn


@pytest.fixture
def judge_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-protocol server: both groundedness judges rate 2, with token usage."""
    with OpenAIServer() as server:
        server.set_default(
            route(
                {
                    SUPPORT: [structured({"rating": 2}, usage=(100, 4))],
                    ADDED: [structured({"rating": 2}, usage=(90, 3))],
                }
            )
        )
        yield server


def test_judge_scores_and_token_usage_flow_through_the_runner(
    telemetry: Telemetry, emitter: Emitter, judge_server: OpenAIServer
) -> None:
    """Groundedness runs on the runner's event loop; its tokens feed groundwire.judge.tokens."""
    judge = ResponseGroundedness(judge=JudgeClient(fast_config(judge_server)))
    runner = BackgroundRunner(RunnerConfig([judge], async_concurrency=4), emitter)
    for i in range(6):
        runner.submit(make_turn(i, answer="It says context 0."))
    assert runner.force_flush(20)
    assert runner.stats().scored == 6
    assert telemetry.counts() == {("groundedness", "ok"): 6}
    tokens = {
        p.attributes[semconv.GEN_AI_TOKEN_TYPE]: p.value
        for p in telemetry.points(semconv.METRIC_JUDGE_TOKENS)
    }
    assert tokens == {"input": 6 * 190, "output": 6 * 7}
    event = telemetry.finished(semconv.EVALUATION_SPAN_NAME)[0].events[0]
    assert event.attributes is not None
    assert event.attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    runner.shutdown(5)


def test_budget_stops_paying_judges_once_spent(
    telemetry: Telemetry, emitter: Emitter, judge_server: OpenAIServer
) -> None:
    """With 300 tokens an hour, two judged turns (197 tokens each) spend it; the rest skip."""
    judge = ResponseGroundedness(judge=JudgeClient(fast_config(judge_server)))
    config = RunnerConfig([judge], judge_token_budget=300, async_concurrency=1)
    runner = BackgroundRunner(config, emitter)
    for i in range(4):
        runner.submit(make_turn(i, answer="It says context 0."))
        assert runner.force_flush(20)
    assert telemetry.counts() == {("groundedness", "ok"): 2, ("groundedness", "skipped"): 2}
    assert len(judge_server.requests) == 4  # two judges per scored turn, none after
    runner.shutdown(5)


def test_judge_without_a_judge_configured_counts_as_skipped(
    telemetry: Telemetry, emitter: Emitter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No judge model anywhere: the judge's score is counted skipped, emitted nowhere."""
    for name in ("GROUNDWIRE_JUDGE_MODEL", "GROUNDWIRE_JUDGE_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    judge = ResponseGroundedness()
    assert judge.judge is None
    runner = BackgroundRunner(RunnerConfig([judge]), emitter)
    runner.submit(make_turn(1))
    assert runner.force_flush(5)
    assert telemetry.counts() == {("groundedness", "skipped"): 1}
    assert runner.stats().sampled_out == 1  # nothing ran
    assert telemetry.finished(semconv.EVALUATION_SPAN_NAME) == []
    runner.shutdown(1)


def test_judge_model_and_agreement_reach_the_metrics(
    telemetry: Telemetry, emitter: Emitter, judge_server: OpenAIServer
) -> None:
    """Judge points carry gen_ai.request.model; agreement lands in groundwire.judge.agreement."""
    judge = ResponseGroundedness(judge=JudgeClient(fast_config(judge_server)))
    runner = BackgroundRunner(RunnerConfig([judge]), emitter)
    runner.submit(make_turn(1, answer="It says context 1."))
    assert runner.force_flush(20)
    (agreement,) = telemetry.points(semconv.METRIC_JUDGE_AGREEMENT)
    assert agreement.attributes[semconv.GEN_AI_REQUEST_MODEL] == "judge-model"
    assert (agreement.count, agreement.sum) == (1, 1.0)
    assert tuple(agreement.explicit_bounds) == semconv.SCORE_BUCKETS
    (score,) = telemetry.points(semconv.METRIC_EVALUATION_SCORE)
    assert score.attributes[semconv.GEN_AI_REQUEST_MODEL] == "judge-model"
    runner.shutdown(5)
