"""The one reader of JSON-lines files of objects that users hand to groundwire.

Labels and scores files (`groundwire calibrate`) and gold answers (`erag`'s `load_expected`) are
JSON lines, one object a line. Each bad line fails naming `file:line` and what was wrong, the
same way in every one of them, with the caller's error type (`LabelsError` for calibrate).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["json_objects"]


def json_objects(
    path: Path, error: type[ValueError] = ValueError
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(`file:line`, object) of a JSON lines file, blank lines skipped; a line that is not JSON,
    or not an object, raises `error` naming the file and the line. Lines are read as bytes:
    `json.loads` decodes them as JSON's own UTF-8 (or UTF-16/32), whatever the locale."""
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as caught:
                raise error(f"{where}: not a JSON object: {caught.msg}") from None
            if not isinstance(row, dict):
                raise error(f"{where}: expected a JSON object, got {type(row).__name__}")
            yield where, row
