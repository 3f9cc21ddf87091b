"""Exit codes of every `groundwire` command: one table, so a pipeline can tell what happened.

| code | name | meaning |
|---|---|---|
| 0 | OK | success: every input read, turns found, at least one evaluation ran |
| 1 | INTERNAL_ERROR | a bug in groundwire (reported in one line, never a traceback) |
| 2 | BAD_ARGUMENTS | bad arguments, options, paths or configuration; nothing was scored |
| 3 | PARTIAL_INPUT | some input unreadable (bad records, a cut compressed file); results written |
| 4 | NOTHING_READABLE | no span could be read from any input |
| 5 | NO_TURNS | spans were read but no RAG turn was found (unless `--allow-empty`) |
| 6 | ALL_EVALUATIONS_FAILED | every evaluation failed or was skipped (e.g. a dead judge) |
| 7 | EXPORT_FAILED | results written, but `--export-otlp` delivered none of the evaluation spans |
| 130 | INTERRUPTED | stopped by Ctrl-C or SIGTERM; what was scored is written and resumable |

When several apply, the first in this order wins: BAD_ARGUMENTS, INTERRUPTED, NOTHING_READABLE,
NO_TURNS, ALL_EVALUATIONS_FAILED, EXPORT_FAILED, PARTIAL_INPUT, OK. A run's
summary is mapped to its code in one place: `groundwire.cli._outcome.exit_code`.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """What a `groundwire` command's exit status means (documented in README and here)."""

    OK = 0
    INTERNAL_ERROR = 1
    BAD_ARGUMENTS = 2
    PARTIAL_INPUT = 3
    NOTHING_READABLE = 4
    NO_TURNS = 5
    ALL_EVALUATIONS_FAILED = 6
    EXPORT_FAILED = 7
    INTERRUPTED = 130
