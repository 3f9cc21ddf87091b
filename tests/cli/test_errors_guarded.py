"""`guarded` and the one-line errors: what each kind of exception becomes (message, exit code)."""

from __future__ import annotations

import logging

import click
import pytest
import typer
from typer.testing import CliRunner

from groundwire.cli._errors import CliError, bad_argument, fail, guarded, nearest
from groundwire.cli._exit import ExitCode


def _run(raised: BaseException | None, *, exit_code: int | None = None) -> click.testing.Result:
    """Run a one-command app whose guarded command raises `raised` (or exits `exit_code`)."""
    app = typer.Typer()

    @app.command()
    @guarded
    def command() -> None:
        """Raise what the test asks for."""
        if raised is not None:
            raise raised
        if exit_code is not None:
            raise typer.Exit(exit_code)
        typer.echo("ran")

    return CliRunner().invoke(app, [])


def test_a_cli_error_is_one_line_with_its_code() -> None:
    """`CliError(message, code)`: `error: message` on stderr and that exit code."""
    result = _run(CliError("no such [file]", ExitCode.NOTHING_READABLE))
    assert result.exit_code == ExitCode.NOTHING_READABLE
    assert result.stderr == "error: no such [file]\n"
    assert result.stdout == ""


def test_a_cli_error_defaults_to_bad_arguments() -> None:
    """Without a code a `CliError` is a bad argument (2)."""
    assert CliError("x").code is ExitCode.BAD_ARGUMENTS
    assert str(CliError("x")) == "x"
    assert _run(CliError("wrong")).exit_code == 2


def test_bad_argument_raises_a_cli_error_with_exit_2() -> None:
    """`bad_argument` raises the error `guarded` turns into exit 2."""
    with pytest.raises(CliError) as caught:
        bad_argument("--x: wrong")
    assert (str(caught.value), caught.value.code) == ("--x: wrong", ExitCode.BAD_ARGUMENTS)
    result = _run(None)
    assert (result.exit_code, result.stdout) == (0, "ran\n")


def test_fail_prints_and_exits_with_the_code() -> None:
    """`fail` prints `error: message` and raises typer's Exit with the code, no context."""
    app = typer.Typer()

    @app.command()
    def command() -> None:
        """Fail at once."""
        fail("cannot listen", ExitCode.INTERRUPTED)

    result = CliRunner().invoke(app, [])
    assert (result.exit_code, result.stderr) == (130, "error: cannot listen\n")
    with pytest.raises(typer.Exit) as caught:
        fail("x", ExitCode.EXPORT_FAILED)
    assert caught.value.exit_code == 7
    assert caught.value.__suppress_context__


def test_exits_of_click_and_typer_pass_through() -> None:
    """A command's own `typer.Exit` and Click's exceptions (both copies) are left to Click."""
    assert _run(None, exit_code=5).exit_code == 5
    result = _run(typer.BadParameter("bad value"))
    assert result.exit_code == 2
    assert "bad value" in result.stderr
    assert "internal error" not in result.stderr
    for raised in (click.UsageError("bad usage"), click.exceptions.Exit(4)):
        result = _run(raised)  # plain Click's: re-raised as they are, never an internal error
        assert result.exception is raised
        assert "internal error" not in result.stderr


def test_ctrl_c_exits_130_with_a_line() -> None:
    """KeyboardInterrupt: a line saying what is written, exit 130, no traceback."""
    result = _run(KeyboardInterrupt())
    assert result.exit_code == 130
    assert (
        result.stderr == "interrupted: what was finished is written (rescore: --resume continues)\n"
    )


def test_any_other_exception_is_an_internal_error_line(caplog: pytest.LogCaptureFixture) -> None:
    """A bug: one line naming the exception, exit 1; the traceback only in the debug log."""
    with caplog.at_level(logging.DEBUG, logger="groundwire.cli"):
        result = _run(EOFError("stdin closed"))
    assert result.exit_code == 1
    assert result.stderr == (
        "error: internal error (a bug in groundwire; please report it): EOFError: stdin closed\n"
    )
    (record,) = [r for r in caplog.records if r.name == "groundwire.cli"]
    assert (record.levelno, record.getMessage()) == (logging.DEBUG, "internal error")
    assert record.exc_info is not None
    assert record.exc_info[0] is EOFError


def test_guarded_keeps_the_commands_name_and_result() -> None:
    """The wrapper is the command to Typer (name, docstring) and returns what it returns."""

    def command(value: int) -> int:
        """Double it."""
        return value * 2

    wrapped = guarded(command)
    assert (wrapped.__name__, wrapped.__doc__) == ("command", "Double it.")
    assert wrapped(4) == 8
    assert guarded(lambda *, value: value)(value=3) == 3


def test_nearest_names_the_closest_choice_or_nothing() -> None:
    """The closest choice above a similarity of 0.5; nothing when none is that close."""
    choices = ["quoted_spans", "quote_verification", "groundedness"]
    assert nearest("quoted_span", choices) == " (did you mean 'quoted_spans'?)"
    assert nearest("groundednes", choices) == " (did you mean 'groundedness'?)"
    assert nearest("zzz", choices) == ""
    assert nearest("abcd", ("abxy",)) == " (did you mean 'abxy'?)"  # ratio exactly 0.5
    assert nearest("abcd", ("axyz",)) == ""  # ratio 0.25
