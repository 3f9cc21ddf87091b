"""`.parquet` output: one row per turn, written in row groups as turns come (pyarrow, lazily).

Columns: `trace_id`, `span_id`, `query` (strings), one float64 column per evaluator (null when not
applicable or failed), one `<name>.label` string column per evaluator, and `details` (JSON text).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from groundwire.offline._results import TurnResult
from groundwire.offline.writers._lines import details_json

__all__ = ["ParquetWriter"]

_ROW_GROUP: Final = 4_096


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


class ParquetWriter:
    """Streams turns to a Parquet file; needs `pyarrow` (the `parquet` extra)."""

    def __init__(self, path: Path, evaluators: Sequence[str], *, append: bool = False) -> None:
        if append:
            raise ValueError(
                f"{path}: --resume cannot append to a .parquet file; use .jsonl or .csv"
            )
        pa = _pyarrow()
        self._pa = pa
        self._evaluators = list(evaluators)
        fields = [
            pa.field("trace_id", pa.string()),
            pa.field("span_id", pa.string()),
            pa.field("query", pa.string()),
        ]
        for name in self._evaluators:
            fields.append(pa.field(name, pa.float64()))
            fields.append(pa.field(f"{name}.label", pa.string()))
        fields.append(pa.field("details", pa.string()))
        self._schema = pa.schema(fields)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pa.parquet.ParquetWriter(str(path), self._schema)
        self._rows: list[dict[str, Any]] = []

    def write(self, result: TurnResult) -> None:
        """Buffer the turn's row; a full row group is written out."""
        values = result.values()
        row: dict[str, Any] = {
            "trace_id": result.turn.trace_id,
            "span_id": result.turn.span_id,
            "query": result.turn.query,
            "details": details_json(result),
        }
        for name in self._evaluators:
            score = result.scores.get(name)
            row[name] = values.get(name)
            row[f"{name}.label"] = score.label if score else None
        self._rows.append(row)
        if len(self._rows) >= _ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        """Write the buffered rows as one row group."""
        if self._rows:
            table = self._pa.Table.from_pylist(self._rows, schema=self._schema)
            self._writer.write_table(table)
            self._rows = []

    def close(self, *, interrupted: bool = False) -> None:
        """Write the buffered rows and the file footer."""
        try:
            self._flush()
        finally:
            self._writer.close()
