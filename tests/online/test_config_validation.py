"""Configuration errors are loud and early: every GROUNDWIRE_* variable and configure() option is
checked before anything is installed, and a handle that would score nothing is never returned."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import groundwire
from groundwire import semconv

from .conftest import HasContext, Telemetry, record_turn

pytestmark = pytest.mark.usefixtures("online_cleanup")


def _processors(telemetry: Telemetry) -> int:
    """How many span processors the app's tracer provider has."""
    return len(telemetry.tracer_provider._active_span_processor._span_processors)


def _configure(telemetry: Telemetry, **options: Any) -> Any:
    """configure() on the test's providers with a cheap evaluator unless told otherwise."""
    options.setdefault("evaluators", [HasContext()])
    return telemetry.configure(**options)


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        (semconv.ENV_HIDE_INPUTS, "maybe", "true/false"),
        (semconv.ENV_HIDE_OUTPUTS, "ture", "true/false"),
        (semconv.ENV_HIDE_DOCUMENT_TEXT, "2", "true/false"),
        (semconv.ENV_MAX_VALUE_LENGTH, "-5", "at least 0"),
        (semconv.ENV_MAX_VALUE_LENGTH, "lots", "whole number"),
        (semconv.ENV_EXIT_TIMEOUT, "0", "positive number of seconds"),
        (semconv.ENV_EXIT_TIMEOUT, "soon", "a number"),
        (semconv.ENV_WORKERS, "0", "at least 1"),
        (semconv.ENV_MAX_QUEUE_SIZE, "-1", "at least 1"),
        (semconv.ENV_EVALUATOR_TIMEOUT, "-2", "positive number"),
        (semconv.ENV_EVALUATORS, "nope", "quoted_spans"),
        (semconv.ENV_INSTRUMENT, "no_such_framework", "installed integrations"),
        (semconv.ENV_PROMETHEUS_PORT, "70000", "0-65535"),
        (semconv.ENV_JUDGE_TIMEOUT, "abc", ""),
        (semconv.ENV_GC_FREEZE, "sometimes", "true/false"),
        (semconv.ENV_SWITCH_INTERVAL, "2", "up to 1"),
        (semconv.ENV_EXECUTOR, "gpu", "threads"),
    ],
)
def test_a_bad_variable_raises_naming_it_its_value_and_what_is_allowed(
    telemetry: Telemetry,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    allowed: str,
) -> None:
    """ValueError with the variable, the value and the allowed values; nothing installed: no
    span processor added, no integration instrumented, nothing configured."""
    monkeypatch.setenv(variable, value)
    options: dict[str, Any] = {}
    if variable == semconv.ENV_EVALUATORS:
        options["evaluators"] = None
    if variable == semconv.ENV_INSTRUMENT:
        options["instrument"] = None
    before = _processors(telemetry)
    with pytest.raises(ValueError, match=variable) as raised:
        _configure(telemetry, **options)
    message = str(raised.value)
    assert variable in message and value in message and allowed in message, message
    assert _processors(telemetry) == before
    assert groundwire._configure.get_online() is None


def test_a_misspelt_privacy_switch_never_leaves_the_app_half_instrumented(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GROUNDWIRE_HIDE_INPUTS=maybe with LangChain installed: configure() fails before
    instrumenting LangChain (it used to log a traceback and return a handle scoring nothing)."""
    from groundwire_langchain import LangChainInstrumentor

    monkeypatch.setenv(semconv.ENV_HIDE_INPUTS, "maybe")
    with pytest.raises(ValueError, match="GROUNDWIRE_HIDE_INPUTS"):
        _configure(telemetry, instrument=True)
    assert not LangChainInstrumentor().is_instrumented_by_opentelemetry


def test_no_evaluators_is_an_error_not_a_silent_handle(telemetry: Telemetry) -> None:
    """configure() with no evaluators would score nothing: a ValueError says what to set."""
    with pytest.raises(ValueError, match="GROUNDWIRE_EVALUATORS"):
        _configure(telemetry, evaluators=[])


def test_an_explicit_bad_argument_names_the_argument(telemetry: Telemetry) -> None:
    """Bad arguments name the argument (not a variable) and the value."""
    with pytest.raises(ValueError, match=r"exit_timeout_s.*-1"):
        _configure(telemetry, exit_timeout_s=-1)
    with pytest.raises(ValueError, match=r"shutdown_timeout_s.*nan"):
        _configure(telemetry, shutdown_timeout_s=float("nan"))
    with pytest.raises(ValueError, match=r"instrument .*\['nope'\]"):
        _configure(telemetry, instrument=["nope"])


def test_stats_and_an_info_line_say_what_was_instrumented(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """stats() lists the evaluators, the instrumented integrations and the exporter; one INFO
    line says the same at configure()."""
    with caplog.at_level(logging.INFO, logger="groundwire"):
        online = _configure(telemetry, instrument=["langchain"])
    stats = online.stats()
    assert stats.evaluators == ("has_context",)
    assert stats.instrumented == ("groundwire_langchain",)
    assert stats.exporter == "the app's providers"
    assert stats.spans_not_exported == 0 and stats.unreachable == ()
    lines = [r.getMessage() for r in caplog.records if "instrumented:" in r.getMessage()]
    assert len(lines) == 1
    assert "has_context" in lines[0] and "groundwire_langchain" in lines[0]
    record_turn(telemetry.tracer)
    assert groundwire.force_flush(5)
    assert online.stats().scored == 1


def test_an_unknown_groundwire_variable_is_reported(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A misspelt variable name (GROUNDWIRE_EVALUATOR) is named in a warning, not ignored."""
    monkeypatch.setenv("GROUNDWIRE_EVALUATOR", "quoted_spans")
    _configure(telemetry)
    assert any("ignored: GROUNDWIRE_EVALUATOR (" in r.getMessage() for r in caplog.records)


def test_evaluator_options_from_the_environment_build_the_named_evaluators(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GROUNDWIRE_EVALUATOR_OPTIONS gives options to evaluators named by name (the no-code set-up
    has nothing else): quote_verification with its cosine off scores without the embedding
    model, as the README's live example does."""
    monkeypatch.setenv(semconv.ENV_EVALUATORS, "quoted_spans,quote_verification")
    monkeypatch.setenv(semconv.ENV_EVALUATOR_OPTIONS, '{"quote_verification": {"cosine": "off"}}')
    handle = _configure(telemetry, evaluators=None)
    try:
        built = {e.name: e for e in handle.runner.config.evaluators}
        assert set(built) == {"quoted_spans", "quote_verification"}
        assert built["quote_verification"].options.cosine == "off"
    finally:
        handle.shutdown()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "GROUNDWIRE_EVALUATOR_OPTIONS must be a JSON object .*not valid JSON"),
        ('["quote_verification"]', "GROUNDWIRE_EVALUATOR_OPTIONS must be a JSON object"),
        ('{"groundedness": {}}',
         r"GROUNDWIRE_EVALUATOR_OPTIONS gives options for \['groundedness'\]"),
        ('{"quote_verification": {"cosine": "sometimes"}}',
         "GROUNDWIRE_EVALUATOR_OPTIONS: quote_verification: .*cosine"),
    ],
)  # fmt: skip
def test_bad_evaluator_options_name_the_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    """Not JSON, not an object of objects, an evaluator not named, a bad option: one ValueError
    naming the variable, before anything is installed."""
    monkeypatch.setenv(semconv.ENV_EVALUATORS, "quote_verification")
    monkeypatch.setenv(semconv.ENV_EVALUATOR_OPTIONS, value)
    before = _processors(telemetry)
    with pytest.raises(ValueError, match=message):
        _configure(telemetry, evaluators=None)
    assert _processors(telemetry) == before
