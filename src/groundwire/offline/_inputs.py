"""Input paths to trace files: folders expanded (recursively, sorted by name), `--glob` applied.

```python
files = expand_inputs(["otel-traces/", "extra.jsonl"], glob="traces-*.json*")
```

A file named on its own is taken whatever its name. A folder gives every file under it whose name
ends in a trace extension (`TRACE_SUFFIXES`, optionally followed by `.gz`, `.zst` or `.zstd`),
or, with `glob`, every file whose path relative to the folder matches the pattern (matched from
the right, as `PurePath.match` does: `*.json` matches at any depth, `2026-11/*.gz` one level
down). Hidden files and folders (a leading dot) are passed over; without `glob`, other files
under a folder are reported (one message per folder, naming them), so nothing is skipped
silently.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

__all__ = ["COMPRESSED_SUFFIXES", "TRACE_SUFFIXES", "InputFiles", "expand_inputs"]

TRACE_SUFFIXES: Final = (".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".proto", ".otlp")
"""Names of trace files in a folder: OTLP/JSON (lines), OTLP protobuf, Jaeger JSON."""
COMPRESSED_SUFFIXES: Final = (".gz", ".zst", ".zstd")
"""Compression suffixes after a trace suffix (the content decides how it is read)."""
_SHOWN: Final = 5
"""How many skipped names a report lists."""


class InputFiles(list[Path]):
    """The trace files to read, in order, with the folders' files that were passed over."""

    def __init__(self, files: Sequence[Path] = (), skipped: Sequence[Path] = ()) -> None:
        """Files to read, and files under the folders that were not taken."""
        super().__init__(files)
        self.skipped = list(skipped)


def _is_trace_name(name: str) -> bool:
    """True when `name` ends in a trace suffix, optionally followed by a compression suffix."""
    lower = name.lower()
    for compressed in COMPRESSED_SUFFIXES:
        if lower.endswith(compressed):
            lower = lower[: -len(compressed)]
            break
    return lower.endswith(TRACE_SUFFIXES)


def _walk(folder: Path) -> list[Path]:
    """Every regular file under `folder`, hidden ones left out, sorted by relative path."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        found.extend(Path(root, name) for name in files if not name.startswith("."))
    return sorted(found, key=lambda path: path.relative_to(folder).as_posix())


def expand_inputs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    glob: str | None = None,
    on_problem: Callable[[str], None] | None = None,
) -> InputFiles:
    """The trace files named by `paths`, folders expanded; FileNotFoundError for missing paths.

    Files under a folder without a trace name are reported to `on_problem` (one message per
    folder). A folder that yields no file is an error only when no path yields any.
    """
    if glob is not None and not glob.strip():
        raise ValueError("--glob needs a pattern, e.g. '*.jsonl.gz'")
    missing = [os.fspath(path) for path in paths if not Path(path).exists()]
    if missing:
        raise FileNotFoundError(f"no such trace file or folder: {', '.join(missing)}")
    files: list[Path] = []
    skipped: list[Path] = []
    seen: set[Path] = set()
    empty: list[str] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            candidates = [path]
        else:
            under = _walk(path)
            if glob is not None:
                candidates = [
                    file
                    for file in under
                    if PurePosixPath(file.relative_to(path).as_posix()).match(glob)
                ]
            else:
                candidates = [file for file in under if _is_trace_name(file.name)]
            taken = set(candidates)
            passed = [file for file in under if file not in taken]
            skipped.extend(passed)
            if passed and glob is None and on_problem is not None:
                on_problem(_skipped_message(path, passed))
            if not candidates:
                empty.append(os.fspath(path))
        for file in candidates:
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                files.append(file)
    if not files:
        wanted = f"matching {glob!r}" if glob is not None else _wanted()
        raise FileNotFoundError(f"no trace files {wanted} in {', '.join(empty)}")
    return InputFiles(files, skipped)


def _wanted() -> str:
    """The names a folder's trace files must have, for messages."""
    return f"named *{{{','.join(TRACE_SUFFIXES)}}}[.gz|.zst]"


def _skipped_message(folder: Path, passed: list[Path]) -> str:
    """One line naming the files passed over under `folder`."""
    names = ", ".join(file.relative_to(folder).as_posix() for file in passed[:_SHOWN])
    more = f" and {len(passed) - _SHOWN} more" if len(passed) > _SHOWN else ""
    return f"{folder}: skipped {len(passed)} file(s) not {_wanted()}: {names}{more}"
