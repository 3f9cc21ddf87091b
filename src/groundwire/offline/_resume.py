"""`--resume`: which turns an earlier run already wrote to OUT, after dropping a torn last record.

A run killed mid-write (SIGKILL, a crash, a full disk) can leave the last record of OUT cut:
half a `.jsonl` line, a `.csv` record cut inside a quoted multi-line cell, a Parquet row group
without its file footer. `resume_state` finds the last complete record of each format, reports
what it dropped, cuts it off (so it is never parsed as a result and the next append starts on a
record boundary) and returns the keys of the complete ones. Both engines (local and Ray) resume
through it: whatever wrote OUT, only whole records count.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from groundwire.offline.writers import APPENDABLE_SUFFIXES, csv_header, output_suffix
from groundwire.offline.writers._target import partial_path

__all__ = ["ResumeError", "ResumeState", "done_keys", "resume_state"]

_SCAN: Final = 1 << 20
"""Bytes read at a time while scanning a CSV file for record boundaries."""
_SHOWN: Final = 60
"""Characters of a dropped record shown in the report."""


class ResumeError(ValueError):
    """OUT cannot be resumed (not a groundwire output, other evaluators); names file and line."""


@dataclass(slots=True)
class ResumeState:
    """What an earlier run left in OUT: the finished turns, and what was repaired on the way."""

    keys: set[tuple[str, str]] = field(default_factory=set)
    """`(trace_id, span_id)` of every complete record."""
    rows: int = 0
    """Complete records found."""
    notes: list[str] = field(default_factory=list)
    """One line per repair: a torn record dropped, a partial file adopted."""


def _shown(data: bytes) -> str:
    """The start of a dropped record, for the report."""
    text = data.decode("utf-8", errors="replace").replace("\n", "\\n")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _cut(path: Path, keep: int, state: ResumeState, what: str) -> None:
    """Truncate `path` to `keep` bytes, reporting the torn record that is dropped."""
    with path.open("rb+") as file:
        file.seek(keep)
        torn = file.read()
        file.truncate(keep)
    state.notes.append(
        f"{path}: dropped a torn last {what} ({len(torn)} bytes, cut off when the run writing it "
        f'was stopped): "{_shown(torn)}"'
    )


def _last_line_end(path: Path) -> int:
    """Offset just after the last newline (0 when there is none)."""
    with path.open("rb") as file:
        position = file.seek(0, os.SEEK_END)
        while position > 0:
            start = max(0, position - _SCAN)
            file.seek(start)
            cut = file.read(position - start).rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            position = start
    return 0


def _resume_jsonl(path: Path, state: ResumeState) -> None:
    """Keys of the complete lines; a last line without its newline is torn."""
    end = _last_line_end(path)
    if end < path.stat().st_size:
        _cut(path, end, state, "line")
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (record["trace_id"], record["span_id"])
            except (ValueError, KeyError, TypeError):
                raise ResumeError(
                    f"{path}:{number}: not a groundwire result line; cannot resume from it"
                ) from None
            if not all(isinstance(part, str | None) for part in key):
                raise ResumeError(f"{path}:{number}: trace_id and span_id must be strings")
            state.keys.add((key[0] or "", key[1] or ""))
            state.rows += 1


def _csv_record_end(path: Path) -> int:
    """Offset just after the last complete CSV record: a newline outside any quoted field.

    Inside a quoted field a quote is doubled, so an even count of quote characters before a
    newline means the newline ends a record; an odd one, that it is part of a multi-line cell.
    """
    end = 0
    quotes = 0
    offset = 0
    with path.open("rb") as file:
        while chunk := file.read(_SCAN):
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    quotes += chunk.count(b'"', start)
                    break
                quotes += chunk.count(b'"', start, newline)
                if quotes % 2 == 0:
                    end = offset + newline + 1
                start = newline + 1
            offset += len(chunk)
    return end


def _resume_csv(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> None:
    """Keys of the complete records; a record cut anywhere (even inside a quoted cell) is torn."""
    end = _csv_record_end(path)
    if end < path.stat().st_size:
        _cut(path, end, state, "record")
    with path.open(encoding="utf-8", newline="") as file:
        reader = csv.reader(file)
        header = next(reader, None)
        if header is None:
            return
        expected = csv_header(evaluators) if evaluators is not None else None
        if expected is not None and header != expected:
            raise ResumeError(
                f"{path}:1: its columns ({', '.join(header)}) are not this run's "
                f"({', '.join(expected)}): resume with the same evaluators, or write a new output"
            )
        if header[:2] != ["trace_id", "span_id"]:
            raise ResumeError(f"{path}:1: not a groundwire results CSV (no trace_id, span_id)")
        for row in reader:
            if len(row) != len(header):
                raise ResumeError(
                    f"{path}:{reader.line_num}: {len(row)} cells where the header has "
                    f"{len(header)}; cannot resume from it"
                )
            state.keys.add((row[0], row[1]))
            state.rows += 1


def _parquet_keys(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> bool:
    """Add the keys of one Parquet file; False when it is torn (no readable footer)."""
    from groundwire.offline.writers._parquet import _pyarrow, parquet_schema

    pa = _pyarrow()
    try:
        parquet_file = pa.parquet.ParquetFile(path)
    except (pa.ArrowException, OSError):
        return False
    if evaluators is not None:
        names = parquet_file.schema_arrow.names
        wanted = parquet_schema(evaluators).names
        if names != wanted:
            raise ResumeError(
                f"{path}: its columns ({', '.join(names)}) are not this run's "
                f"({', '.join(wanted)}): resume with the same evaluators, or write a new output"
            )
    for batch in parquet_file.iter_batches(columns=["trace_id", "span_id"]):
        for trace_id, span_id in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True
        ):
            state.keys.add((trace_id or "", span_id or ""))
            state.rows += 1
    return True


def _resume_parquet(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> None:
    """Keys of OUT's rows and of every complete row-group part an unfinished run left beside it."""
    from groundwire.offline.writers._parquet import part_files

    if path.exists() and not _parquet_keys(path, evaluators, state):
        aside = path.with_name(f"{path.stem}.torn{path.suffix}")
        os.replace(path, aside)
        state.notes.append(
            f"{path}: no Parquet footer (the run writing it was stopped); moved aside to {aside}"
        )
    folder = partial_path(path)
    if not folder.is_dir():
        return
    before = state.rows
    for torn in sorted(folder.glob("*.tmp")):
        size = torn.stat().st_size
        torn.unlink()
        state.notes.append(
            f"{torn}: dropped a torn row group ({size} bytes, cut off when the run writing it "
            "was stopped)"
        )
    for part in part_files(folder):
        if not _parquet_keys(part, evaluators, state):
            part.unlink()
            state.notes.append(f"{part}: dropped a torn row group (no Parquet footer)")
    if state.rows > before:
        state.notes.append(
            f"{folder}: resuming {state.rows - before} rows an unfinished run left in complete "
            "row groups"
        )


def resume_state(
    path: str | os.PathLike[str], evaluators: Sequence[str] | None = None
) -> ResumeState:
    """Prepare OUT for `--resume`: adopt a partial file, drop a torn last record, read the keys.

    `evaluators`, when given, must match OUT's columns (.csv, .parquet). A `.jsonl`/`.csv`
    partial file (`scores.partial.jsonl`) left by a run that did not finish is adopted as OUT when
    OUT does not exist. Raises `ResumeError` for a file that is not a groundwire output.
    """
    out = Path(path)
    suffix = output_suffix(out)
    if suffix not in APPENDABLE_SUFFIXES:
        raise ResumeError(
            f"--resume needs an output that can be resumed ({', '.join(APPENDABLE_SUFFIXES)}); "
            f"{out} is {suffix}"
        )
    state = ResumeState()
    if suffix == ".parquet":
        _resume_parquet(out, evaluators, state)
        return state
    partial = partial_path(out)
    if partial.is_file():
        if out.exists():
            state.notes.append(
                f"{partial} (left by a run that did not finish) is not used: resuming {out}"
            )
        else:
            os.replace(partial, out)
            state.notes.append(f"resuming from {partial} (left by a run that did not finish)")
    if not out.exists():
        return state
    if suffix == ".csv":
        _resume_csv(out, evaluators, state)
    else:
        _resume_jsonl(out, state)
    return state


def done_keys(path: str | os.PathLike[str]) -> set[tuple[str, str]]:
    """`(trace_id, span_id)` of every complete turn in OUT (a torn last record dropped)."""
    return resume_state(path).keys
