"""Where the command line writes, and how wide: a terminal's width, unbounded when piped.

Rich lays a table or a tree out at the console's width and crops what does not fit. Without a
terminal (a pipe, a file, CI) Rich falls back to 80 columns, which cut `inspect`'s lines
mid-word ("openinfere") with no ellipsis. `fit_to_streams` gives piped output a width nothing
reaches, unless the user set `COLUMNS` (Rich honours it).
"""

from __future__ import annotations

import os
from typing import Final

from rich.console import Console
from rich.markup import escape

__all__ = [
    "PIPED_WIDTH",
    "console",
    "err_console",
    "fit_to_streams",
    "print_error",
    "print_notice",
]

PIPED_WIDTH: Final = 1000
"""Columns used when output is not a terminal and `COLUMNS` is unset: no line is cut."""

console = Console()
"""Standard output for results."""
err_console = Console(stderr=True)
"""Standard error for notices and problems."""


def fit_to_streams() -> None:
    """Size both consoles for where they write now (called at the start of every command)."""
    for stream in (console, err_console):
        piped = not stream.is_terminal and "COLUMNS" not in os.environ
        stream.width = PIPED_WIDTH if piped else None  # type: ignore[assignment]


def print_error(message: str) -> None:
    """Print `error: message` on stderr as one line (markup escaped)."""
    err_console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def print_notice(message: str) -> None:
    """Print `groundwire: message` on stderr as one line (markup escaped): a problem the command
    went on past (a bad record, a file passed over) or why it exits as it does."""
    err_console.print(f"[yellow]groundwire:[/] {escape(message)}", highlight=False, soft_wrap=True)
