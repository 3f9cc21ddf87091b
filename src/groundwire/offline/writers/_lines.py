"""Line-oriented writers (`.jsonl`, `.csv`) that can append and never leave a partial line.

Each turn is written as one whole line; on an interrupted close the file is cut back to the end of
the last complete line, so an abort in the middle of a write cannot leave half a record.

`encode_rows` gives, as bytes, the lines either writer would write for a sequence of turns, and
`write_encoded` appends such bytes as they are: the Ray workers encode their rows and the driver
only copies them (`_ray_lines`), byte for byte what the writer itself would have written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from groundwire.offline._results import TurnResult, dumps_strict
from groundwire.offline.writers._cells import neutralise

__all__ = [
    "CSV_LINE_END",
    "ENCODED_SUFFIXES",
    "CsvWriter",
    "JsonLinesWriter",
    "csv_header",
    "details_json",
    "encode_rows",
]


class _LineFile:
    """An output file written one whole line at a time, remembering the last good offset."""

    def __init__(self, path: Path, *, append: bool) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] = path.open("ab" if append else "wb")
        self._good = self._file.tell()
        self._since_flush = 0

    @property
    def empty(self) -> bool:
        """True when nothing has been written to the file yet."""
        return self._good == 0

    def line(self, text: str) -> None:
        """Write one whole line (UTF-8) and remember the offset after it."""
        data = text.encode("utf-8")
        self._file.write(data)
        self._good += len(data)
        self._since_flush += 1
        if self._since_flush >= 64:
            self.flush()

    def lines(self, data: bytes) -> None:
        """Write whole lines already encoded (ending with a line end) and remember the offset."""
        if not data:
            return
        self._file.write(data)
        self._good += len(data)
        self.flush()

    def flush(self) -> None:
        """Push buffered lines to the OS."""
        self._file.flush()
        self._since_flush = 0

    def close(self, *, interrupted: bool) -> None:
        """Flush and close; when interrupted, cut the file back to the last whole line."""
        try:
            self._file.flush()
            if interrupted:
                self._file.truncate(self._good)
        finally:
            self._file.close()


class _LineWriter:
    """What both line formats share: a `_LineFile`, encoded lines appended as they are."""

    def __init__(self, path: Path, *, append: bool) -> None:
        self._out = _LineFile(path, append=append)

    def write_encoded(self, data: bytes) -> None:
        """Append whole lines (rows) `encode_rows` made, copied as they are."""
        self._out.lines(data)

    def flush(self) -> None:
        """Push written lines to the OS."""
        self._out.flush()

    def close(self, *, interrupted: bool = False) -> None:
        """Flush and close (cutting any partial line when interrupted)."""
        self._out.close(interrupted=interrupted)


class JsonLinesWriter(_LineWriter):
    """One JSON object per turn: trace_id, span_id, query, scores, details (docs/offline.md)."""

    def __init__(self, path: Path, evaluators: Sequence[str], *, append: bool = False) -> None:
        super().__init__(path, append=append)

    def write(self, result: TurnResult) -> None:
        """Append the turn's record as one line."""
        self._out.line(_json_line(result))


CSV_LINE_END: Final = "\r\n"
"""Record terminator of the .csv output (RFC 4180; the csv module then quotes a lone CR too)."""


def csv_header(evaluators: Sequence[str]) -> list[str]:
    """The CSV columns: ids, query, one value and one label column per evaluator, details."""
    columns = ["trace_id", "span_id", "query"]
    for name in evaluators:
        columns += [name, f"{name}.label"]
    return [*columns, "details"]


def details_json(result: TurnResult) -> str:
    """The turn's details as compact JSON (for one spreadsheet or table cell)."""
    return dumps_strict(result.details())


class CsvWriter(_LineWriter):
    """One row per turn under `csv_header`; empty cells for values that are null."""

    def __init__(self, path: Path, evaluators: Sequence[str], *, append: bool = False) -> None:
        super().__init__(path, append=append)
        self._evaluators = list(evaluators)
        self._buffer = io.StringIO()
        self._csv = csv.writer(self._buffer, lineterminator=CSV_LINE_END)
        if self._out.empty:
            self._row(csv_header(self._evaluators))

    def _row(self, row: list[Any]) -> None:
        """Write one CSV row as one whole line, formula-like text neutralised (OWASP)."""
        self._buffer.seek(0)
        self._buffer.truncate()
        self._csv.writerow([neutralise(cell) for cell in row])
        self._out.line(self._buffer.getvalue())

    def write(self, result: TurnResult) -> None:
        """Append the turn's row."""
        self._row(_csv_cells(result, self._evaluators))


def _json_line(result: TurnResult) -> str:
    """The turn's `.jsonl` line, line end included."""
    return dumps_strict(result.to_record()) + "\n"


def _csv_cells(result: TurnResult, evaluators: Sequence[str]) -> list[Any]:
    """The turn's `.csv` cells under `csv_header(evaluators)`, before neutralising."""
    values = result.values()
    row: list[Any] = [result.turn.trace_id, result.turn.span_id, result.turn.query]
    for name in evaluators:
        value = values.get(name)
        score = result.scores.get(name)
        row += ["" if value is None else value, (score.label if score else None) or ""]
    row.append(details_json(result))
    return row


ENCODED_SUFFIXES: Final = (".jsonl", ".csv")
"""Formats whose rows `encode_rows` encodes away from the writer (`write_encoded` copies them)."""


def encode_rows(suffix: str, results: Sequence[TurnResult], evaluators: Sequence[str]) -> bytes:
    """The lines the `suffix` writer (`.jsonl` or `.csv`, header aside) writes for `results`,
    as UTF-8 bytes: what a Ray worker hands the driver to copy (`write_encoded`)."""
    if suffix == ".csv":
        buffer = io.StringIO()
        rows = csv.writer(buffer, lineterminator=CSV_LINE_END)
        rows.writerows([neutralise(cell) for cell in _csv_cells(r, evaluators)] for r in results)
        return buffer.getvalue().encode("utf-8")
    if suffix != ".jsonl":
        raise ValueError(f"cannot encode {suffix} rows; one of {', '.join(ENCODED_SUFFIXES)}")
    return "".join(_json_line(result) for result in results).encode("utf-8")
