"""configure(): environment variables, bad options, integrations discovered and scored."""

from __future__ import annotations

from typing import Any

import pytest

import groundwire
from groundwire import semconv
from groundwire.exporters._providers import choose_exporter, otlp_protocol

from .conftest import HasContext, Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


def _configure(telemetry: Telemetry, **options: Any) -> Any:
    """configure() on the test's providers (integrations off unless asked)."""
    return telemetry.configure(**options)


def test_every_option_is_read_from_its_environment_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each GROUNDWIRE_* variable sets its option when the argument is not given."""
    env = {
        semconv.ENV_EVALUATORS: "quoted_spans, quote_verification",
        semconv.ENV_INLINE: "quoted_spans",
        semconv.ENV_SAMPLE_RATE: "0.75",
        semconv.ENV_EVALUATOR_SAMPLE_RATES: "quote_verification=0.25",
        semconv.ENV_TURN_FILTER: "tests.online.filters:only_questions",
        semconv.ENV_JUDGE_TOKEN_BUDGET: "5000",
        semconv.ENV_MAX_QUEUE_SIZE: "7",
        semconv.ENV_WORKERS: "3",
        semconv.ENV_ASYNC_CONCURRENCY: "4",
        semconv.ENV_EVALUATOR_TIMEOUT: "2.5",
        semconv.ENV_INSTRUMENT: "false",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    online = groundwire.configure(
        tracer_provider=telemetry.tracer_provider, meter_provider=telemetry.meter_provider
    )
    config = online.runner.config
    assert [e.name for e in config.evaluators] == ["quoted_spans", "quote_verification"]
    assert config.inline == {"quoted_spans"}
    assert config.sample_rate == 0.75
    assert config.evaluator_sample_rates == {"quote_verification": 0.25}
    assert config.turn_filter is not None and config.turn_filter.__name__ == "only_questions"
    assert (config.judge_token_budget, config.max_queue_size) == (5000, 7)
    assert (config.workers, config.async_concurrency, config.evaluator_timeout_s) == (3, 4, 2.5)
    assert online.instrumented == []


def test_an_argument_wins_over_its_environment_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Explicit arguments override GROUNDWIRE_* variables."""
    monkeypatch.setenv(semconv.ENV_SAMPLE_RATE, "0.1")
    monkeypatch.setenv(semconv.ENV_EVALUATORS, "quoted_spans")
    online = _configure(telemetry, evaluators=[HasContext()], sample_rate=0.5)
    assert online.runner.config.sample_rate == 0.5
    assert [e.name for e in online.runner.config.evaluators] == ["has_context"]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (semconv.ENV_SAMPLE_RATE, "lots", "GROUNDWIRE_SAMPLE_RATE must be a number"),
        (semconv.ENV_SAMPLE_RATE, "2", "sample_rate must be in"),
        (semconv.ENV_WORKERS, "1.5", "GROUNDWIRE_WORKERS must be a whole number"),
        (semconv.ENV_EVALUATOR_SAMPLE_RATES, "half", "GROUNDWIRE_EVALUATOR_SAMPLE_RATES"),
        (semconv.ENV_TURN_FILTER, "no_colon", "GROUNDWIRE_TURN_FILTER must be"),
        (semconv.ENV_TURN_FILTER, "tests.online.filters:missing", "cannot be imported"),
        (semconv.ENV_EXPORTER, "kafka", "exporter must be one of"),
        (semconv.ENV_INLINE, "nope", "inline names"),
    ],
)
def test_bad_settings_fail_at_configure_naming_the_setting(
    telemetry: Telemetry,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    message: str,
) -> None:
    """A bad variable fails configure() with a message naming it; nothing is left configured."""
    monkeypatch.setenv(variable, value)
    with pytest.raises((ValueError, TypeError), match=message):
        _configure(telemetry, evaluators=[HasContext()])
    assert groundwire._configure.get_online() is None


def test_exporter_choice_follows_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`auto` means OTLP when an endpoint variable is set, else the file; protocols are checked."""
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", raising=False)
    assert choose_exporter("auto", None).kind == "file"
    assert str(choose_exporter("auto", "out/x.jsonl").path) == "out/x.jsonl"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces")
    assert choose_exporter("auto", None).kind == "otlp"
    assert otlp_protocol("traces") == "http/protobuf"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert otlp_protocol("metrics") == "grpc"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_"):
        otlp_protocol("traces")


def test_langchain_app_is_instrumented_and_scored(telemetry: Telemetry) -> None:
    """configure() finds groundwire-langchain, and a real LCEL RAG chain's turns get scored."""
    from tests.test_assembly_langchain import rag_chain

    online = _configure(
        telemetry,
        evaluators=["quoted_spans", HasContext()],
        inline=["quoted_spans"],
        instrument=["langchain"],
    )
    assert online.instrumented == ["groundwire_langchain"]
    answer = 'The context says "Paris is the capital of France" so Paris.'
    assert rag_chain([answer]).invoke("What is the capital of France?") == answer
    assert online.force_flush(5)
    stats = online.stats()
    assert (stats.submitted, stats.scored) == (1, 1)
    (carrier,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    assert carrier.events[0].attributes is not None
    assert carrier.events[0].attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    roots = [s for s in telemetry.finished() if s.parent is None]
    (root,) = roots
    assert root.attributes is not None
    assert root.attributes["evaluations.0.evaluation.name"] == "quoted_spans"
    assert root.attributes["evaluations.0.evaluation.score"] == 1.0
    groundwire.shutdown(5)
    rag_chain(["again"]).invoke("What is the capital of Spain?")
    assert len([s for s in telemetry.finished() if s.parent is None]) == 1  # uninstrumented


def test_llamaindex_app_is_instrumented_and_scored(telemetry: Telemetry) -> None:
    """instrument=True finds every groundwire-* integration; a real query engine is scored."""
    from llama_index.core import Settings
    from llama_index.core.embeddings import MockEmbedding

    from tests.test_assembly_llamaindex import QUESTION, build_index, engine

    Settings.embed_model = MockEmbedding(embed_dim=8)
    index = build_index()
    online = _configure(telemetry, evaluators=[HasContext()], instrument=True)
    assert sorted(online.instrumented) == ["groundwire_langchain", "groundwire_llamaindex"]
    engine(index).query(QUESTION)
    assert online.force_flush(5)
    assert online.stats().scored == 1
    (carrier,) = telemetry.finished(semconv.EVALUATION_SPAN_NAME)
    assert carrier.events[0].attributes is not None
    assert carrier.events[0].attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
