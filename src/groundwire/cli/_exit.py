"""Exit codes of every `groundwire` command: one table, so a pipeline can tell what happened.

`EXIT_CODES` is the table. Everything that shows it is built from it: each command's `--help`
epilog (`help_epilog`), and the tables in README.md and docs/reliability.md (`markdown_table`;
`python -m tests.docs.exit_codes` rewrites them, and a test fails when they differ).

When several apply, the first in `PRECEDENCE` wins. A run's summary is mapped to its code in one
place, `groundwire.cli._outcome.exit_code`, which `rescore` and `inspect` both use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

__all__ = [
    "COMMAND_CODES",
    "EXIT_CODES",
    "PRECEDENCE",
    "ExitCode",
    "ExitCodeInfo",
    "help_epilog",
    "markdown_table",
]


class ExitCode(IntEnum):
    """What a `groundwire` command's exit status means (the table is `EXIT_CODES`)."""

    OK = 0
    INTERNAL_ERROR = 1
    BAD_ARGUMENTS = 2
    PARTIAL_INPUT = 3
    NOTHING_READABLE = 4
    NO_TURNS = 5
    ALL_EVALUATIONS_FAILED = 6
    EXPORT_FAILED = 7
    INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class ExitCodeInfo:
    """One row of the table: the code, a few words for `--help`, and what it means."""

    code: ExitCode
    short: str
    meaning: str


EXIT_CODES: Final = (
    ExitCodeInfo(
        ExitCode.OK, "ok", "success: every input read, turns found, at least one evaluation ran"
    ),
    ExitCodeInfo(
        ExitCode.INTERNAL_ERROR,
        "internal error",
        "a bug in groundwire (one line naming the exception, never a traceback)",
    ),
    ExitCodeInfo(
        ExitCode.BAD_ARGUMENTS,
        "bad arguments",
        "bad arguments, options, paths or configuration (one line); nothing was scored",
    ),
    ExitCodeInfo(
        ExitCode.PARTIAL_INPUT,
        "partial input",
        "some input was unreadable (bad records, a cut compressed stream, `--strict` stopping "
        "at one); the results of the rest are written",
    ),
    ExitCodeInfo(
        ExitCode.NOTHING_READABLE,
        "nothing readable",
        "no span could be read from any input: every record was damaged, or the file is empty "
        "(0 bytes), with or without `--allow-empty`",
    ),
    ExitCodeInfo(
        ExitCode.NO_TURNS,
        "no turns",
        'the input was read but held no RAG turn (spans of other kinds, or `{"resourceSpans":[]}`'
        "); `--allow-empty` makes this 0",
    ),
    ExitCodeInfo(
        ExitCode.ALL_EVALUATIONS_FAILED,
        "every evaluation failed or skipped",
        "every evaluation failed or was skipped (a dead or refusing judge, no judge configured)",
    ),
    ExitCodeInfo(
        ExitCode.EXPORT_FAILED,
        "nothing exported",
        "results written, but `--export-otlp` delivered none of the evaluation spans (the "
        "exporter's reason is printed)",
    ),
    ExitCodeInfo(
        ExitCode.INTERRUPTED,
        "interrupted",
        "stopped by Ctrl-C or SIGTERM; what was scored is written and `--resume` continues",
    ),
)
"""The table, in code order."""

PRECEDENCE: Final = (
    ExitCode.BAD_ARGUMENTS,
    ExitCode.INTERRUPTED,
    ExitCode.NOTHING_READABLE,
    ExitCode.NO_TURNS,
    ExitCode.ALL_EVALUATIONS_FAILED,
    ExitCode.EXPORT_FAILED,
    ExitCode.PARTIAL_INPUT,
    ExitCode.OK,
)
"""When several codes apply, the first of these wins (INTERNAL_ERROR stops a run at once)."""

_ALWAYS: Final = (ExitCode.OK, ExitCode.INTERNAL_ERROR, ExitCode.BAD_ARGUMENTS)
_READS: Final = (ExitCode.PARTIAL_INPUT, ExitCode.NOTHING_READABLE, ExitCode.NO_TURNS)

COMMAND_CODES: Final[dict[str, tuple[ExitCode, ...]]] = {
    "rescore": tuple(info.code for info in EXIT_CODES),
    "inspect": (*_ALWAYS, *_READS, ExitCode.INTERRUPTED),
    "serve": (*_ALWAYS, ExitCode.INTERRUPTED),
    "verify-quotes": (*_ALWAYS, ExitCode.INTERRUPTED),
    "demo": (*_ALWAYS, ExitCode.INTERRUPTED),
    "evaluators": _ALWAYS,
    "calibrate": (*_ALWAYS, *_READS, ExitCode.ALL_EVALUATIONS_FAILED, ExitCode.INTERRUPTED),
}
"""The codes each command can exit with (its `--help` lists these)."""


def help_epilog(command: str) -> str:
    """The `--help` epilog of `command`: its exit codes, from `EXIT_CODES`."""
    codes = COMMAND_CODES[command]
    shown = [f"{int(info.code)} {info.short}" for info in EXIT_CODES if info.code in codes]
    return "Exit codes: " + ", ".join(shown) + " (docs/reliability.md)."


def markdown_table() -> str:
    """`EXIT_CODES` as the Markdown table README.md and docs/reliability.md show."""
    rows = ["| code | name | meaning |", "|---|---|---|"]
    rows += [f"| {int(i.code)} | {i.code.name} | {i.meaning} |" for i in EXIT_CODES]
    order = ", ".join(code.name for code in PRECEDENCE)
    return "\n".join(rows) + f"\n\nWhen several apply, the first in this order wins: {order}.\n"
