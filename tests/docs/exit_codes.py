"""The exit-code tables in README.md and docs/reliability.md, generated from the one in code.

`python -m tests.docs.exit_codes` rewrites the part of each file between the markers from
`groundwire.cli._exit.markdown_table()`; `tests/docs/test_exit_codes.py` fails when a file
differs from what this would write.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from groundwire.cli._exit import markdown_table
from tests.docs._markdown import ROOT

START: Final = (
    "<!-- exit-codes: generated from groundwire/cli/_exit.py by "
    "`python -m tests.docs.exit_codes` -->"
)
END: Final = "<!-- /exit-codes -->"
FILES: Final = (ROOT / "README.md", ROOT / "docs" / "reliability.md")


def current(text: str) -> str:
    """What stands between the markers of `text` (ValueError when they are missing)."""
    start = text.index(START) + len(START)
    return text[start : text.index(END, start)]


def wanted() -> str:
    """What should stand between the markers."""
    return "\n" + markdown_table() + "\n"


def rewrite(path: Path) -> bool:
    """Put the generated table between the markers of `path`; True when it changed."""
    text = path.read_text(encoding="utf-8")
    new = text.replace(START + current(text) + END, START + wanted() + END)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    changed = [str(path) for path in FILES if rewrite(path)]
    sys.stdout.write("".join(f"rewrote {name}\n" for name in changed) or "up to date\n")
