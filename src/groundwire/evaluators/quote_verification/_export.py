"""Reports: the statistics as a melted CSV, the rows as an Excel sheet (lowest confidence first).

Excel goes through xlsxwriter, the `reports` extra, imported only when used.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from typing import Any

from groundwire.evaluators.quote_verification._rows import QuoteMatch
from groundwire.evaluators.quote_verification._stats import QuoteStats, quote_stats

__all__ = ["XLSX_COLUMNS", "sorted_by_confidence", "write_quotes_xlsx", "write_stats_csv"]

_EXCEL_CELL_LIMIT = 32_767
XLSX_COLUMNS: tuple[tuple[str, int, bool], ...] = (
    # (field, column width, wrap text)
    ("quote", 50, True),
    ("source_doc", 16, False),
    ("span_text", 50, True),
    ("match_ratio", 12, False),
    ("low_confidence", 14, False),
    ("low_confidence_reason", 40, True),
    ("cosine_similarity", 16, False),
    ("bm25_score", 12, False),
    ("bm25_ratio", 12, False),
    ("match_kind", 11, False),
    ("doc_start", 10, False),
    ("doc_end", 10, False),
    ("global_start", 12, False),
    ("global_end", 12, False),
    ("context_window", 80, True),
)
"""The quotes sheet's columns after the row number, in order."""


def _stats_of(rows_or_stats: Sequence[QuoteMatch] | QuoteStats) -> QuoteStats:
    """Statistics given directly or computed from rows."""
    if isinstance(rows_or_stats, QuoteStats):
        return rows_or_stats
    return quote_stats(rows_or_stats)


def write_stats_csv(
    rows_or_stats: Sequence[QuoteMatch] | QuoteStats, path: str | os.PathLike[str]
) -> None:
    """Write the aggregate statistics melted, one `statistic,value` line each (empty for None)."""
    stats = _stats_of(rows_or_stats).to_dict()
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["statistic", "value"])
        for name, value in stats.items():
            writer.writerow([name, "" if value is None else value])


def sorted_by_confidence(rows: Sequence[QuoteMatch]) -> list[tuple[int, QuoteMatch]]:
    """(original index, row) pairs, lowest match ratio first (then lowest cosine, then order)."""
    return sorted(
        enumerate(rows),
        key=lambda item: (
            item[1].match_ratio,
            item[1].cosine_similarity if item[1].cosine_similarity is not None else 2.0,
            item[0],
        ),
    )


def _import_xlsxwriter() -> Any:
    """Import xlsxwriter, or say which extra installs it."""
    try:
        import xlsxwriter
    except ImportError as error:
        raise ImportError(
            "Excel export needs the xlsxwriter package: pip install 'groundwire[reports]'"
        ) from error
    return xlsxwriter


def _cell(value: object) -> object:
    """A value Excel accepts in a cell (strings cut to its 32,767-character limit)."""
    if isinstance(value, str) and len(value) > _EXCEL_CELL_LIMIT:
        return value[: _EXCEL_CELL_LIMIT - 1] + "…"
    return value


def write_quotes_xlsx(rows: Sequence[QuoteMatch], path: str | os.PathLike[str]) -> None:
    """Write an Excel workbook: sheet "quotes" (rows, lowest confidence first, text wrapped) and
    sheet "stats" (the aggregate statistics)."""
    for index, row in enumerate(rows):
        if not isinstance(row, QuoteMatch):
            raise TypeError(f"rows[{index}] must be a QuoteMatch, got {type(row).__name__}")
    xlsxwriter = _import_xlsxwriter()
    workbook = xlsxwriter.Workbook(os.fspath(path))
    try:
        header = workbook.add_format({"bold": True, "bottom": 1, "valign": "top"})
        wrap = workbook.add_format({"text_wrap": True, "valign": "top"})
        plain = workbook.add_format({"valign": "top"})
        number = workbook.add_format({"valign": "top", "num_format": "0.000"})
        sheet = workbook.add_worksheet("quotes")
        sheet.write(0, 0, "#", header)
        sheet.set_column(0, 0, 5, plain)
        for column, (field, width, wrapped) in enumerate(XLSX_COLUMNS, start=1):
            sheet.write(0, column, field, header)
            sheet.set_column(column, column, width, wrap if wrapped else plain)
        for line, (index, row) in enumerate(sorted_by_confidence(rows), start=1):
            sheet.write_number(line, 0, index + 1, plain)
            data = row.to_dict()
            for column, (field, _, wrapped) in enumerate(XLSX_COLUMNS, start=1):
                value = data[field]
                if value is None:
                    sheet.write_blank(line, column, None, plain)
                elif isinstance(value, bool):
                    sheet.write_boolean(line, column, value, plain)
                elif isinstance(value, float):
                    sheet.write_number(line, column, value, number)
                elif isinstance(value, int):
                    sheet.write_number(line, column, value, plain)
                else:
                    sheet.write_string(line, column, _cell(value), wrap if wrapped else plain)
        sheet.freeze_panes(1, 0)
        sheet.autofilter(0, 0, max(len(rows), 1), len(XLSX_COLUMNS))
        stats_sheet = workbook.add_worksheet("stats")
        stats_sheet.write_row(0, 0, ["statistic", "value"], header)
        stats_sheet.set_column(0, 0, 26)
        stats_sheet.set_column(1, 1, 14)
        for line, (name, value) in enumerate(quote_stats(rows).to_dict().items(), start=1):
            stats_sheet.write_string(line, 0, name)
            if value is None:
                stats_sheet.write_blank(line, 1, None)
            else:
                stats_sheet.write_number(line, 1, value)
    finally:
        workbook.close()
