"""The Typer application every command module registers on, and how it reports usage errors."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from groundwire._version import __version__
from groundwire.cli._console import console, err_console, fit_to_streams, print_error
from groundwire.cli._hints import install_hints

__all__ = ["app", "console", "err_console"]


class _OneLineErrors(TyperGroup):
    """Reports a usage error (a bad option value, a missing argument) as one line, exit 2.

    Typer draws such errors in a boxed panel under the usage text, while the commands' own
    checks print one `error:` line: the same kind of mistake looked different depending on which
    layer caught it (`demo -n 0` against `demo -n 13`). Here every one is a single line.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line; a Click usage error becomes `error: ...` and its exit code."""
        fit_to_streams()
        install_hints()
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            result = super().main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )
        except typer.TyperException as error:  # Click's exceptions, as Typer ships them
            if type(error).__name__ != "NoArgsIsHelpError":  # that one has printed the help
                ctx = getattr(error, "ctx", None)
                where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
                print_error(f"{error.format_message()}{where}")
            sys.exit(error.exit_code)
        except typer.Abort:
            err_console.print("aborted", highlight=False)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


app = typer.Typer(
    name="groundwire",
    cls=_OneLineErrors,
    help="Score RAG quality (quotes, groundedness, citations, retrieval) and emit it as telemetry.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


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
