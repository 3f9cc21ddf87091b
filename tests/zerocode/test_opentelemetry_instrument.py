"""Zero-code scoring: `opentelemetry-instrument` with the distro runs a LangChain or LlamaIndex
app that has no groundwire code, configured by `OTEL_*` and `GROUNDWIRE_*` variables only, and
every turn's score reaches a real OTLP receiver through the distro's providers.

Each app runs in a child process, as the Kubernetes operator runs it.
"""

from __future__ import annotations

import pytest

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver
from tests.dialects._apps import ANSWERS, QUESTIONS
from tests.zerocode._run import (
    OFF_LINE,
    THIRD_PARTY,
    last_json,
    last_points,
    operator_env,
    outcomes,
    run_instrumented,
    turn_roots,
)

pytestmark = pytest.mark.slow

RESULT = semconv.GEN_AI_EVALUATION_RESULT_EVENT


def _carriers_by_root(receiver: OtlpHttpReceiver) -> dict[str, list[str]]:
    """Evaluation names on the carrier spans, by the span they evaluate."""
    carriers: dict[str, list[str]] = {}
    for carrier in receiver.spans(semconv.EVALUATION_SPAN_NAME):
        names = [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in carrier.events]
        assert carrier.parent_span_id is not None
        carriers.setdefault(carrier.parent_span_id, []).extend(names)
    return carriers


def _check_every_turn_scored(receiver: OtlpHttpReceiver, events: str) -> None:
    """Two turns; each has its quoted_spans result as `events` says (span event on its carrier,
    log record on its trace); the counters account for both; one set of providers, the distro's."""
    roots = turn_roots(receiver)
    assert len(roots) == len(QUESTIONS)
    carriers = _carriers_by_root(receiver)
    records = receiver.log_records(RESULT)
    for root in roots:
        expected_spans = [] if events == semconv.EVENTS_LOGS else ["quoted_spans"]
        assert carriers.get(root.span_id, []) == expected_spans
        mine = [r for r in records if r.trace_id == root.trace_id]
        assert len(mine) == (0 if events == semconv.EVENTS_SPAN else 1)
        assert all(r.attributes[semconv.GEN_AI_EVALUATION_NAME] == "quoted_spans" for r in mine)
    assert outcomes(receiver, "quoted_spans") == {semconv.OUTCOME_OK: float(len(roots))}
    # The score histogram holds every number (a NaN score, no quote to check, is not one).
    results = (
        [r.attributes for r in records]
        if events == semconv.EVENTS_LOGS
        else [e.attributes for s in receiver.spans(semconv.EVALUATION_SPAN_NAME) for e in s.events]
    )
    numbers = [a for a in results if semconv.GEN_AI_EVALUATION_SCORE_VALUE in a]
    scores = last_points(receiver.metric_points(semconv.METRIC_EVALUATION_SCORE)).values()
    assert sum(point.count for point in scores) == len(numbers)
    # The distro's configurator built every provider: its resource, one process instance.
    resources = [
        *(s.resource for s in receiver.spans()),
        *(r.resource for r in receiver.log_records()),
        *(p.resource for p in receiver.metric_points()),
    ]
    assert all(r.get("telemetry.auto.version") for r in resources)
    assert len({r["service.instance.id"] for r in resources}) == 1
    assert {r["service.name"] for r in resources} == {"zero-code-app"}


@pytest.mark.parametrize("events", [semconv.EVENTS_BOTH, semconv.EVENTS_SPAN, semconv.EVENTS_LOGS])
def test_langchain_app_is_scored_from_the_environment_alone(events: str) -> None:
    """GROUNDWIRE_EVALUATORS (and GROUNDWIRE_EVENTS) is all it takes: each turn's result arrives
    as the events setting says and the counters account for every turn."""
    with OtlpHttpReceiver() as receiver:
        env = operator_env(
            receiver.endpoint, GROUNDWIRE_EVALUATORS="quoted_spans", GROUNDWIRE_EVENTS=events
        )
        done = run_instrumented("lc_app.py", env)
        assert last_json(done)["answers"] == list(ANSWERS)
        assert receiver.wait_for(lambda r: len(turn_roots(r)) >= 2, timeout_s=10)
        _check_every_turn_scored(receiver, events)
    assert OFF_LINE not in done.stderr


def test_llamaindex_app_is_scored_from_the_environment_alone() -> None:
    """The same for a LlamaIndex query engine, with GROUNDWIRE_ENABLED=true as the switch."""
    with OtlpHttpReceiver() as receiver:
        env = operator_env(
            receiver.endpoint,
            GROUNDWIRE_ENABLED="true",
            GROUNDWIRE_EVALUATORS="quoted_spans",
        )
        done = run_instrumented("li_app.py", env)
        assert len(last_json(done)["answers"]) == len(QUESTIONS)
        assert receiver.wait_for(lambda r: len(turn_roots(r)) >= 2, timeout_s=10)
        _check_every_turn_scored(receiver, semconv.EVENTS_BOTH)


def test_the_apps_own_configure_replaces_the_zero_code_one() -> None:
    """An app that also calls groundwire.configure(): one runner, each turn scored once."""
    with OtlpHttpReceiver() as receiver:
        env = operator_env(receiver.endpoint, GROUNDWIRE_EVALUATORS="quoted_spans")
        result = last_json(run_instrumented("lc_app.py", env, ["--configure-too"]))
        assert result["submitted"] == result["scored"] == len(QUESTIONS)
        assert receiver.wait_for(lambda r: len(turn_roots(r)) >= 2, timeout_s=10)
        _check_every_turn_scored(receiver, semconv.EVENTS_BOTH)


def test_disabled_instrumentation_stays_off() -> None:
    """OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=groundwire_langchain: no spans of ours, so no turn
    and no score, though scoring is on (the hook instruments nothing itself)."""
    with OtlpHttpReceiver() as receiver:
        env = operator_env(
            receiver.endpoint,
            GROUNDWIRE_EVALUATORS="quoted_spans",
            OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=f"{THIRD_PARTY},groundwire_langchain",
        )
        done = run_instrumented("lc_app.py", env)
        assert last_json(done)["answers"] == list(ANSWERS)
        receiver.wait_for(lambda r: bool(r.metric_points()), timeout_s=5)
        assert receiver.spans() == []
        assert receiver.log_records(RESULT) == []
    assert OFF_LINE not in done.stderr


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("GROUNDWIRE_SAMPLE_RATE", "lots", "GROUNDWIRE_SAMPLE_RATE must be a number, got 'lots'"),
        ("GROUNDWIRE_EVALUATORS", "quoted_spanz", "unknown evaluator 'quoted_spanz'"),
        ("GROUNDWIRE_ENABLED", "maybe", "GROUNDWIRE_ENABLED must be one of true/false"),
    ],
)
def test_a_bad_variable_is_one_line_and_the_app_runs_unscored(
    variable: str, value: str, named: str
) -> None:
    """One line names the variable; the app answers and its spans are exported, unscored."""
    with OtlpHttpReceiver() as receiver:
        env = operator_env(receiver.endpoint, GROUNDWIRE_EVALUATORS="quoted_spans")
        env[variable] = value
        done = run_instrumented("lc_app.py", env)
        assert last_json(done)["answers"] == list(ANSWERS)
        assert receiver.wait_for(lambda r: len(turn_roots(r)) >= 2, timeout_s=10)
        assert receiver.spans(semconv.EVALUATION_SPAN_NAME) == []
        assert receiver.log_records(RESULT) == []
    lines = [line for line in done.stderr.splitlines() if "groundwire" in line]
    assert len(lines) == 1
    assert lines[0].startswith(OFF_LINE)
    assert named in lines[0]


def test_nothing_is_scored_when_not_asked() -> None:
    """No GROUNDWIRE_* variable: spans are captured, nothing is scored, nothing is said."""
    with OtlpHttpReceiver() as receiver:
        done = run_instrumented("lc_app.py", operator_env(receiver.endpoint))
        assert receiver.wait_for(lambda r: len(turn_roots(r)) >= 2, timeout_s=10)
        assert receiver.spans(semconv.EVALUATION_SPAN_NAME) == []
        assert receiver.metric_points(semconv.METRIC_EVALUATIONS) == []
    assert "groundwire" not in done.stderr
