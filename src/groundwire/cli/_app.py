"""The Typer application every command module registers on."""

from __future__ import annotations

import typer
from rich.console import Console

from groundwire._version import __version__

app = typer.Typer(
    name="groundwire",
    help="Score RAG quality (quotes, groundedness, citations, retrieval) and emit it as telemetry.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)
console = Console()
"""Standard output for results."""
err_console = Console(stderr=True)
"""Standard error for notices and problems."""


def _version(value: bool) -> None:
    if value:
        console.print(f"groundwire {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Score RAG quality and emit it as OpenTelemetry telemetry."""
