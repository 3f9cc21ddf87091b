"""One exit-code table: the docs' tables and every `--help` come from it, and `inspect` and
`rescore` exit alike on the same input."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import COMMAND_CODES, EXIT_CODES, ExitCode, help_epilog
from tests.docs import exit_codes
from tests.offline._cli_files import write_spans_without_turns, write_turns


@pytest.mark.parametrize("path", exit_codes.FILES, ids=lambda path: path.name)
def test_the_docs_tables_are_the_table_in_code(path: Path) -> None:
    """README.md and docs/reliability.md show exactly `groundwire.cli._exit.EXIT_CODES`."""
    text = path.read_text(encoding="utf-8")
    assert exit_codes.current(text) == exit_codes.wanted(), (
        f"{path.name}'s exit-code table is stale: run `python -m tests.docs.exit_codes`"
    )


def test_every_command_lists_its_exit_codes_in_its_help() -> None:
    """Each command's `--help` ends with its codes from the table; every command has a list."""
    commands = {
        info.name or (info.callback.__name__ if info.callback else "")
        for info in app.registered_commands
    }
    assert commands == set(COMMAND_CODES)
    for command in sorted(commands):
        result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400"})
        assert result.exit_code == 0, result.output
        assert help_epilog(command) in " ".join(result.output.split()), command
    assert all(code in COMMAND_CODES["rescore"] for code in ExitCode)
    assert [info.code for info in EXIT_CODES] == sorted(ExitCode)


def _inputs(folder: Path) -> dict[str, Path]:
    """Trace files of every kind the two commands must agree on."""
    (folder / "resource_spans.jsonl").write_text('{"resourceSpans":[]}\n')
    (folder / "zero.jsonl").write_bytes(b"")
    damaged = write_turns(["q1", "q2"], folder / "damaged.jsonl")
    damaged.write_text(damaged.read_text() + "{not json\n")
    return {
        "resource_spans": folder / "resource_spans.jsonl",
        "zero_bytes": folder / "zero.jsonl",
        "no_turns": write_spans_without_turns(folder / "http.jsonl"),
        "turns": write_turns(["q1"], folder / "turns.jsonl"),
        "damaged": damaged,
    }


EXPECTED = {
    ("resource_spans", False): ExitCode.NO_TURNS,
    ("resource_spans", True): ExitCode.OK,
    ("zero_bytes", False): ExitCode.NOTHING_READABLE,
    ("zero_bytes", True): ExitCode.NOTHING_READABLE,
    ("no_turns", False): ExitCode.NO_TURNS,
    ("no_turns", True): ExitCode.OK,
    ("turns", False): ExitCode.OK,
    ("turns", True): ExitCode.OK,
    ("damaged", False): ExitCode.PARTIAL_INPUT,
    ("damaged", True): ExitCode.PARTIAL_INPUT,
}


@pytest.mark.parametrize(("kind", "allow_empty"), list(EXPECTED), ids=str)
def test_inspect_and_rescore_exit_alike(tmp_path: Path, kind: str, allow_empty: bool) -> None:
    """The same file gives the same exit code from `inspect` and `rescore` (the documented one)."""
    path = _inputs(tmp_path)[kind]
    flag = ["--allow-empty"] if allow_empty else []
    out = str(tmp_path / "o.jsonl")
    runner = CliRunner()
    rescored = runner.invoke(app, ["rescore", str(path), "-e", "quoted_spans", "-o", out, *flag])
    inspected = runner.invoke(app, ["inspect", str(path), *flag])
    assert "Traceback" not in rescored.output + inspected.output
    assert (rescored.exit_code, inspected.exit_code) == (EXPECTED[kind, allow_empty],) * 2, (
        rescored.output,
        inspected.output,
    )


def test_epilog_is_built_from_the_table() -> None:
    """A code's few words in `--help` are the table's (change one, the epilog follows)."""
    epilog = help_epilog("inspect")
    for info in EXIT_CODES:
        shown = f"{int(info.code)} {info.short}" in epilog
        assert shown == (info.code in COMMAND_CODES["inspect"]), info
