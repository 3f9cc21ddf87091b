"""One-line errors for the command line: a user's mistake exits 2, a bug exits 1, never a traceback.

Every command is wrapped in `guarded`: `CliError` prints its message and exits with its code,
Ctrl-C exits 130 (INTERRUPTED), and any other exception (EOFError included, which Click would
otherwise turn into a bare "Aborted!") prints one line naming it and exits 1 (INTERNAL_ERROR).
"""

from __future__ import annotations

import difflib
import functools
import logging
from collections.abc import Callable, Sequence
from typing import NoReturn, ParamSpec, TypeVar

import click
import typer

from groundwire.cli._console import err_console, print_error
from groundwire.cli._exit import ExitCode

__all__ = ["CliError", "bad_argument", "fail", "guarded", "nearest", "print_error"]

logger = logging.getLogger("groundwire.cli")

P = ParamSpec("P")
R = TypeVar("R")


class CliError(Exception):
    """A problem to report in one line and exit with `code`."""

    def __init__(self, message: str, code: ExitCode = ExitCode.BAD_ARGUMENTS) -> None:
        super().__init__(message)
        self.code = code


def bad_argument(message: str) -> NoReturn:
    """Stop with `message` and exit code BAD_ARGUMENTS (2)."""
    raise CliError(message, ExitCode.BAD_ARGUMENTS)


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print `error: message` and exit with `code` (for commands that run without `guarded`)."""
    print_error(message)
    raise typer.Exit(int(code)) from None


def nearest(word: str, choices: Sequence[str]) -> str:
    """' (did you mean X?)' for the closest choice, or '' when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Wrap a command so that no exception reaches the user as a traceback or "Aborted!"."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.TyperException, click.exceptions.Exit, click.ClickException):
            raise  # Click's own (Typer ships a copy of Click: both kinds)
        except CliError as error:
            fail(str(error), error.code)
        except KeyboardInterrupt:
            err_console.print(
                "interrupted: what was finished is written (rescore: --resume continues)",
                highlight=False,
            )
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except Exception as error:
            logger.debug("internal error", exc_info=True)
            print_error(
                f"internal error (a bug in groundwire; please report it): "
                f"{type(error).__name__}: {error}"
            )
            raise typer.Exit(int(ExitCode.INTERNAL_ERROR)) from None

    return run
