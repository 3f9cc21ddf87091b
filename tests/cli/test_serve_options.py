"""`groundwire serve` up to the start of the gateway: flags into the configuration
(`--print-config`), the log set-up, and what cannot start exits 2 in one line."""

from __future__ import annotations

import http.client
import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._serve import LogLevel, _setup_logging

FORWARD = "http://127.0.0.1:9"


def _serve(*args: str) -> Any:
    return CliRunner().invoke(app, ["serve", "--forward", FORWARD, *args])


def _config(*args: str) -> dict[str, Any]:
    result = _serve(*args, "--print-config")
    assert result.exit_code == 0, result.output
    config: dict[str, Any] = json.loads(result.stdout)
    return config


def test_print_config_shows_the_defaults() -> None:
    """Without flags: loopback HTTP, no gRPC, no evaluators, every key shown."""
    config = _config()
    assert config["forward"] == FORWARD
    assert (config["listen"], config["grpc_listen"], config["evaluators"]) == (
        "127.0.0.1:4318",
        None,
        [],
    )
    assert "log_level" not in config
    assert "print_config" not in config


def test_every_flag_reaches_the_configuration(tmp_path: Path) -> None:
    """Each flag sets its key; evaluators split on commas and repeat."""
    pems = {}
    for name in ("cert", "key", "ca"):
        pems[name] = tmp_path / f"{name}.pem"
        pems[name].write_text("")
    config = _config(
        "--listen", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "-e", "quoted_spans,erag",
        "--evaluators", "quote_verification", "--queue-dir", str(tmp_path / "q"),
        "--tls-cert", str(pems["cert"]), "--tls-key", str(pems["key"]),
        "--tls-client-ca", str(pems["ca"]), "--max-request-bytes", "100",
        "--quiet-period", "1.5", "--max-wait", "3", "--sample-rate", "0.5",
    )  # fmt: skip
    expected = {
        "listen": "127.0.0.1:0",
        "grpc_listen": "127.0.0.1:0",
        "evaluators": ["quoted_spans", "erag", "quote_verification"],
        "queue_dir": str(tmp_path / "q"),
        "tls_cert_file": str(pems["cert"]),
        "tls_key_file": str(pems["key"]),
        "tls_client_ca_file": str(pems["ca"]),
        "max_request_bytes": 100,
        "quiet_period_s": 1.5,
        "max_wait_s": 3.0,
        "sample_rate": 0.5,
    }
    assert {key: config[key] for key in expected} == expected


def test_a_config_file_gives_what_the_flags_do_not(tmp_path: Path) -> None:
    """`--config FILE`: its keys under the flags'."""
    path = tmp_path / "gateway.yaml"
    path.write_text("forward: http://127.0.0.1:1\nsample_rate: 0.25\nmax_wait_s: 7\n")
    result = CliRunner().invoke(
        app, ["serve", "-c", str(path), "--max-wait", "2", "--print-config"]
    )
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)
    assert (config["forward"], config["sample_rate"], config["max_wait_s"]) == (
        "http://127.0.0.1:1",
        0.25,
        2.0,
    )


def test_bad_values_are_one_line_and_exit_2() -> None:
    """A value the configuration refuses, or no downstream: `error: ...`, exit 2."""
    result = _serve("--sample-rate", "2", "--print-config")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: sample_rate: must be in [0, 1], got 2.0\n",
    )
    result = CliRunner().invoke(app, ["serve", "--print-config"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: forward: the downstream endpoint is required")


def test_a_flag_is_named_as_typed_in_errors() -> None:
    """An error about a flag's value names the flag as the user typed it."""
    result = _serve("-e", "quoted_spans", "--grpc", "nonsense", "--print-config")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: grpc_listen: expected host:port")


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something already listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_listen_address_in_use_cannot_start(busy_port: int) -> None:
    """HTTP or gRPC on a port in use, or an address not ours: `cannot listen`, exit 2."""
    for args in (
        ["--listen", f"127.0.0.1:{busy_port}"],
        ["--listen", "127.0.0.1:0", "--grpc", f"127.0.0.1:{busy_port}"],
    ):
        result = _serve(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"error: cannot listen: 127.0.0.1:{busy_port}: Address already in use\n"
        )


def test_an_unknown_evaluator_is_a_bad_argument() -> None:
    """`-e nope`: one line naming it and the known ones, exit 2, no traceback."""
    result = _serve("-e", "nope", "--listen", "127.0.0.1:0")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: unknown evaluator 'nope'; known evaluators: ")
    assert result.stderr.count("\n") == 1


def test_print_config_refuses_an_unknown_evaluator() -> None:
    """`--print-config -e nope`: the same line and exit 2 as a start of `serve`, nothing printed
    on stdout (it printed the configuration and exited 0); known names still print."""
    result = _serve("-e", "quoted_spans,nope", "--print-config")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: unknown evaluator 'nope'; known evaluators: ")
    assert "quoted_spans" in result.stderr and result.stderr.count("\n") == 1
    assert _config("-e", "quoted_spans")["evaluators"] == ["quoted_spans"]


def test_an_evaluator_that_cannot_be_built_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in evaluator whose constructor raises something unforeseen (a bug, not bad
    arguments) ends `serve` like every command: one `internal error` line and exit 1, never a
    bare "aborted" (what `serve` printed before it was wrapped in `guarded`)."""
    from groundwire import RagTurn, Score, _registry, register_evaluator

    class Broken:
        name = "broken_at_build"

        def __init__(self, **options: Any) -> None:
            raise EOFError("stream ended")

        def evaluate(self, turn: RagTurn) -> Score:
            raise AssertionError("never called: the evaluator is never built")

    monkeypatch.setattr(_registry, "_registered", dict(_registry._registered))  # put back after
    register_evaluator("broken_at_build", Broken)
    result = _serve(
        "--listen", "127.0.0.1:0", "--queue-dir", str(tmp_path), "-e", "broken_at_build"
    )
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        "error: internal error (a bug in groundwire; please report it): EOFError: stream ended\n"
    )


@pytest.fixture(autouse=True)
def gateway_logger() -> Iterator[logging.Logger]:
    """The `groundwire` logger, put back as it was after each test: `serve` points it at the
    stderr of the moment (CliRunner's, closed afterwards), which later tests would log into."""
    logger = logging.getLogger("groundwire")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    yield logger
    logger.handlers[:], logger.level, logger.propagate = saved[0], saved[1], saved[2]


def test_logging_is_one_line_records_on_stderr(gateway_logger: logging.Logger) -> None:
    """One stderr handler with time, level, name and message, at the level asked, not passed up."""
    _setup_logging("warning")
    (handler,) = gateway_logger.handlers
    assert isinstance(handler, logging.StreamHandler)
    assert handler.stream is sys.stderr
    assert handler.formatter is not None
    assert handler.formatter._fmt == "%(asctime)s %(levelname)s %(name)s: %(message)s"
    assert gateway_logger.level == logging.WARNING
    assert gateway_logger.propagate is False
    _setup_logging("debug")
    assert len(gateway_logger.handlers) == 1
    assert gateway_logger.level == logging.DEBUG


def test_log_levels_are_checked_while_parsing() -> None:
    """The four levels, any case; another is refused even with --print-config."""
    assert [level.value for level in LogLevel] == ["debug", "info", "warning", "error"]
    assert _serve("--log-level", "ERROR", "--print-config").exit_code == 0
    result = _serve("--log-level", "verbose", "--print-config")
    assert result.exit_code == 2
    assert "'verbose' is not one of" in result.stderr


def test_a_bad_flag_value_is_named_by_the_flag_typed() -> None:
    """A blank `--grpc` is refused naming `--grpc` (the flag), not the config key's spelling."""
    result = _serve("--grpc", "  ", "--print-config")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: --grpc: expected a non-empty string, got '  '\n",
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _terminate_once_serving(port: int) -> None:
    """Send this process SIGTERM once the gateway answers HTTP (its handlers are installed by
    then: it installs them before it starts serving)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/")
            connection.getresponse().read()
            connection.close()
            break
        except OSError:
            time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)


def test_sigterm_ends_a_clean_run_with_exit_0() -> None:
    """The gateway runs in this process until SIGTERM; with nothing cut, it exits 0."""
    port = _free_port()
    threading.Thread(target=_terminate_once_serving, args=(port,), daemon=True).start()
    result = _serve("--listen", f"127.0.0.1:{port}", "--log-level", "error")
    assert result.exit_code == 0, result.output
    assert "error:" not in result.stderr


def test_unusable_tls_files_cannot_start(tmp_path: Path) -> None:
    """A certificate and key that are not PEM: `cannot listen` with the TLS reason, exit 2."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("")
    key.write_text("")
    result = _serve("--listen", "127.0.0.1:0", "--tls-cert", str(cert), "--tls-key", str(key))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: cannot listen: [SSL] PEM lib")
    assert result.stderr.count("\n") == 1
