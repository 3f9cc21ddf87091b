"""`--resume`: which turns an earlier run already wrote to OUT, after dropping a torn last record.

A run killed mid-write (SIGKILL, a crash, a full disk) can leave the last record of OUT cut:
half a `.jsonl` line, a `.csv` record cut inside a quoted multi-line cell, a Parquet row group
without its file footer. `resume_state` finds the last complete record of each format, reports
what it dropped, cuts it off (so it is never parsed as a result and the next append starts on a
record boundary) and returns the keys of the complete ones. Both engines (local and Ray) resume
through it: whatever wrote OUT, only whole records count.

A turn whose evaluation was skipped because the judge could not be reached (`skip_reason`
`judge_unreachable`) is not done: its record is taken out of OUT (the file is rewritten without
it, then moved into place) and the turn is scored again, so OUT never holds a turn twice.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from groundwire._evaluator import JUDGE_UNREACHABLE
from groundwire.offline.writers import (
    APPENDABLE_SUFFIXES,
    CSV_LINE_END,
    csv_header,
    load_pyarrow,
    output_suffix,
    parquet_schema,
    part_files,
    partial_path,
)

__all__ = ["RESCORED_SKIP_REASONS", "ResumeError", "ResumeState", "done_keys", "resume_state"]

RESCORED_SKIP_REASONS: Final = frozenset({JUDGE_UNREACHABLE})
"""Skip reasons whose turns `--resume` scores again: the cause (a judge down) may have passed."""

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
    """One line per repair: a torn record dropped, a partial file adopted, turns to retry."""
    rescored: int = 0
    """Records taken out of OUT to be scored again (an evaluation skipped: judge unreachable)."""
    changed: list[Path] = field(default_factory=list)
    """Files rewritten or removed by the repairs (an OUT staged from object storage sends these
    back, so the stored copy holds what the local one does)."""


def _shown(data: bytes) -> str:
    """The start of a dropped record, for the report."""
    text = data.decode("utf-8", errors="replace").replace("\n", "\\n")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _skipped_for_retry(details: object) -> bool:
    """True when a record's details (evaluator -> entry) hold an evaluation worth another try."""
    if not isinstance(details, dict):
        return False
    for entry in details.values():
        inner = entry.get("details") if isinstance(entry, dict) else None
        if isinstance(inner, dict) and inner.get("skip_reason") in RESCORED_SKIP_REASONS:
            return True
    return False


def _details_text_skipped(text: str | None) -> bool:
    """`_skipped_for_retry` for a details cell stored as JSON text (.csv, .parquet)."""
    if not text or not any(reason in text for reason in RESCORED_SKIP_REASONS):
        return False  # the common case costs a substring search, not a JSON parse
    try:
        return _skipped_for_retry(json.loads(text))
    except ValueError:
        return False


def _replace_with(path: Path, write: Callable[[Path], None]) -> None:
    """Rewrite `path` through a temporary file beside it, moved into place only when whole.

    A run killed during the rewrite leaves `path` as it was (and a stray temporary file that the
    next rewrite overwrites), never a half-written OUT.
    """
    temporary = path.with_name(f".{path.name}.resume-tmp")
    write(temporary)
    os.replace(temporary, path)


def _note_rescored(path: Path, count: int, state: ResumeState) -> None:
    """Report the turns taken out of `path` to be scored again."""
    state.rescored += count
    state.changed.append(path)
    state.notes.append(
        f"{path}: {count} turn{'s' if count != 1 else ''} with evaluations skipped as "
        f"{'/'.join(sorted(RESCORED_SKIP_REASONS))} taken out; scoring them again"
    )


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


def _check_jsonl_evaluators(
    path: Path, number: int, scores: object, evaluators: Sequence[str] | None
) -> None:
    """A line must score this run's evaluators (in any order): appending other ones would mix
    two runs in OUT, and every turn would be skipped as done without its new scores."""
    if not isinstance(scores, dict):
        raise ResumeError(f"{path}:{number}: no 'scores' object; not a groundwire result line")
    if evaluators is not None and set(scores) != set(evaluators):
        raise ResumeError(
            f"{path}:{number}: its evaluators ({', '.join(scores)}) are not this run's "
            f"({', '.join(evaluators)}): resume with the same evaluators, or write a new output"
        )


def _resume_jsonl(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> None:
    """Keys of the complete lines; a last line without its newline is torn."""
    end = _last_line_end(path)
    if end < path.stat().st_size:
        _cut(path, end, state, "line")
    retried: set[int] = set()
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
            _check_jsonl_evaluators(path, number, record.get("scores"), evaluators)
            if _skipped_for_retry(record.get("details")):
                retried.add(number)
                continue
            state.keys.add((key[0] or "", key[1] or ""))
            state.rows += 1
    if retried:

        def write_kept(temporary: Path) -> None:
            with path.open("rb") as source, temporary.open("wb") as kept:
                for number, line in enumerate(source, start=1):
                    if number not in retried:
                        kept.write(line)

        _replace_with(path, write_kept)
        _note_rescored(path, len(retried), state)


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
        details = header.index("details") if "details" in header else None
        retried: set[int] = set()
        for index, row in enumerate(reader):
            if len(row) != len(header):
                raise ResumeError(
                    f"{path}:{reader.line_num}: {len(row)} cells where the header has "
                    f"{len(header)}; cannot resume from it"
                )
            if details is not None and _details_text_skipped(row[details]):
                retried.add(index)
                continue
            state.keys.add((row[0], row[1]))
            state.rows += 1
    if retried:

        def write_kept(temporary: Path) -> None:
            # Rows go back through the csv module with the writer's own dialect, so every kept
            # record is written byte for byte as it was.
            with (
                path.open(encoding="utf-8", newline="") as source,
                temporary.open("w", encoding="utf-8", newline="") as kept,
            ):
                rows = csv.reader(source)
                out = csv.writer(kept, lineterminator=CSV_LINE_END)
                out.writerow(next(rows))
                out.writerows(row for index, row in enumerate(rows) if index not in retried)

        _replace_with(path, write_kept)
        _note_rescored(path, len(retried), state)


def _parquet_keys(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> bool:
    """Add the keys of one Parquet file; False when it is torn (no readable footer).

    Rows with an evaluation skipped as unreachable are taken out of the file (rewritten without
    them, or removed when none is left) and their turns left to be scored again.
    """
    pa = load_pyarrow()
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
    has_details = "details" in parquet_file.schema_arrow.names
    columns = ["trace_id", "span_id", "details"] if has_details else ["trace_id", "span_id"]
    retried = 0
    for batch in parquet_file.iter_batches(columns=columns):
        details = batch.column(2).to_pylist() if has_details else [None] * batch.num_rows
        for trace_id, span_id, text in zip(
            batch.column(0).to_pylist(), batch.column(1).to_pylist(), details, strict=True
        ):
            if _details_text_skipped(text):
                retried += 1
                continue
            state.keys.add((trace_id or "", span_id or ""))
            state.rows += 1
    if retried:
        _drop_parquet_retried(path, parquet_file)
        _note_rescored(path, retried, state)
    return True


def _drop_parquet_retried(path: Path, parquet_file: Any) -> None:
    """Rewrite a Parquet file without its rows to be scored again, one row group at a time."""
    pa = load_pyarrow()

    def write_kept(temporary: Path) -> None:
        with pa.parquet.ParquetWriter(temporary, parquet_file.schema_arrow) as kept:
            for group in range(parquet_file.num_row_groups):
                table = parquet_file.read_row_group(group)
                mask = [not _details_text_skipped(text) for text in table["details"].to_pylist()]
                kept.write_table(table.filter(pa.array(mask, type=pa.bool_())))

    _replace_with(path, write_kept)


def _resume_parquet(path: Path, evaluators: Sequence[str] | None, state: ResumeState) -> None:
    """Keys of OUT's rows and of every complete row-group part an unfinished run left beside it."""
    if path.is_dir():  # OUT written by the Ray workers: a directory of complete parts
        for part in part_files(path):
            _parquet_keys(part, evaluators, state)
    elif path.exists() and not _parquet_keys(path, evaluators, state):
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
            state.changed.append(part)
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

    `evaluators`, when given, must be the ones OUT was scored with (its columns for .csv and
    .parquet, in order; each line's `scores` for .jsonl, in any order). A `.jsonl`/`.csv`
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
        _resume_jsonl(out, evaluators, state)
    return state


def done_keys(path: str | os.PathLike[str]) -> set[tuple[str, str]]:
    """`(trace_id, span_id)` of every complete turn in OUT (a torn last record dropped)."""
    return resume_state(path).keys
