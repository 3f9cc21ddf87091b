"""The `groundwire` command line. Each command lives in its own module and registers on `app`."""

from __future__ import annotations

from groundwire.cli import (
    _calibrate,
    _demo,
    _evaluators,
    _inspect,
    _rescore,
    _serve,
    _verify_quotes,
)
from groundwire.cli._app import app

__all__ = ["app", "main"]

_COMMAND_MODULES = (_calibrate, _demo, _evaluators, _inspect, _rescore, _serve, _verify_quotes)
"""Imported for their side effect of registering commands on `app`."""


def main() -> None:
    """Console-script entry point."""
    app()
