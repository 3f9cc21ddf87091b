"""Spreadsheet safety (CSV injection): text cells never start a formula.

A cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by Excel,
LibreOffice and Google Sheets, so a query or answer recorded from a user could run one when the
report is opened. As OWASP recommends (CSV Injection cheat sheet), such a `.csv` cell gets a
leading single quote (and the csv module quotes and escapes the rest); `.xlsx` cells are always
written as strings, never formulas, and those cells also carry Excel's quote-prefix style, which
keeps them text when edited. The `.jsonl` and `.parquet` outputs keep the text unchanged.
"""

from __future__ import annotations

from typing import Final

__all__ = ["FORMULA_STARTS", "is_formula_like", "neutralise"]

FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP)."""


def is_formula_like(text: str) -> bool:
    """True when a spreadsheet would read `text` as a formula."""
    return text.startswith(FORMULA_STARTS)


def neutralise(value: object) -> object:
    """A CSV cell value: text that looks like a formula gets a leading `'`; others unchanged."""
    if isinstance(value, str) and is_formula_like(value):
        return "'" + value
    return value
