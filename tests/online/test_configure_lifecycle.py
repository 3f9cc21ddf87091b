"""`configure()`'s lifecycle (`groundwire/_configure.py`): one configuration at a time, what
`shutdown` / `force_flush` answer with and without one, the exit hook, the interpreter tuning,
and a configuration from the environment giving way to the app's own.

The app's real SDK providers (in-memory readers), cheap evaluators, no instrumentation.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Any

import pytest

import groundwire
from groundwire import RagTurn, Score
from groundwire._configure import (
    DEFAULT_EXIT_TIMEOUT_S,
    _shutdown_at_exit,
    configure_from_environment,
    get_online,
)

from .conftest import Telemetry, record_turn

pytestmark = pytest.mark.usefixtures("online_cleanup")


class _One:
    """A cheap sync evaluator."""

    name = "one"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score 1."""
        return Score(name=self.name, value=1.0)


class _Held:
    """An evaluator that waits until released: work still queued at a deadline."""

    name = "held"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()

    def evaluate(self, turn: RagTurn) -> Score:
        """Wait for the release, then score 1."""
        self.started.set()
        self.release.wait(10)
        return Score(name=self.name, value=1.0)


def _options(telemetry: Telemetry, **extra: Any) -> dict[str, Any]:
    """configure() on the test's providers, without instrumentation or tuning."""
    return {
        "evaluators": [_One()],
        "instrument": False,
        "tracer_provider": telemetry.tracer_provider,
        "meter_provider": telemetry.meter_provider,
        "gc_freeze": False,
        "switch_interval_s": 0,
        **extra,
    }


def test_one_configuration_at_a_time(telemetry: Telemetry) -> None:
    """A second configure() is refused until shutdown(); the handle is what get_online gives."""
    online = groundwire.configure(**_options(telemetry))
    assert get_online() is online
    with pytest.raises(
        RuntimeError,
        match=r"^groundwire is already configured; call groundwire\.shutdown\(\) first$",
    ):
        groundwire.configure(**_options(telemetry))
    assert groundwire.shutdown(5.0) is True
    assert get_online() is None
    again = groundwire.configure(**_options(telemetry))
    assert get_online() is again and again is not online


def test_without_a_configuration_shutdown_and_flush_are_true() -> None:
    """Nothing configured: shutdown and force_flush do nothing and answer True."""
    assert get_online() is None
    assert groundwire.shutdown(1.0) is True
    assert groundwire.force_flush(1.0) is True
    assert groundwire.force_flush() is True


def test_shutdown_checks_its_timeout_before_anything(telemetry: Telemetry) -> None:
    """A bad timeout is a ValueError naming it, and the configuration is left running."""
    online = groundwire.configure(**_options(telemetry))
    with pytest.raises(ValueError, match=r"^timeout_s must be a positive number of seconds"):
        groundwire.shutdown(0)
    assert get_online() is online


def test_a_bad_option_installs_nothing(telemetry: Telemetry) -> None:
    """A bad argument raises naming it, and nothing is configured afterwards."""
    with pytest.raises(ValueError, match="max_queue_size"):
        groundwire.configure(**_options(telemetry, max_queue_size=-1))
    assert get_online() is None


def test_flush_and_shutdown_answer_false_when_their_deadline_cuts_work(
    telemetry: Telemetry,
) -> None:
    """A turn still being scored at the deadline: force_flush and shutdown answer False (their
    timeouts reach the handle)."""
    held = _Held()
    groundwire.configure(**_options(telemetry, evaluators=[held]))
    record_turn(telemetry.tracer)
    assert held.started.wait(5)
    try:
        assert groundwire.force_flush(0.2) is False
        assert groundwire.shutdown(0.2) is False
    finally:
        held.release.set()
    assert get_online() is None


def test_flush_answers_true_when_everything_was_scored(telemetry: Telemetry) -> None:
    """force_flush with the work done in time answers the handle's True."""
    groundwire.configure(**_options(telemetry))
    record_turn(telemetry.tracer)
    assert groundwire.force_flush(5.0) is True
    assert telemetry.counts()[("one", "ok")] == 1


def test_the_exit_hook_shuts_down_within_the_exit_deadline(telemetry: Telemetry) -> None:
    """The exit hook shuts the configuration down with its exit deadline; with none it is a
    no-op."""
    online = groundwire.configure(**_options(telemetry, exit_timeout_s=1.5))
    assert online.exit_timeout_s == 1.5
    _shutdown_at_exit()
    assert get_online() is None
    _shutdown_at_exit()
    assert DEFAULT_EXIT_TIMEOUT_S > 0


def test_gc_freeze_is_applied_and_undone(telemetry: Telemetry) -> None:
    """gc_freeze=True freezes what startup made; shutdown unfreezes it; False leaves gc alone."""
    gc.unfreeze()
    online = groundwire.configure(**_options(telemetry, gc_freeze=True))
    assert online._froze_gc is True and gc.get_freeze_count() > 0
    groundwire.shutdown(5.0)
    assert gc.get_freeze_count() == 0
    plain = groundwire.configure(**_options(telemetry, gc_freeze=False))
    assert plain._froze_gc is False and gc.get_freeze_count() == 0


def test_the_switch_interval_is_set_on_the_handle(telemetry: Telemetry) -> None:
    """The thread switch interval is applied and kept on the handle, to be undone."""
    online = groundwire.configure(**_options(telemetry, switch_interval_s=0.002))
    assert online._switch is not None


def test_a_configuration_from_the_environment_gives_way_to_the_apps(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """The zero-code configuration is shut down and replaced by the app's configure(), with
    one info line; the options given to it are used."""
    first = configure_from_environment(**_options(telemetry, exit_timeout_s=2.5))
    assert get_online() is first and first.exit_timeout_s == 2.5
    with caplog.at_level(logging.INFO, logger="groundwire"):
        second = groundwire.configure(**_options(telemetry))
    assert get_online() is second and second is not first
    lines = [r.getMessage() for r in caplog.records if "replaces" in r.getMessage()]
    assert lines == ["groundwire: configure() replaces the configuration made from the environment"]
    assert first.shutdown(1.0) is True  # already shut: a second shutdown is a no-op


def test_a_configuration_from_the_environment_already_shut_is_not_shut_again(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """After the zero-code configuration was shut down, configure() just starts; no line."""
    configure_from_environment(**_options(telemetry))
    groundwire.shutdown(5.0)
    with caplog.at_level(logging.INFO, logger="groundwire"):
        groundwire.configure(**_options(telemetry))
    assert not [r for r in caplog.records if "replaces" in r.getMessage()]
    groundwire.shutdown(5.0)
    with caplog.at_level(logging.INFO, logger="groundwire"):
        groundwire.configure(**_options(telemetry))
    assert not [r for r in caplog.records if "replaces" in r.getMessage()]


def test_a_bad_variable_is_named_in_the_error(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bad value from a GROUNDWIRE_* variable: the error names the variable and its value."""
    monkeypatch.setenv("GROUNDWIRE_MAX_QUEUE_SIZE", "-1")
    with pytest.raises(ValueError, match=r"^GROUNDWIRE_MAX_QUEUE_SIZE='-1': max_queue_size"):
        groundwire.configure(**_options(telemetry))
    assert get_online() is None


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("events", "bogus", ValueError),
        ("logger_provider", "not a provider", TypeError),
    ],
)
def test_each_option_reaches_the_settings(
    telemetry: Telemetry, option: str, value: object, error: type[Exception]
) -> None:
    """A bad value of these options is refused (so it was passed on, not dropped)."""
    with pytest.raises(error, match=option):
        groundwire.configure(**_options(telemetry, **{option: value}))
    assert get_online() is None


def test_service_name_and_output_path_shape_groundwires_logger_provider(
    telemetry: Telemetry, tmp_path: Any
) -> None:
    """With no logger provider of the app's, groundwire's own carries the service name and
    writes the result records to the output path."""
    out = tmp_path / "results.jsonl"
    online = groundwire.configure(
        **_options(telemetry, service_name="svc-x", output_path=out, events="logs")
    )
    assert online.logger_provider is not None
    assert online.logger_provider.resource.attributes["service.name"] == "svc-x"
    record_turn(telemetry.tracer)
    assert groundwire.shutdown(5.0) is True
    assert "resourceLogs" in out.read_text(encoding="utf-8")


def test_the_exit_hook_keeps_the_exit_deadline(telemetry: Telemetry) -> None:
    """Work still running at exit: the hook gives up after `exit_timeout_s`, not the default."""
    held = _Held()
    groundwire.configure(**_options(telemetry, evaluators=[held], exit_timeout_s=0.3))
    record_turn(telemetry.tracer)
    assert held.started.wait(5)
    started = time.monotonic()
    try:
        _shutdown_at_exit()
    finally:
        held.release.set()
    assert time.monotonic() - started < DEFAULT_EXIT_TIMEOUT_S - 1.0
    assert get_online() is None
