"""`groundwire serve`: run the OTLP evaluation gateway until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from groundwire.cli._app import app
from groundwire.cli._errors import fail, guarded
from groundwire.cli._exit import ExitCode, help_epilog
from groundwire.cli._rescore_args import evaluator_names

if TYPE_CHECKING:
    from groundwire.gateway import GatewayConfig, ShutdownReport

_FLAG_NAMES = {"grpc_listen": "--grpc", "evaluators": "--evaluators"}


class LogLevel(StrEnum):
    """The `--log-level` values: checked while the arguments are parsed, so `--print-config`
    refuses a bad one too (exit 2, one line) instead of the logging module raising later."""

    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


def _setup_logging(level: str) -> None:
    """One-line records on stderr; never request bodies (the gateway does not log them)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("groundwire")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


@app.command("serve", epilog=help_epilog("serve"))
@guarded
def serve_command(
    forward: Annotated[
        str | None,
        typer.Option(
            "--forward",
            help="Downstream OTLP endpoint: http(s)://host:4318 (OTLP/HTTP) or grpc://host:4317.",
        ),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option("--listen", help="OTLP/HTTP address (default 127.0.0.1:4318)."),
    ] = None,
    grpc_listen: Annotated[
        str | None, typer.Option("--grpc", help="OTLP/gRPC address (off unless given).")
    ] = None,
    evaluators: Annotated[
        list[str] | None,
        typer.Option(
            "--evaluators", "-e", help="Evaluator names, comma-separated or repeated; none: off."
        ),
    ] = None,
    queue_dir: Annotated[
        str | None,
        typer.Option(
            "--queue-dir",
            help="Persistent forward queue in this directory: accepted requests survive a crash.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML config file (every option; see docs)."),
    ] = None,
    tls_cert_file: Annotated[
        str | None, typer.Option("--tls-cert", help="Server certificate (PEM): enables TLS.")
    ] = None,
    tls_key_file: Annotated[str | None, typer.Option("--tls-key", help="Server key (PEM).")] = None,
    tls_client_ca_file: Annotated[
        str | None, typer.Option("--tls-client-ca", help="Require client certs from this CA.")
    ] = None,
    max_request_bytes: Annotated[
        int | None, typer.Option("--max-request-bytes", help="Largest request body (413 above).")
    ] = None,
    quiet_period_s: Annotated[
        float | None, typer.Option("--quiet-period", help="Seconds without spans before scoring.")
    ] = None,
    max_wait_s: Annotated[
        float | None, typer.Option("--max-wait", help="Longest wait for a trace, in seconds.")
    ] = None,
    sample_rate: Annotated[
        float | None, typer.Option("--sample-rate", help="Share of traces scored (0-1).")
    ] = None,
    print_config: Annotated[
        bool, typer.Option("--print-config", help="Print the resolved options and exit.")
    ] = False,
    log_level: Annotated[
        LogLevel,
        typer.Option("--log-level", case_sensitive=False, help="Gateway log records shown."),
    ] = LogLevel.INFO,
) -> None:
    """Receive OTLP from any app, forward it unchanged, and add evaluation results.

    Options also come from the config file and GROUNDWIRE_GATEWAY_<KEY> variables (the auth
    token only from those, never a flag). SIGTERM forwards and scores what is held, then exits.
    """
    flags: dict[str, Any] = dict(locals())  # every parameter, by name: nothing else is local yet
    for name in ("config", "print_config", "log_level"):
        del flags[name]
    flags["evaluators"] = evaluator_names(evaluators) if evaluators else None
    resolved = _resolve(config, flags)
    if print_config:
        _check_evaluators(resolved)
        typer.echo(json.dumps(resolved.redacted(), indent=2, default=str))
        raise typer.Exit(ExitCode.OK)
    _setup_logging(log_level.value)
    report = _run(resolved)
    raise typer.Exit(ExitCode.OK if report.clean else ExitCode.INTERRUPTED)


def _resolve(config: Path | None, flags: dict[str, Any]) -> GatewayConfig:
    """The gateway's options from the flags, the config file and the variables (exit 2 with the
    problem in one line when they do not make a configuration)."""
    from groundwire.gateway import ConfigError, load_config

    try:
        return load_config(path=config, flags=flags, flag_names=_FLAG_NAMES)
    except ConfigError as error:
        fail(str(error), ExitCode.BAD_ARGUMENTS)


def _check_evaluators(resolved: GatewayConfig) -> None:
    """Refuse an evaluator name nobody registered, as a start of `serve` does (exit 2, the same
    line), so `--print-config` never shows a configuration that cannot run. No evaluator is
    built here: one may need a model or a key that only the running gateway is given."""
    from groundwire import UnknownEvaluatorError, available_evaluators

    known = available_evaluators()
    for name in resolved.evaluators:
        if name not in known:
            fail(str(UnknownEvaluatorError(name, known)), ExitCode.BAD_ARGUMENTS)


def _run(resolved: GatewayConfig) -> ShutdownReport:
    """Start the gateway and run it until a signal; what cannot start exits 2 (one line). A bug
    is `guarded`'s, as in every command: exit 1, one line, the traceback only at
    `--log-level debug` (its logger is under `groundwire`, which `--log-level` sets)."""
    from groundwire import UnknownEvaluatorError
    from groundwire.gateway import Gateway

    try:
        gateway = Gateway(resolved)
    except OSError as error:  # the listen address is in use or not ours: before anything starts
        fail(f"cannot listen: {error.strerror or error}", ExitCode.BAD_ARGUMENTS)
    except (ValueError, TypeError, ImportError, UnknownEvaluatorError) as error:
        fail(str(error), ExitCode.BAD_ARGUMENTS)  # UnknownEvaluatorError is a KeyError
    try:
        return asyncio.run(gateway.run())
    except OSError as error:
        fail(f"cannot listen: {error}", ExitCode.BAD_ARGUMENTS)
