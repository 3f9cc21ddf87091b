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

An object storage URL (`s3://bucket/prefix/`, `gs://`, `az://`, `https://`; see
`groundwire.offline.storage`) is taken the same way: an object named on its own, or every object
under a prefix, recursively and sorted by key, hidden names passed over, `glob` matched against
the key below the prefix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from groundwire.offline.storage import list_objects, object_size, object_url

__all__ = ["COMPRESSED_SUFFIXES", "TRACE_SUFFIXES", "InputFiles", "expand_inputs", "input_size"]

TRACE_SUFFIXES: Final = (".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".proto", ".otlp")
"""Names of trace files in a folder: OTLP/JSON (lines), OTLP protobuf, Jaeger JSON."""
COMPRESSED_SUFFIXES: Final = (".gz", ".zst", ".zstd")
"""Compression suffixes after a trace suffix (the content decides how it is read)."""
_SHOWN: Final = 5
"""How many skipped names a report lists."""


class InputFiles(list[Path | str]):
    """The trace files to read, in order, with the folders' files that were passed over
    (object storage URLs as text)."""

    def __init__(
        self, files: Sequence[Path | str] = (), skipped: Sequence[Path | str] = ()
    ) -> None:
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
    folder). A folder that yields no file is an error only when no path yields any. An object
    storage URL is a file or a folder too (an object, or every object under a prefix) and comes
    back as the URL's text; StorageError when the storage refuses to list it.
    """
    if glob is not None and not glob.strip():
        raise ValueError("--glob needs a pattern, e.g. '*.jsonl.gz'")
    listed = _list(paths)
    files: list[Path | str] = []
    skipped: list[Path | str] = []
    seen: set[object] = set()
    empty: list[str] = []
    for given, under in listed:
        if under is None:
            candidates: list[Path | str] = [given]
        else:
            taken = _matcher(glob)
            candidates = [item for name, item in under if taken(name)]
            passed = [name for name, _ in under if not taken(name)]
            skipped.extend(item for name, item in under if not taken(name))
            if passed and glob is None and on_problem is not None:
                on_problem(_skipped_message(given, passed))
            if not candidates:
                empty.append(os.fspath(given))
        for file in candidates:
            key = file.resolve() if isinstance(file, Path) else file
            if key not in seen:
                seen.add(key)
                files.append(file)
    if not files:
        wanted = f"matching {glob!r}" if glob is not None else _wanted()
        raise FileNotFoundError(f"no trace files {wanted} in {', '.join(empty)}")
    return InputFiles(files, skipped)


_Listing = list[tuple[str, Path | str]]
"""A folder's or prefix's files: (path relative to it, the file or object URL)."""


def _list(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[Path | str, _Listing | None]]:
    """Each given path with the files under it (None for a file given on its own); every
    missing path named in one FileNotFoundError."""
    listed: list[tuple[Path | str, _Listing | None]] = []
    missing: list[str] = []
    for given in paths:
        url = object_url(given)
        if url is not None:
            try:
                is_prefix, objects = list_objects(url)
            except FileNotFoundError:
                missing.append(url)
                continue
            if not is_prefix:
                listed.append((url, None))
                continue
            start = len(url.rstrip("/")) + 1
            names = [(found[start:], found) for found, _ in objects]
            listed.append((url, [(n, f) for n, f in names if not _hidden(n)]))
            continue
        path = Path(given)
        if not path.exists():
            missing.append(os.fspath(given))
        elif path.is_dir():
            listed.append((path, [(f.relative_to(path).as_posix(), f) for f in _walk(path)]))
        else:
            listed.append((path, None))
    if missing:
        raise FileNotFoundError(f"no such trace file or folder: {', '.join(missing)}")
    return listed


def _matcher(glob: str | None) -> Callable[[str], bool]:
    """Whether a relative name is taken: it matches `glob`, or (no glob) has a trace name."""
    if glob is None:
        return _is_trace_name
    return lambda name: PurePosixPath(name).match(glob)


def _hidden(relative: str) -> bool:
    """True when a part of an object's key below its prefix starts with a dot."""
    return any(part.startswith(".") for part in relative.split("/"))


def input_size(path: str | os.PathLike[str]) -> int:
    """A trace file's (or object's) size in bytes, 0 when it cannot be read (the reader says
    why)."""
    url = object_url(path)
    if url is not None:
        return object_size(url)
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _wanted() -> str:
    """The names a folder's trace files must have, for messages."""
    return f"named *{{{','.join(TRACE_SUFFIXES)}}}[.gz|.zst]"


def _skipped_message(folder: Path | str, passed: list[str]) -> str:
    """One line naming the files passed over under `folder` (by their relative names)."""
    names = ", ".join(passed[:_SHOWN])
    more = f" and {len(passed) - _SHOWN} more" if len(passed) > _SHOWN else ""
    return f"{folder}: skipped {len(passed)} file(s) not {_wanted()}: {names}{more}"
