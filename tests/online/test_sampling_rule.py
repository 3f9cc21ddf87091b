"""The sampling rule is OpenTelemetry's `TraceIdRatioBased`, and lower rates pick subsets."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased

from groundwire import RagTurn, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig, trace_sampled

from .conftest import AnswerLength, HasContext, Telemetry

_RATES = (0.0, 1e-9, 0.001, 0.1, 0.25, 0.3333, 0.5, 0.75, 0.9, 0.999999, 1.0)


def _sdk_decision(trace_id: int, rate: float) -> bool:
    """What the OTel SDK's own sampler decides for this trace id at this rate."""
    result = TraceIdRatioBased(rate).should_sample(None, trace_id, "turn")
    return result.decision.is_sampled()


@pytest.mark.parametrize("rate", _RATES)
def test_decisions_equal_the_sdk_trace_id_ratio_sampler(rate: float) -> None:
    """On 4,000 random ids per rate, `trace_sampled` decides exactly as `TraceIdRatioBased`."""
    rng = random.Random(f"sampling-{rate}")
    ids = [rng.getrandbits(128) for _ in range(4_000)]
    # Ids at the bound's edge too: the low 64 bits just below, at and above rate * 2**64.
    bound = round(rate * 2**64)
    ids += [(rng.getrandbits(64) << 64) | low for low in (bound - 1, bound, bound + 1)]
    ids = [trace_id for trace_id in ids if 0 < trace_id < 2**128]
    mismatched = [
        format(trace_id, "032x")
        for trace_id in ids
        if trace_sampled(format(trace_id, "032x"), rate) != _sdk_decision(trace_id, rate)
    ]
    assert mismatched == []


def test_the_rule_reads_the_low_64_bits_only() -> None:
    """Two ids with the same low 64 bits get the same decision whatever their high bits."""
    rng = random.Random(7)
    for _ in range(2_000):
        low = rng.getrandbits(64)
        first = format((rng.getrandbits(64) << 64) | low, "032x")
        second = format((rng.getrandbits(64) << 64) | low, "032x")
        assert trace_sampled(first, 0.37) == trace_sampled(second, 0.37)


@settings(max_examples=200, deadline=None)
@given(
    trace_id=st.integers(min_value=1, max_value=2**128 - 1),
    low=st.floats(min_value=0.0, max_value=1.0),
    high=st.floats(min_value=0.0, max_value=1.0),
)
def test_a_trace_sampled_at_a_lower_rate_is_sampled_at_every_higher_rate(
    trace_id: int, low: float, high: float
) -> None:
    """Nesting: for r1 <= r2, every trace sampled at r1 is sampled at r2."""
    r1, r2 = sorted((low, high))
    hex_id = format(trace_id, "032x")
    if trace_sampled(hex_id, r1):
        assert trace_sampled(hex_id, r2)


def _turn(rng: random.Random) -> RagTurn:
    """A turn in a trace with a uniformly random id (uuid4 ids would bias the low bits)."""
    return RagTurn(
        query="q",
        contexts=["c"],
        answer="a",
        trace_id=format(rng.getrandbits(128) | 1, "032x"),
        span_id="1" * 16,
    )


def test_per_evaluator_rates_below_one_score_nested_sets_chosen_by_the_rule(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """At rates 0.3 and 0.6 each evaluator scores exactly the rule's traces, the first a subset."""
    rates = {"answer_length": 0.3, "has_context": 0.6}
    config = RunnerConfig([AnswerLength(), HasContext()], evaluator_sample_rates=rates)
    runner = BackgroundRunner(config, emitter)
    rng = random.Random(2026)
    turns = [_turn(rng) for _ in range(400)]
    for turn in turns:
        assert runner.submit(turn)
    assert runner.force_flush(10)
    runner.shutdown(1)

    scored: dict[str, set[str]] = {name: set() for name in rates}
    for span in telemetry.finished(semconv.EVALUATION_SPAN_NAME):
        for event in span.events:
            name = str(event.attributes[semconv.GEN_AI_EVALUATION_NAME])
            scored[name].add(format(span.context.trace_id, "032x"))
    for name, rate in rates.items():
        expected = {t.trace_id for t in turns if _sdk_decision(int(t.trace_id, 16), rate)}
        assert scored[name] == expected, name
    assert scored["answer_length"] < scored["has_context"]
    assert 80 < len(scored["answer_length"]) < 160 < len(scored["has_context"]) < 290
    counts = telemetry.counts()
    for name, traces in scored.items():
        assert counts[(name, "ok")] == len(traces)
        assert counts[(name, "sampled_out")] == len(turns) - len(traces)


@pytest.mark.parametrize("rate", [0, 0.0, 1, 1.0, 0.5])
def test_rates_from_zero_to_one_inclusive_are_accepted(rate: float) -> None:
    """Both ends of [0, 1] are valid rates, ints and floats alike."""
    from groundwire.runner import RunnerConfig

    assert RunnerConfig([AnswerLength()], sample_rate=rate).sample_rate == float(rate)


@pytest.mark.parametrize(
    ("rate", "error", "message"),
    [
        (True, TypeError, "sample_rate must be a number in [0, 1], got True"),
        ("0.5", TypeError, "sample_rate must be a number in [0, 1], got '0.5'"),
        (None, TypeError, "sample_rate must be a number in [0, 1], got None"),
        (-0.01, ValueError, "sample_rate must be in [0, 1], got -0.01"),
        (1.5, ValueError, "sample_rate must be in [0, 1], got 1.5"),
    ],
)
def test_a_bad_rate_is_refused_with_a_message_naming_the_setting(
    rate: object, error: type[Exception], message: str
) -> None:
    """A bool, a string, None or a number outside [0, 1] is refused, naming the setting."""
    from groundwire.runner import RunnerConfig

    with pytest.raises(error) as raised:
        RunnerConfig([AnswerLength()], sample_rate=rate)  # type: ignore[arg-type]
    assert str(raised.value) == message
