"""The exit-code table's renderings, to the character: `--help` epilogs and the docs' table."""

from __future__ import annotations

from groundwire.cli._exit import (
    COMMAND_CODES,
    EXIT_CODES,
    PRECEDENCE,
    ExitCode,
    help_epilog,
    markdown_table,
)


def test_epilog_lists_the_commands_codes_in_code_order() -> None:
    """`inspect`'s epilog names exactly its codes, each as `N words`, then the docs page."""
    assert help_epilog("inspect") == (
        "Exit codes: 0 ok, 1 internal error, 2 bad arguments, 3 partial input, "
        "4 nothing readable, 5 no turns, 130 interrupted (docs/reliability.md)."
    )


def test_epilog_of_a_command_with_the_fewest_codes() -> None:
    """`evaluators` can only succeed, fail on a bug or refuse its arguments."""
    assert help_epilog("evaluators") == (
        "Exit codes: 0 ok, 1 internal error, 2 bad arguments (docs/reliability.md)."
    )


def test_markdown_table_is_header_rows_then_precedence() -> None:
    """The table has one row per code (number, name, meaning) and ends with the order."""
    lines = markdown_table().split("\n")
    assert lines[:3] == [
        "| code | name | meaning |",
        "|---|---|---|",
        f"| 0 | OK | {EXIT_CODES[0].meaning} |",
    ]
    assert lines[2 : 2 + len(EXIT_CODES)] == [
        f"| {int(i.code)} | {i.code.name} | {i.meaning} |" for i in EXIT_CODES
    ]
    assert lines[2 + len(EXIT_CODES) :] == [
        "",
        "When several apply, the first in this order wins: BAD_ARGUMENTS, INTERRUPTED, "
        "NOTHING_READABLE, NO_TURNS, ALL_EVALUATIONS_FAILED, EXPORT_FAILED, PARTIAL_INPUT, OK.",
        "",
    ]
    assert [code.name for code in PRECEDENCE][-1] == "OK"


def test_rescore_can_exit_with_every_code() -> None:
    """`rescore` is the one command that can end with each code of the table."""
    assert COMMAND_CODES["rescore"] == tuple(ExitCode)
