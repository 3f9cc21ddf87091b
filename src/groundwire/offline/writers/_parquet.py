"""`.parquet` output: one row per turn, written in row groups as turns come (pyarrow, lazily).

Columns: `trace_id`, `span_id`, `query` (strings), one float64 column per evaluator (null when not
applicable or failed), one `<name>.label` string column per evaluator, and `details` (JSON text).

While a run goes, each row group is its own complete Parquet file (`part-00000.parquet`, ...) in
the partial directory beside OUT (`scores.partial.parquet/`, readable as a dataset), written under
a temporary name and renamed when whole: a run killed mid-write loses at most the row group it was
writing, and `--resume` finds every complete one. When the run ends the parts (after OUT's own
row groups, when resuming) are merged into OUT.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from groundwire.offline._results import TurnResult
from groundwire.offline.writers._lines import details_json

__all__ = [
    "PART_GLOB",
    "ParquetWriter",
    "merge_parts",
    "parquet_row",
    "parquet_schema",
    "part_files",
]

_ROW_GROUP: Final = 4_096
PART_GLOB: Final = "part-*.parquet"
"""Complete row-group files in a partial directory."""
_PART: Final = "part-{:05d}.parquet"
_WRITING: Final = ".tmp"
"""Suffix of a part file while it is written (a killed run leaves it torn)."""


def _pyarrow() -> Any:
    """The `pyarrow` module (with parquet), or ImportError naming the extra to install."""
    try:
        import pyarrow  # type: ignore[import-untyped,unused-ignore]
        import pyarrow.parquet  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise ImportError(
            "writing .parquet needs pyarrow: pip install 'groundwire[parquet]' "
            "(or pip install 'pyarrow>=15')"
        ) from None
    return pyarrow


def parquet_schema(evaluators: Sequence[str]) -> Any:
    """The output's Arrow schema for these evaluators."""
    pa = _pyarrow()
    fields = [
        pa.field("trace_id", pa.string()),
        pa.field("span_id", pa.string()),
        pa.field("query", pa.string()),
    ]
    for name in evaluators:
        fields.append(pa.field(name, pa.float64()))
        fields.append(pa.field(f"{name}.label", pa.string()))
    fields.append(pa.field("details", pa.string()))
    return pa.schema(fields)


def parquet_row(result: TurnResult, evaluators: Sequence[str]) -> dict[str, Any]:
    """One turn's row of the output (`parquet_schema(evaluators)`'s columns)."""
    values = result.values()
    row: dict[str, Any] = {
        "trace_id": result.turn.trace_id,
        "span_id": result.turn.span_id,
        "query": result.turn.query,
        "details": details_json(result),
    }
    for name in evaluators:
        score = result.scores.get(name)
        row[name] = values.get(name)
        row[f"{name}.label"] = score.label if score else None
    return row


def part_files(folder: Path) -> list[Path]:
    """The complete part files of a partial directory, in write order."""
    return sorted(folder.glob(PART_GLOB))


class ParquetWriter:
    """Streams turns to `path` through row-group part files beside it; needs `pyarrow`.

    `append` (`--resume`) keeps `path`'s rows and the complete parts of an earlier run.
    """

    def __init__(self, path: Path, evaluators: Sequence[str], *, append: bool = False) -> None:
        from groundwire.offline.writers._target import partial_path

        pa = _pyarrow()
        self._pa = pa
        self._path = path
        self._append = append
        self._evaluators = list(evaluators)
        self._schema = parquet_schema(self._evaluators)
        self._folder = partial_path(path)
        if not append and self._folder.exists():
            for leftover in self._folder.iterdir():
                leftover.unlink()
        self._folder.mkdir(parents=True, exist_ok=True)
        self._next = len(part_files(self._folder)) if append else 0
        self._rows: list[dict[str, Any]] = []

    def write(self, result: TurnResult) -> None:
        """Buffer the turn's row; a full row group is written out."""
        self._rows.append(parquet_row(result, self._evaluators))
        if len(self._rows) >= _ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        """Write the buffered rows as one part file, renamed into place once whole."""
        if not self._rows:
            return
        table = self._pa.Table.from_pylist(self._rows, schema=self._schema)
        final = self._folder / _PART.format(self._next)
        writing = final.with_name(final.name + _WRITING)
        self._pa.parquet.write_table(table, writing)
        os.replace(writing, final)
        self._next += 1
        self._rows = []

    def close(self, *, interrupted: bool = False) -> None:
        """Write the buffered rows and merge every part (after OUT's rows, when appending)."""
        if self._next == 0 and not self._rows:
            empty = self._pa.Table.from_pylist([], schema=self._schema)
            self._pa.parquet.write_table(empty, self._folder / _PART.format(0))
            self._next = 1
        self._flush()
        merge_parts(self._folder, self._path, keep_existing=self._append)

    def abandon(self) -> None:
        """A failed run: write the buffered rows as a part and leave OUT as it was."""
        self._flush()


def merge_parts(folder: Path, target: Path, *, keep_existing: bool) -> None:
    """Merge OUT's row groups (when `keep_existing`) and the parts into OUT, then drop the parts."""
    pa = _pyarrow()
    existing: list[Path] = []
    if keep_existing and target.exists():  # a directory of parts: a Ray run's output
        existing = part_files(target) if target.is_dir() else [target]
    sources = existing + part_files(folder)
    merged = folder / f"merged{_WRITING}"
    writer = None
    try:
        for source in sources:
            parquet_file = pa.parquet.ParquetFile(source)
            for index in range(parquet_file.num_row_groups):
                table = parquet_file.read_row_group(index)
                if writer is None:
                    writer = pa.parquet.ParquetWriter(merged, table.schema)
                writer.write_table(table)
        if writer is None:
            first = pa.parquet.ParquetFile(sources[0]) if sources else None
            schema = first.schema_arrow if first is not None else pa.schema([])
            writer = pa.parquet.ParquetWriter(merged, schema)
    finally:
        if writer is not None:
            writer.close()
    if target.is_dir():
        for part in target.iterdir():
            part.unlink()
        target.rmdir()
    os.replace(merged, target)
    for part in folder.iterdir():
        part.unlink()
    folder.rmdir()
