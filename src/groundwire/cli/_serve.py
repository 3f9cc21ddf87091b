"""`groundwire serve`: run the OTLP evaluation gateway until SIGTERM or Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from groundwire.cli._app import app
from groundwire.cli._console import print_error
from groundwire.cli._exit import ExitCode, help_epilog

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
    from groundwire.gateway import ConfigError, Gateway, load_config

    names = None
    if evaluators:
        names = [n.strip() for value in evaluators for n in value.split(",") if n.strip()]
    flags: dict[str, Any] = {
        "forward": forward,
        "listen": listen,
        "grpc_listen": grpc_listen,
        "queue_dir": queue_dir,
        "evaluators": names,
        "tls_cert_file": tls_cert_file,
        "tls_key_file": tls_key_file,
        "tls_client_ca_file": tls_client_ca_file,
        "max_request_bytes": max_request_bytes,
        "quiet_period_s": quiet_period_s,
        "max_wait_s": max_wait_s,
        "sample_rate": sample_rate,
    }
    try:
        resolved = load_config(path=config, flags=flags, flag_names=_FLAG_NAMES)
    except ConfigError as error:
        print_error(str(error))
        raise typer.Exit(ExitCode.BAD_ARGUMENTS) from None
    if print_config:
        typer.echo(json.dumps(resolved.redacted(), indent=2, default=str))
        raise typer.Exit(ExitCode.OK)
    _setup_logging(log_level.value)
    try:
        gateway = Gateway(resolved)
    except OSError as error:  # the listen address is in use or not ours: before anything starts
        print_error(f"cannot listen: {error.strerror or error}")
        raise typer.Exit(ExitCode.BAD_ARGUMENTS) from None
    except (ValueError, TypeError, ImportError) as error:
        print_error(str(error))
        raise typer.Exit(ExitCode.BAD_ARGUMENTS) from None
    try:
        report = asyncio.run(gateway.run())
    except OSError as error:
        print_error(f"cannot listen: {error}")
        raise typer.Exit(ExitCode.BAD_ARGUMENTS) from None
    except Exception as error:
        logging.getLogger("groundwire.gateway").debug("internal error", exc_info=True)
        print_error(
            f"internal error (a bug in groundwire; please report it): {type(error).__name__}: "
            f"{error}"
        )
        raise typer.Exit(ExitCode.INTERNAL_ERROR) from None
    raise typer.Exit(ExitCode.OK if report.clean else ExitCode.INTERRUPTED)
