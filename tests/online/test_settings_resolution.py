"""`configure()`'s settings resolved option by option (`_settings.py`): argument, else variable,
else default, for every option; the tuning options; the messages that name the variable a bad
value came from; the turn filter's import; the output checks. Nothing is installed here."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

from groundwire import semconv
from groundwire._settings import (
    DEFAULT_EXIT_TIMEOUT_S,
    VARIABLES,
    Settings,
    Tuning,
    check_environment,
    import_filter,
    name_the_variable,
    read_tuning,
    resolve_settings,
    runner_config,
    seconds,
)
from groundwire._switch import DEFAULT_SWITCH_INTERVAL_S
from groundwire.emit import DEFAULT_EVENTS


@pytest.fixture(autouse=True)
def _no_groundwire_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start from an environment without GROUNDWIRE_* variables."""
    for name in list(os.environ):
        if name.startswith("GROUNDWIRE_"):
            monkeypatch.delenv(name)


def _resolve(given: dict[str, Any] | None = None, **other: Any) -> Settings:
    """resolve_settings with every option not given (None) unless `given` says otherwise."""
    options: dict[str, Any] = {
        "service_name": None,
        "output_path": None,
        "tracer_provider": None,
        "meter_provider": None,
        "logger_provider": None,
        "events": None,
        "phoenix_annotations": None,
        "shutdown_timeout_s": 5,
        "exit_timeout_s": None,
    }
    options.update(other)
    return resolve_settings({**dict.fromkeys(VARIABLES), **(given or {})}, **options)


def test_every_option_has_its_default_when_neither_given_nor_set() -> None:
    """The documented defaults, all of them."""
    assert _resolve() == Settings(
        service_name=None,
        evaluators=(),
        inline=(),
        sample_rate=1.0,
        evaluator_sample_rates={},
        turn_filter=None,
        judge_token_budget=None,
        max_queue_size=2048,
        workers=2,
        async_concurrency=8,
        evaluator_timeout_s=30.0,
        executor="threads",
        exporter="auto",
        output_path=None,
        prometheus_port=None,
        prometheus_host="127.0.0.1",
        instrument=True,
        events=DEFAULT_EVENTS,
        tracer_provider=None,
        meter_provider=None,
        logger_provider=None,
        phoenix_annotations=None,
        shutdown_timeout_s=5.0,
        exit_timeout_s=DEFAULT_EXIT_TIMEOUT_S,
    )
    assert DEFAULT_EXIT_TIMEOUT_S == 3.0


_SET = {
    semconv.ENV_SERVICE_NAME: "svc",
    semconv.ENV_EVALUATORS: "quoted_spans, quote_verification",
    semconv.ENV_INLINE: "quoted_spans",
    semconv.ENV_SAMPLE_RATE: "0.5",
    semconv.ENV_EVALUATOR_SAMPLE_RATES: "quote_verification=0.25",
    semconv.ENV_TURN_FILTER: "tests.online.filters:only_questions",
    semconv.ENV_JUDGE_TOKEN_BUDGET: "1000",
    semconv.ENV_MAX_QUEUE_SIZE: "16",
    semconv.ENV_WORKERS: "3",
    semconv.ENV_ASYNC_CONCURRENCY: "4",
    semconv.ENV_EVALUATOR_TIMEOUT: "7.5",
    semconv.ENV_EXECUTOR: "process",
    semconv.ENV_EXPORTER: "otlp",
    semconv.ENV_OUTPUT_PATH: "/tmp/out.jsonl",
    semconv.ENV_PROMETHEUS_PORT: "9464",
    semconv.ENV_PROMETHEUS_HOST: "0.0.0.0",
    semconv.ENV_INSTRUMENT: "langchain",
    semconv.ENV_EVENTS: "span",
    semconv.ENV_PHOENIX_ANNOTATIONS: "http://127.0.0.1:6006",
    semconv.ENV_EXIT_TIMEOUT: "1.5",
}


def test_every_option_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each variable sets its option, parsed as its kind."""
    for name, value in _SET.items():
        monkeypatch.setenv(name, value)
    s = _resolve()
    assert (s.service_name, s.evaluators, s.inline) == (
        "svc",
        ["quoted_spans", "quote_verification"],
        ["quoted_spans"],
    )
    assert (s.sample_rate, s.evaluator_sample_rates) == (0.5, {"quote_verification": 0.25})
    assert (s.turn_filter, s.judge_token_budget) == ("tests.online.filters:only_questions", 1000)
    assert (s.max_queue_size, s.workers, s.async_concurrency) == (16, 3, 4)
    assert (s.evaluator_timeout_s, s.executor, s.exporter) == (7.5, "process", "otlp")
    assert (s.output_path, s.prometheus_port, s.prometheus_host) == (
        "/tmp/out.jsonl",
        9464,
        "0.0.0.0",
    )
    assert (s.instrument, s.events) == (["langchain"], "span")
    assert (s.phoenix_annotations, s.exit_timeout_s) == ("http://127.0.0.1:6006", 1.5)


def test_arguments_win_over_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """An argument given (even a false one) is used as it is; the variable is not read."""
    for name, value in _SET.items():
        monkeypatch.setenv(name, value)
    given = {
        "evaluators": ["quote_verification"],
        "inline": (),
        "sample_rate": 0.0,
        "evaluator_sample_rates": {},
        "turn_filter": "x:y",
        "judge_token_budget": 5,
        "max_queue_size": 1,
        "workers": 1,
        "async_concurrency": 1,
        "evaluator_timeout_s": 1.0,
        "executor": "threads",
        "exporter": "none",
        "prometheus_port": 0,
        "prometheus_host": "::1",
        "instrument": False,
    }
    s = _resolve(
        given,
        service_name="arg",
        output_path="o.jsonl",
        events="both",
        phoenix_annotations="https://p",
        exit_timeout_s=9,
        tracer_provider="t",
        meter_provider="m",
        logger_provider="l",
    )
    assert {name: getattr(s, name) for name in given} == given
    assert (s.service_name, s.output_path, s.events) == ("arg", "o.jsonl", "both")
    assert (s.phoenix_annotations, s.exit_timeout_s) == ("https://p", 9.0)
    assert (s.tracer_provider, s.meter_provider, s.logger_provider) == ("t", "m", "l")


def test_every_option_with_a_variable_names_it() -> None:
    """VARIABLES maps each option to its own variable (used to name it in errors)."""
    assert VARIABLES == {
        "evaluators": "GROUNDWIRE_EVALUATORS",
        "inline": "GROUNDWIRE_INLINE",
        "sample_rate": "GROUNDWIRE_SAMPLE_RATE",
        "evaluator_sample_rates": "GROUNDWIRE_EVALUATOR_SAMPLE_RATES",
        "turn_filter": "GROUNDWIRE_TURN_FILTER",
        "judge_token_budget": "GROUNDWIRE_JUDGE_TOKEN_BUDGET",
        "max_queue_size": "GROUNDWIRE_MAX_QUEUE_SIZE",
        "workers": "GROUNDWIRE_WORKERS",
        "async_concurrency": "GROUNDWIRE_ASYNC_CONCURRENCY",
        "evaluator_timeout_s": "GROUNDWIRE_EVALUATOR_TIMEOUT",
        "executor": "GROUNDWIRE_EXECUTOR",
        "exporter": "GROUNDWIRE_EXPORTER",
        "prometheus_port": "GROUNDWIRE_PROMETHEUS_PORT",
        "prometheus_host": "GROUNDWIRE_PROMETHEUS_HOST",
        "instrument": "GROUNDWIRE_INSTRUMENT",
    }


@pytest.mark.parametrize("value", [0, -1, True, "3", float("inf"), float("nan")])
def test_seconds_must_be_a_positive_finite_number(value: object) -> None:
    """The message names the option and shows the value."""
    with pytest.raises(ValueError, match=r"must be a positive number") as raised:
        seconds("exit_timeout_s", value)
    assert (
        str(raised.value) == f"exit_timeout_s must be a positive number of seconds, got {value!r}"
    )


def test_seconds_are_floats() -> None:
    """A whole number of seconds comes back as a float."""
    assert seconds("x", 2) == 2.0 and isinstance(seconds("x", 2), float)
    assert seconds("x", 1e-9) == 1e-9


def test_a_bad_exit_timeout_from_the_variable_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exit timeout's message names both the option and its variable."""
    monkeypatch.setenv(semconv.ENV_EXIT_TIMEOUT, "-1")
    with pytest.raises(ValueError, match=r"GROUNDWIRE_EXIT_TIMEOUT") as raised:
        _resolve()
    assert str(raised.value) == (
        "exit_timeout_s (GROUNDWIRE_EXIT_TIMEOUT) must be a positive number of seconds, got -1.0"
    )
    with pytest.raises(ValueError, match=r"^shutdown_timeout_s must be"):
        _resolve(shutdown_timeout_s=0)


def test_tuning_defaults_variables_and_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """gc freeze on and the default interval unless asked; asked means explicit."""
    assert read_tuning(None, None) == Tuning(True, DEFAULT_SWITCH_INTERVAL_S, False)
    monkeypatch.setenv(semconv.ENV_GC_FREEZE, "off")
    monkeypatch.setenv(semconv.ENV_SWITCH_INTERVAL, "0.02")
    assert read_tuning(None, None) == Tuning(False, 0.02, True)
    assert read_tuning(True, 0.001) == Tuning(True, 0.001, True)
    monkeypatch.delenv(semconv.ENV_SWITCH_INTERVAL)
    assert read_tuning(None, 0.0) == Tuning(False, 0.0, True)


def test_bad_tuning_names_the_argument_or_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad interval from the variable names the variable; from the argument, the argument."""
    with pytest.raises(TypeError) as raised:
        read_tuning("yes", None)  # type: ignore[arg-type]
    assert str(raised.value) == "gc_freeze must be True or False, got 'yes'"
    with pytest.raises(ValueError, match=r"^switch_interval_s must be 0"):
        read_tuning(None, 5.0)
    monkeypatch.setenv(semconv.ENV_SWITCH_INTERVAL, "5")
    with pytest.raises(ValueError, match=r"^GROUNDWIRE_SWITCH_INTERVAL_S must be 0"):
        read_tuning(None, None)
    with pytest.raises(ValueError, match=r"^switch_interval_s must be 0"):
        read_tuning(None, 7.0)


def test_a_bad_value_from_a_variable_is_named_by_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable and its raw value lead the message, the original error follows."""
    monkeypatch.setenv(semconv.ENV_WORKERS, " 0 ")
    error = ValueError("workers must be at least 1, got 0")
    with pytest.raises(ValueError, match=r"GROUNDWIRE_WORKERS") as raised:
        name_the_variable(error, {"workers": None})
    assert str(raised.value) == "GROUNDWIRE_WORKERS='0': workers must be at least 1, got 0"
    assert raised.value.__cause__ is error


def test_a_key_error_is_read_by_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """KeyError's str() quotes its message; the option is read from the message itself."""
    monkeypatch.setenv(semconv.ENV_EXECUTOR, "gpu")
    with pytest.raises(ValueError, match=r"GROUNDWIRE_EXECUTOR") as raised:
        name_the_variable(KeyError("executor must be threads or process"), {})
    assert str(raised.value) == "GROUNDWIRE_EXECUTOR='gpu': executor must be threads or process"


def test_an_unknown_evaluator_is_named_by_the_evaluators_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The registry's own error does not start with the option's name: its type says it."""
    from groundwire._registry import UnknownEvaluatorError

    monkeypatch.setenv(semconv.ENV_EVALUATORS, "nope")
    error = UnknownEvaluatorError("nope", ["quoted_spans"])
    with pytest.raises(ValueError, match=r"^GROUNDWIRE_EVALUATORS='nope': unknown evaluator"):
        name_the_variable(error, {})


@pytest.mark.parametrize(
    ("message", "given", "variable_value"),
    [
        ("workers must be at least 1", {"workers": 0}, "0"),  # the argument was explicit
        ("workers must be at least 1", {}, None),  # the variable is not set
        ("GROUNDWIRE_WORKERS must be at least 1", {}, "0"),  # already named
        ("something else went wrong", {}, "0"),  # no option named
    ],
)
def test_errors_not_from_a_variable_are_left_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
    message: str,
    given: dict[str, Any],
    variable_value: str | None,
) -> None:
    """The caller re-raises these unchanged."""
    if variable_value is not None:
        monkeypatch.setenv(semconv.ENV_WORKERS, variable_value)
    assert name_the_variable(ValueError(message), given) is None


def test_a_turn_filter_is_imported_from_module_and_attribute_path() -> None:
    """`module:function` and `module:object.method` both resolve."""
    assert import_filter("os.path:join") is os.path.join
    assert import_filter("os:path.join") is os.path.join


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        (
            "os.path.join",
            ValueError,
            "GROUNDWIRE_TURN_FILTER must be 'package.module:function', got 'os.path.join'",
        ),
        (
            ":join",
            ValueError,
            "GROUNDWIRE_TURN_FILTER must be 'package.module:function', got ':join'",
        ),
        (
            "os.path:",
            ValueError,
            "GROUNDWIRE_TURN_FILTER must be 'package.module:function', got 'os.path:'",
        ),
        (
            "no_such_module_x:f",
            ValueError,
            "GROUNDWIRE_TURN_FILTER='no_such_module_x:f' cannot be imported: "
            "No module named 'no_such_module_x'",
        ),
        (
            "os:no_such_attribute",
            ValueError,
            "GROUNDWIRE_TURN_FILTER='os:no_such_attribute' cannot be imported: "
            "module 'os' has no attribute 'no_such_attribute'",
        ),
        ("os:sep", TypeError, "GROUNDWIRE_TURN_FILTER='os:sep' is not callable"),
        (
            "os:path:join",
            ValueError,
            "GROUNDWIRE_TURN_FILTER='os:path:join' cannot be imported: "
            "module 'os' has no attribute 'path:join'",
        ),
    ],
)
def test_a_bad_turn_filter_says_what_is_wrong(
    spec: str, error: type[Exception], message: str
) -> None:
    """Malformed, not importable, or not callable: each with its own message."""
    with pytest.raises(error) as raised:
        import_filter(spec)
    assert str(raised.value) == message


def test_unknown_groundwire_variables_are_reported_in_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A typo would be ignored silently: the warning lists it and every known name."""
    caplog.set_level(logging.WARNING, logger="groundwire")
    check_environment()
    assert not caplog.records
    monkeypatch.setenv("GROUNDWIRE_WORKRES", "2")
    monkeypatch.setenv("GROUNDWIRE_EVALUATOR", "quote_verification")
    monkeypatch.setenv(semconv.ENV_WORKERS, "2")
    check_environment()
    (record,) = caplog.records
    message = record.getMessage()
    assert message.startswith(
        "unknown GROUNDWIRE_* variables ignored: GROUNDWIRE_EVALUATOR, GROUNDWIRE_WORKRES (known: "
    )
    known = message.partition("(known: ")[2].removesuffix(")").split(", ")
    assert (
        "GROUNDWIRE_WORKERS" in known
        and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in known
    )
    assert known == sorted(known) and all(name.isupper() for name in known)  # variables only


def test_check_environment_validates_capture_and_judge_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The integrations' and the judges' variables are checked here, before anything else."""
    monkeypatch.setenv(semconv.ENV_HIDE_INPUTS, "maybe")
    with pytest.raises(ValueError, match="GROUNDWIRE_HIDE_INPUTS"):
        check_environment()
    monkeypatch.delenv(semconv.ENV_HIDE_INPUTS)
    monkeypatch.setenv(semconv.ENV_JUDGE_TIMEOUT, "abc")
    with pytest.raises(ValueError, match="GROUNDWIRE_JUDGE_TIMEOUT"):
        check_environment()


def _config(**options: Any) -> Any:
    """runner_config of the default settings with `options` changed."""
    given = {"evaluators": ["quoted_spans"], **options}
    return runner_config(
        _resolve(
            {k: v for k, v in given.items() if k in VARIABLES},
            **{k: v for k, v in given.items() if k not in VARIABLES},
        )
    )


def test_the_runner_gets_the_scoring_options() -> None:
    """Every scoring option reaches RunnerConfig as resolved; a filter given by name is
    imported; inline names become a set."""
    config = _config(
        evaluators=["quoted_spans", "quote_verification"],
        inline=["quoted_spans"],
        sample_rate=0.5,
        evaluator_sample_rates={"quote_verification": 0.25},
        turn_filter="os.path:join",
        judge_token_budget=10,
        max_queue_size=3,
        workers=4,
        async_concurrency=5,
        evaluator_timeout_s=6.0,
        executor="threads",
    )
    assert [e.name for e in config.evaluators] == ["quoted_spans", "quote_verification"]
    assert config.inline == frozenset({"quoted_spans"}) and config.turn_filter is os.path.join
    assert (config.sample_rate, dict(config.evaluator_sample_rates)) == (
        0.5,
        {"quote_verification": 0.25},
    )
    assert (config.judge_token_budget, config.max_queue_size, config.workers) == (10, 3, 4)
    assert (config.async_concurrency, config.evaluator_timeout_s) == (5, 6.0)
    assert _config(turn_filter=len).turn_filter is len


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prometheus_port": -1}, "prometheus_port must be a port number (0-65535), got -1"),
        ({"prometheus_port": 65536}, "prometheus_port must be a port number (0-65535), got 65536"),
        ({"prometheus_port": True}, "prometheus_port must be a port number (0-65535), got True"),
        (
            {"evaluators": []},
            "configure() would score nothing: no evaluators (pass evaluators=[...] or set "
            "GROUNDWIRE_EVALUATORS); to capture spans only, instrument the integrations directly "
            "(docs/online.md)",
        ),
        (
            {"prometheus_host": " "},
            "prometheus_host (GROUNDWIRE_PROMETHEUS_HOST) must be a host name or address, got ' '",
        ),
        (
            {"prometheus_host": 1},
            "prometheus_host (GROUNDWIRE_PROMETHEUS_HOST) must be a host name or address, got 1",
        ),
        (
            {"phoenix_annotations": "ftp://p"},
            "phoenix_annotations (GROUNDWIRE_PHOENIX_ANNOTATIONS) must be Phoenix's base URL, "
            "http(s)://host:port, got 'ftp://p'",
        ),
        (
            {"output_path": 123},
            "output_path (GROUNDWIRE_OUTPUT_PATH) must be a file path, got 123",
        ),
        (
            {"service_name": 123},
            "service_name (GROUNDWIRE_SERVICE_NAME) must be a non-empty name, got 123",
        ),
        (
            {"service_name": " "},
            "service_name (GROUNDWIRE_SERVICE_NAME) must be a non-empty name, got ' '",
        ),
        (
            {"phoenix_annotations": 6006},
            "phoenix_annotations (GROUNDWIRE_PHOENIX_ANNOTATIONS) must be Phoenix's base URL, "
            "http(s)://host:port, got 6006",
        ),
    ],
)
def test_bad_output_options_are_refused_with_the_whole_message(
    options: dict[str, Any], message: str
) -> None:
    """Where results go: port range, something to score, a host, Phoenix's URL."""
    with pytest.raises(ValueError, match=r"must be|would score") as raised:
        _config(**options)
    assert str(raised.value) == message


def test_the_edges_of_the_output_options_are_taken() -> None:
    """Ports 0 and 65535, any http or https Phoenix URL, a str or Path output, a name."""
    for port in (0, 65535):
        _config(prometheus_port=port)
    for url in ("http://p:6006", "https://p"):
        _config(phoenix_annotations=url)
    for path in ("telemetry.jsonl", Path("telemetry.jsonl")):
        _config(output_path=path)
    _config(service_name="rag-app")


def test_evaluator_options_from_the_variable_build_the_named_evaluators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only evaluators named by name get options; objects and names without options stay."""
    monkeypatch.setenv(semconv.ENV_EVALUATOR_OPTIONS, '{"quote_verification": {"cosine": "off"}}')
    config = _config(evaluators=["quoted_spans", "quote_verification"])
    (built,) = [e for e in config.evaluators if e.name == "quote_verification"]
    assert built.options.cosine == "off"  # type: ignore[attr-defined]
    assert [e.name for e in config.evaluators] == ["quoted_spans", "quote_verification"]


def test_evaluator_options_for_an_evaluator_not_named_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The message names the variable, the unknown names and the names given."""
    monkeypatch.setenv(semconv.ENV_EVALUATOR_OPTIONS, '{"erag": {}, "zeta": {}}')
    with pytest.raises(ValueError, match=r"GROUNDWIRE_EVALUATOR_OPTIONS") as raised:
        _config(evaluators=["quoted_spans"])
    assert str(raised.value) == (
        "GROUNDWIRE_EVALUATOR_OPTIONS gives options for ['erag', 'zeta'], which are not among "
        "the evaluators named ['quoted_spans']"
    )


def test_a_bad_evaluator_option_names_the_variable_and_the_evaluator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The factory's own complaint follows the variable and the evaluator's name."""
    monkeypatch.setenv(semconv.ENV_EVALUATOR_OPTIONS, '{"quote_verification": {"nope": 1}}')
    with pytest.raises(ValueError, match=r"^GROUNDWIRE_EVALUATOR_OPTIONS: quote_verification: "):
        _config(evaluators=["quote_verification"])


def test_inline_evaluators_run_in_the_background_on_an_sdk_without_the_hook(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An SDK older than 1.36 (simulated by removing the hook from the SDK's class) has no
    `_on_ending`: the inline evaluators are run in the background, with one warning."""
    from opentelemetry.sdk.trace import SpanProcessor, SynchronousMultiSpanProcessor

    for sdk_class in (SynchronousMultiSpanProcessor, SpanProcessor):
        monkeypatch.delattr(sdk_class, "_on_ending")
    caplog.set_level(logging.WARNING, logger="groundwire")
    config = _config(inline=["quoted_spans"])
    assert config.inline == frozenset()
    (record,) = caplog.records
    assert record.getMessage() == (
        "this opentelemetry-sdk has no SpanProcessor._on_ending hook (added in 1.36); "
        "running the inline evaluators ['quoted_spans'] in the background instead"
    )
