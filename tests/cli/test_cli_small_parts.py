"""The command line's small parts: the no-judge wording, the phoenix:// switch, the app's
one-line usage errors and `--version`."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from groundwire import __version__
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.cli._hints import CLI_NOT_CONFIGURED, install_hints
from groundwire.cli._phoenix import PhoenixCommand, looks_like_phoenix, phoenix_target
from groundwire.judges import NOT_CONFIGURED_MESSAGE
from groundwire.offline import RescoreSummary
from groundwire.phoenix import AnnotationStats, PhoenixError, PhoenixRun, PhoenixTarget
from groundwire.phoenix._client import PhoenixNotFoundError

# --- the no-judge message in command-line terms ------------------------------------------------


def _record(msg: str, args: tuple[object, ...] = ()) -> logging.LogRecord:
    return logging.LogRecord("groundwire.judges", logging.WARNING, __file__, 1, msg, args, None)


def test_the_no_judge_message_loses_only_the_python_advice() -> None:
    """The CLI wording is the library's without ', or pass judge=JudgeConfig(...)'."""
    assert NOT_CONFIGURED_MESSAGE.replace(", or pass judge=JudgeConfig(...)", "") == (
        CLI_NOT_CONFIGURED
    )
    assert CLI_NOT_CONFIGURED != NOT_CONFIGURED_MESSAGE
    assert "JudgeConfig" not in CLI_NOT_CONFIGURED


def test_the_filter_rewrites_that_record_and_passes_every_record() -> None:
    """Installed once on the judges' logger; rewrites the no-judge record, keeps all others."""
    install_hints()
    install_hints()
    logger = logging.getLogger("groundwire.judges")
    (hint,) = [f for f in logger.filters if type(f).__name__ == "_CommandLineWording"]
    record = _record(NOT_CONFIGURED_MESSAGE)
    assert hint.filter(record) is True
    assert record.msg == CLI_NOT_CONFIGURED
    other = _record("judge %s failed", ("x",))
    assert hint.filter(other) is True
    assert other.msg == "judge %s failed"
    with_args = _record(NOT_CONFIGURED_MESSAGE, ("x",))
    assert hint.filter(with_args) is True
    assert with_args.msg == NOT_CONFIGURED_MESSAGE


def test_a_command_logs_the_command_line_wording(caplog: pytest.LogCaptureFixture) -> None:
    """Under a command, the judges' no-judge warning reads in command-line terms."""
    CliRunner().invoke(app, ["evaluators"])
    with caplog.at_level(logging.WARNING, logger="groundwire.judges"):
        logging.getLogger("groundwire.judges").warning(NOT_CONFIGURED_MESSAGE)
    assert [r.getMessage() for r in caplog.records] == [CLI_NOT_CONFIGURED]


# --- phoenix:// ---------------------------------------------------------------------------------


def test_phoenix_urls_are_recognised_as_typed_or_folded_by_path() -> None:
    """`phoenix://` and `phoenixs://`, also after Path folded `//` to `/`; files are not."""
    assert looks_like_phoenix(["phoenix://h:6006/p"])
    assert looks_like_phoenix([Path("phoenix://h:6006/p")])
    assert looks_like_phoenix(["t.jsonl", Path("phoenixs://h/p")])
    assert not looks_like_phoenix(["t.jsonl", Path("s3://b/t.jsonl")])
    assert not looks_like_phoenix([])


def test_phoenix_target_is_the_only_input() -> None:
    """The project from the one URL; a file beside it or no URL is refused."""
    target = phoenix_target([Path("phoenix://127.0.0.1:6006/my-project")])
    assert (target.base_url, target.project) == ("http://127.0.0.1:6006", "my-project")
    message = "a phoenix:// input must be the only input (no trace files beside it)"
    for paths in (["phoenix://h:1/p", "t.jsonl"], ["t.jsonl"], []):
        with pytest.raises(ValueError, match=re.escape(message)):
            phoenix_target(paths)


def _command(**changes: object) -> PhoenixCommand:
    options: dict[str, object] = {
        "engine": "local", "fmt": None, "annotate": False, "start": None, "end": None,
        "where": [], "trace_ids": [],
    }  # fmt: skip
    return PhoenixCommand.from_options(["phoenix://127.0.0.1:9/p"], **{**options, **changes})  # type: ignore[arg-type]


def test_from_options_builds_the_query() -> None:
    """Times, root attributes, trace ids and page size go into the query; 1000 a page."""
    command = _command(start="s", end="e", where=["a:b", "c:d:e"], trace_ids=["t"], annotate=True)
    query = command.query
    assert (query.start_time, query.end_time) == ("s", "e")
    assert (query.root_attributes, query.trace_ids, query.page_size) == (
        ("a:b", "c:d:e"),
        ("t",),
        1000,
    )
    assert command.annotate is True
    assert command.run is None
    assert str(command.target) == "phoenix://127.0.0.1:9/p"
    assert _command(page_size=5).query.page_size == 5


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"engine": "ray"}, "a phoenix:// input is read on the local engine only"),
        ({"fmt": "otlp-json"}, "--format applies to trace files, not to a phoenix:// input"),
        ({"where": ["nocolon"]}, "--phoenix-where expects KEY:VALUE, got 'nocolon'"),
        ({"where": [":v"]}, "--phoenix-where expects KEY:VALUE, got ':v'"),
        ({"where": ["k:"]}, "--phoenix-where expects KEY:VALUE, got 'k:'"),
    ],
)
def test_from_options_refuses_what_phoenix_cannot_do(
    changes: dict[str, object], message: str
) -> None:
    """Ray, --format and a malformed --phoenix-where, each with its own line."""
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        _command(**changes)
    assert str(caught.value) == message


def test_phoenix_options_need_a_phoenix_url() -> None:
    """`--phoenix-*` with trace files only is refused."""
    with pytest.raises(ValueError, match="need a phoenix:// input") as caught:
        PhoenixCommand.from_options(
            ["t.jsonl"], engine="local", fmt=None, annotate=False, start=None, end=None,
            where=[], trace_ids=[],
        )  # fmt: skip
    assert str(caught.value) == "--annotate-phoenix and --phoenix-* need a phoenix:// input"


def test_the_phoenix_lines_of_the_summary() -> None:
    """None before a run; the source, then the annotations line when any were written."""
    command = _command()
    assert command.lines() == []
    target = PhoenixTarget("http://127.0.0.1:9", "p")
    command.run = PhoenixRun(RescoreSummary(["x"], None), None, target)
    assert command.lines() == ["read from phoenix://127.0.0.1:9/p"]
    command.run = PhoenixRun(RescoreSummary(["x"], None), AnnotationStats(sent=2), target)
    assert command.lines() == [
        "read from phoenix://127.0.0.1:9/p",
        "Phoenix annotations: 2 written, 0 failed",
    ]


def test_phoenix_errors_exit_by_what_was_read() -> None:
    """Not found: 2; nothing read: 4; cut short after some pages: 3, with how to continue."""
    assert PhoenixCommand.owns(PhoenixError("x"))
    assert not PhoenixCommand.owns(ValueError("x"))
    assert PhoenixCommand.exit_code(PhoenixNotFoundError("404")) is ExitCode.BAD_ARGUMENTS
    assert PhoenixCommand.exit_code(PhoenixError("down")) is ExitCode.NOTHING_READABLE
    assert PhoenixCommand.exit_code(ValueError("other")) is ExitCode.NOTHING_READABLE
    cut = PhoenixError("down")
    cut.pages_read = 3
    assert PhoenixCommand.exit_code(cut) is ExitCode.PARTIAL_INPUT
    assert PhoenixCommand.message(cut, Path("o.jsonl")) == (
        "down (3 pages were read; the turns scored so far are in o.jsonl: run again with "
        "--resume to continue)"
    )
    assert PhoenixCommand.message(cut, None) == "down"
    assert PhoenixCommand.message(PhoenixError("down"), Path("o.jsonl")) == "down"
    assert PhoenixCommand.message(ValueError("v"), Path("o.jsonl")) == "v"


def test_the_phoenix_run_drops_file_only_options(tmp_path: Path) -> None:
    """`fmt`, `engine` and `ray_address` are not passed on to the Phoenix run (which would
    refuse them): the run gets as far as building the evaluators."""
    command = _command()
    with pytest.raises(KeyError, match="unknown evaluator 'nope'"):
        command.rescore(
            ["phoenix://127.0.0.1:9/p"], ["nope"], tmp_path / "o.jsonl",
            fmt=None, engine="local", ray_address=None,
        )  # fmt: skip
    assert command.run is None


# --- the app: one-line usage errors, help, version ----------------------------------------------


def test_a_usage_error_is_one_line_naming_the_help(tmp_path: Path) -> None:
    """A bad option value: `error: ...` and where to read more, exit 2, no panel."""
    result = CliRunner().invoke(app, ["demo", "-n", "0", "-o", str(tmp_path / "d")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "error: Invalid value for '--questions' / '-n': Input should be greater than or equal to 1"
    )
    assert result.stderr.rstrip().endswith("(see groundwire demo --help)")


def test_an_error_without_a_command_context_has_no_help_pointer() -> None:
    """An unknown command is reported against the root, which names its help too."""
    result = CliRunner().invoke(app, ["nope"])
    assert result.exit_code == 2
    assert result.stderr == "error: No such command 'nope'. (see groundwire --help)\n"


def test_no_arguments_prints_the_help() -> None:
    """`groundwire` alone prints the help (no error line), exit 2 as Click's."""
    result = CliRunner().invoke(app, [])
    assert "Usage:" in result.output
    assert "error:" not in result.output
    assert result.exit_code == 2


def test_version_prints_and_exits_0() -> None:
    """`--version`: the version, exit 0, nothing else run."""
    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"groundwire {__version__}\n")


def test_a_command_returns_its_code_through_main(tmp_path: Path) -> None:
    """main() ends with the command's exit code, 0 for a normal return."""
    result = CliRunner().invoke(app, ["evaluators"])
    assert result.exit_code == 0
    assert "quoted_spans" in result.stdout


def test_not_standalone_returns_the_result() -> None:
    """standalone_mode=False: Click's result comes back (no sys.exit)."""
    command = typer.main.get_command(app)
    assert command.main(["evaluators"], standalone_mode=False) in (None, 0)


def test_an_abort_is_one_word_and_exit_1() -> None:
    """typer's Abort from a command outside `guarded` (a prompt's Ctrl-D): `aborted`, exit 1."""
    from groundwire.cli._app import _OneLineErrors

    aborting = typer.Typer(cls=_OneLineErrors)

    @aborting.callback()
    def root() -> None:
        """A group, as `groundwire` is."""

    @aborting.command()
    def command() -> None:
        """Abort at once."""
        raise typer.Abort()

    result = CliRunner().invoke(aborting, ["command"])
    assert (result.exit_code, result.stderr) == (1, "aborted\n")


# --- survivors of the first mutation run -------------------------------------------------------


@pytest.fixture
def judges_logger() -> Iterator[logging.Logger]:
    """The judges' logger without the command-line filter, as it was put back afterwards."""
    logger = logging.getLogger("groundwire.judges")
    saved = logger.filters[:]
    logger.filters[:] = [f for f in saved if type(f).__name__ != "_CommandLineWording"]
    yield logger
    logger.filters[:] = saved


def test_install_hints_puts_one_filter_on_the_judges_logger(judges_logger: logging.Logger) -> None:
    """From none to exactly one, however many times it runs; other loggers untouched."""
    before_root = logging.getLogger().filters[:]
    install_hints()
    install_hints()
    hints = [f for f in judges_logger.filters if type(f).__name__ == "_CommandLineWording"]
    assert len(hints) == 1
    assert logging.getLogger().filters == before_root
    record = _record(NOT_CONFIGURED_MESSAGE)
    assert judges_logger.filter(record)
    assert record.msg == CLI_NOT_CONFIGURED


def test_only_the_first_folded_slash_is_restored() -> None:
    """Path folds `phoenix://` to `phoenix:/`; a later `:/` in the project stays as it is."""
    assert str(phoenix_target([Path("phoenix://h:6006/a:/b")])) == "phoenix://h:6006/a:/b"


def test_phoenix_target_message_is_exact() -> None:
    """The refusal is the one line, nothing around it."""
    with pytest.raises(ValueError, match="only input") as caught:
        phoenix_target(["t.jsonl"])
    assert str(caught.value) == (
        "a phoenix:// input must be the only input (no trace files beside it)"
    )


def test_phoenix_where_splits_at_the_first_colon() -> None:
    """`KEY:VALUE` splits at the first colon, so a value may hold colons (even at its end)."""
    assert _command(where=["a:b:"]).query.root_attributes == ("a:b:",)


def _group(**commands: Any) -> typer.Typer:
    """A group like `groundwire` (same class) with the given commands."""
    from groundwire.cli._app import _OneLineErrors

    group = typer.Typer(cls=_OneLineErrors)

    @group.callback()
    def root() -> None:
        """A group, as `groundwire` is."""

    for name, function in commands.items():
        group.command(name)(function)
    return group


def test_a_click_error_without_a_context_is_one_line() -> None:
    """An error raised by a command itself has no context: one line, no help pointer."""
    from typer._click.exceptions import ClickException

    def failing() -> None:
        """Fail with Click's own error."""
        raise ClickException("it broke")

    result = CliRunner().invoke(_group(failing=failing), ["failing"])
    assert (result.exit_code, result.stderr) == (1, "error: it broke\n")


def test_a_command_returning_text_still_exits_0() -> None:
    """Only an int return is an exit code; any other return value ends with 0."""

    def texting() -> str:
        """Return text."""
        return "done"

    def counting() -> int:
        """Return a number."""
        return 4

    group = _group(texting=texting, counting=counting)
    command = typer.main.get_command(group)
    with pytest.raises(SystemExit) as caught:
        command.main(["texting"])
    assert caught.value.code == 0


def test_not_standalone_keeps_the_program_name(capsys: pytest.CaptureFixture[str]) -> None:
    """standalone_mode=False passes the program name on (the help's usage line shows it)."""
    command = typer.main.get_command(app)
    command.main(["--help"], prog_name="gw", standalone_mode=False)
    assert capsys.readouterr().out.lstrip().startswith("Usage: gw [OPTIONS] COMMAND")


def test_the_phoenix_run_needs_no_file_options(tmp_path: Path) -> None:
    """Called without `fmt`, `engine` or `ray_address`, nothing is missing to drop."""
    command = _command()
    with pytest.raises(KeyError, match="unknown evaluator 'nope'"):
        command.rescore(["phoenix://127.0.0.1:9/p"], ["nope"], tmp_path / "o.jsonl")
