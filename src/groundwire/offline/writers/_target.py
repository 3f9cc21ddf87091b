"""Safe output paths: never write over an input, never leave OUT emptier than it was.

A run writes beside OUT, to `<stem>.partial<suffix>` (for `.parquet`, a directory of complete
row-group files of that name), and moves the result into place when it ends. A run that fails
keeps what it wrote under that name and leaves OUT as it found it; `--resume` appends to OUT in
place (`.jsonl`, `.csv`) or adds row groups beside it (`.parquet`). Before anything is opened for
writing, `check_output_paths` refuses an output that is, or resolves to, an input or another
output.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Final

__all__ = [
    "IN_PLACE_SUFFIXES",
    "OutputLock",
    "OutputPathError",
    "OutputTarget",
    "check_output_paths",
    "is_parts_dir",
    "partial_path",
]

IN_PLACE_SUFFIXES: Final = (".jsonl", ".csv")
"""Formats `--resume` appends to in place (line by line)."""
_PARTIAL: Final = ".partial"
_PARQUET: Final = ".parquet"


class OutputPathError(ValueError):
    """An output path that would destroy an input or another output, or cannot be written."""


def partial_path(path: str | os.PathLike[str]) -> Path:
    """Where a run writes OUT until it ends: `scores.partial.jsonl` beside `scores.jsonl`."""
    target = Path(path)
    return target.with_name(f"{target.stem}{_PARTIAL}{target.suffix}")


def is_parts_dir(path: Path) -> bool:
    """True for a `.parquet` directory that holds only Parquet part files (`part-*.parquet`,
    what the Ray engine's workers write): an output a run may replace or resume."""
    if path.suffix.lower() != _PARQUET or not path.is_dir():
        return False
    return all(child.is_file() and child.suffix == _PARQUET for child in path.iterdir())


def _same(a: Path, b: Path) -> bool:
    """True when two paths name one file: equal once resolved, or the same inode (hard links)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_writable(label: str, path: Path) -> None:
    """OutputPathError when `path` is a directory or its nearest existing folder is not writable."""
    if path.is_dir() and not is_parts_dir(path):
        raise OutputPathError(f"{label} {path} is a directory; give a file name")
    folder = path.parent
    while not folder.exists():
        if folder.parent == folder:
            break
        folder = folder.parent
    if not folder.is_dir():
        raise OutputPathError(f"{label} {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{label} {path}: cannot write in {folder} (permission denied)")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"{label} {path} exists and is not writable (permission denied)")


def check_output_paths(
    outputs: Iterable[tuple[str, str | os.PathLike[str]]],
    inputs: Iterable[tuple[str, str | os.PathLike[str]]],
) -> None:
    """Refuse (OutputPathError) an output that is an input, another output, or unwritable.

    Each item is `(label, path)`, e.g. `("--out", "scores.jsonl")`, `("trace file", "t.jsonl")`.
    An output's partial file (`partial_path`) counts as the output, so it cannot hit an input
    either. Nothing is opened: call this before any output is.
    """
    outs = [(label, Path(path)) for label, path in outputs]
    ins = [(label, Path(path)) for label, path in inputs]
    for index, (label, out) in enumerate(outs):
        try:
            _check_output(index, label, out, outs, ins)
        except OSError as error:  # e.g. a name too long for the file system
            raise OutputPathError(f"{label} {out}: {error.strerror or error}") from None


def _check_output(
    index: int,
    label: str,
    out: Path,
    outs: list[tuple[str, Path]],
    ins: list[tuple[str, Path]],
) -> None:
    """One output against the inputs and the outputs after it (see `check_output_paths`)."""
    _check_writable(label, out)
    for written in (out, partial_path(out)):
        for in_label, source in ins:
            if _same(written, source):
                raise OutputPathError(
                    f"{label} {out} is the {in_label} {source}: writing it would destroy "
                    "the input; choose another output name"
                )
        for other_label, other in outs[index + 1 :]:
            if _same(written, other) or _same(written, partial_path(other)):
                raise OutputPathError(
                    f"{label} {out} and {other_label} {other} are the same file; give each "
                    "output its own name"
                )


class OutputLock:
    """An advisory lock on one output, so two runs never write it at once (POSIX `flock`).

    The lock file `.<name>.lock` sits beside OUT; the lock dies with the process that holds it,
    so a run killed outright never blocks the next one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        target = Path(path)
        self.path = target.with_name(f".{target.name}.lock")
        self._file: IO[bytes] | None = None

    def acquire(self) -> None:
        """Take the lock; OutputPathError when another run holds it."""
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks; nothing to hold
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("ab")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise OutputPathError(
                f"another groundwire run is writing {self.path.name[1:-5]} in {self.path.parent} "
                "right now; wait for it, or choose another output"
            ) from None
        self._file = handle

    def release(self) -> None:
        """Drop the lock and its file."""
        if self._file is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            self._file.close()
            self._file = None


class OutputTarget:
    """One output file: where to write it now, and how to finish (commit) or give up (abandon)."""

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        self.append = append
        self.in_place = (append and self.path.suffix.lower() in IN_PLACE_SUFFIXES) or (
            self.path.suffix.lower() == _PARQUET
        )
        """The writer opens OUT itself: `--resume` on a line format appends to it; the parquet
        writer keeps its own partial directory and merges into OUT on close."""
        self.partial = partial_path(self.path)
        self.replaced_leftover = False
        """A fresh run found a partial file of an earlier run that did not finish (replaced)."""

    @property
    def write_path(self) -> Path:
        """The file the writer opens: OUT itself when appending in place, else the partial."""
        return self.path if self.in_place else self.partial

    def prepare(self) -> None:
        """Make the folder; a fresh run (not `append`) clears a leftover partial file."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.append and self.partial.exists():
            self.replaced_leftover = True
            _remove(self.partial)

    def commit(self) -> None:
        """Move the finished partial file into place (atomic on one file system)."""
        if self.in_place or not self.partial.exists():
            return
        os.replace(self.partial, self.path)

    def abandon(self, rows: int) -> Path | None:
        """A failed run: keep what it wrote (the path, for the message) unless it wrote no row."""
        if self.in_place and not self.partial.is_dir():
            return self.path if rows else None
        if not self.partial.exists():
            return None
        if rows:
            return self.partial
        _remove(self.partial)
        return None


def _remove(path: Path) -> None:
    """Delete a file, or a directory of part files."""
    if path.is_dir():
        for child in sorted(path.iterdir()):
            child.unlink()
        path.rmdir()
    else:
        path.unlink()
