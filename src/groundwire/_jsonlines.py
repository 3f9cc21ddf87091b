"""The one reader of JSON-lines files that users hand to groundwire.

Labels and scores files (`groundwire calibrate`), gold answers (`erag`'s `load_expected` and
`rescore --expected`) and `rescore --baseline` scores files are JSON lines. Each bad line fails
naming `file:line` and what was wrong, in the words the trace readers use ("not valid JSON
(...)"), with the caller's error type (`LabelsError` for calibrate, `BaselineError` for the
baseline).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["json_lines", "json_objects"]


def json_lines(
    lines: Iterable[str | bytes], source: object, error: type[ValueError] = ValueError
) -> Iterator[tuple[str, Any]]:
    """(`source:line`, value) for each non-blank line; a line that is not JSON raises `error`
    naming the source, the line and why. Bytes lines are decoded by `json.loads` as JSON's own
    UTF-8 (or UTF-16/32), whatever the locale."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as caught:
            raise error(f"{where}: not valid JSON ({caught.msg})") from None
        yield where, value


def json_objects(
    path: Path, error: type[ValueError] = ValueError
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`file:line`, object) of a JSON lines file of objects, read as bytes; a line that is not
    JSON, or not an object, raises `error` naming the file and the line."""
    with path.open("rb") as file:
        for where, value in json_lines(file, path, error):
            if not isinstance(value, dict):
                raise error(f"{where}: expected a JSON object, got {type(value).__name__}")
            yield where, value
