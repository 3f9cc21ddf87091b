"""`.xlsx` output: a `turns` sheet (one row per turn) and a `quotes` sheet (one row per quote).

Written with xlsxwriter in constant-memory mode (rows stream to disk), imported only when used.
Text is always written as a string cell, never a formula or a link; text that a spreadsheet would
read as a formula also gets the quote-prefix style (see `_cells`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from groundwire.offline._results import TurnResult
from groundwire.offline.writers._cells import is_formula_like
from groundwire.offline.writers._lines import csv_header, details_json

__all__ = ["XlsxWriter"]

_CELL_LIMIT: Final = 32_767
"""Excel's maximum characters in one cell."""
_QUOTE_COLUMNS: Final = (
    "trace_id",
    "span_id",
    "evaluator",
    "quote",
    "source_doc",
    "span_text",
    "match_ratio",
    "low_confidence",
    "global_start",
    "global_end",
)


def _cell(value: Any) -> Any:
    """A value Excel accepts: strings cut to the cell limit."""
    if isinstance(value, str) and len(value) > _CELL_LIMIT:
        return value[: _CELL_LIMIT - 1] + "…"
    return value


class XlsxWriter:
    """Streams turns to an Excel workbook; needs `xlsxwriter` (the `reports` extra)."""

    def __init__(self, path: Path, evaluators: Sequence[str], *, append: bool = False) -> None:
        if append:
            raise ValueError(f"{path}: --resume cannot append to an .xlsx file; use .jsonl or .csv")
        try:
            import xlsxwriter
        except ImportError:
            raise ImportError(
                "writing .xlsx needs xlsxwriter: pip install 'groundwire[reports]'"
            ) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._evaluators = list(evaluators)
        options = {"constant_memory": True, "strings_to_urls": False, "nan_inf_to_errors": True}
        self._book = xlsxwriter.Workbook(str(path), options)
        bold = self._book.add_format({"bold": True})
        self._text = self._book.add_format({"quote_prefix": True})
        self._turns = self._book.add_worksheet("turns")
        self._quotes = self._book.add_worksheet("quotes")
        for sheet, header in (
            (self._turns, csv_header(self._evaluators)),
            (self._quotes, _QUOTE_COLUMNS),
        ):
            for column, name in enumerate(header):
                sheet.write_string(0, column, name, bold)
        self._turns.freeze_panes(1, 0)
        self._row = 1
        self._quote_row = 1

    def write(self, result: TurnResult) -> None:
        """Add the turn's row, and one `quotes` row per quote located by an evaluator."""
        values = result.values()
        row: list[Any] = [result.turn.trace_id, result.turn.span_id, result.turn.query]
        for name in self._evaluators:
            score = result.scores.get(name)
            row += [values.get(name), score.label if score else None]
        row.append(details_json(result))
        self._write_row(self._turns, self._row, row)
        self._row += 1
        for name, score in result.scores.items():
            for quote in score.details.get("quotes") or ():
                if not isinstance(quote, dict):
                    continue
                cells = [result.turn.trace_id, result.turn.span_id, name]
                cells += [quote.get(column) for column in _QUOTE_COLUMNS[3:]]
                self._write_row(self._quotes, self._quote_row, cells)
                self._quote_row += 1

    def _write_row(self, sheet: Any, row: int, values: list[Any]) -> None:
        """Write a row: text as string cells (formula-like text quote-prefixed), the rest typed."""
        for column, value in enumerate(values):
            if isinstance(value, str):
                style = self._text if is_formula_like(value) else None
                sheet.write_string(row, column, _cell(value), style)
            elif value is None:
                continue
            else:
                sheet.write(row, column, value)

    def close(self, *, interrupted: bool = False) -> None:
        """Write the workbook (whatever rows were added, also when interrupted)."""
        self._book.close()
