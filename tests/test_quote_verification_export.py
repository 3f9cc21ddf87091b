"""quote_stats and the reports: melted statistics CSV, Excel sorted by confidence."""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from groundwire.evaluators import (
    QuoteMatch,
    quote_stats,
    verify_quotes,
    write_quotes_xlsx,
    write_stats_csv,
)
from groundwire.evaluators.quote_verification._export import XLSX_COLUMNS, sorted_by_confidence

DOCUMENTS = {
    "a": "The committee approved the plan after a long debate about costs and timing.",
    "b": "Critics said the plan ignored the needs of small towns across the region.",
}
QUOTES = [
    "approved the plan after a long debate",
    "the plan ignord the needs of smal towns",
    "The committee approved ... costs and timing",
    "completely invented statement about nothing",
]


@pytest.fixture(scope="module")
def rows() -> list[QuoteMatch]:
    """Rows for a mix of exact, typo, ellipsis and invented quotes (no embedder)."""
    return verify_quotes(QUOTES, DOCUMENTS, embedder=None)


def test_quote_stats_aggregates(rows: list[QuoteMatch]) -> None:
    """The card's statistics: counts, means/medians over present values, None when absent."""
    stats = quote_stats(rows)
    assert stats.n_quotes == 4
    assert stats.n_with_ellipses == 1
    assert stats.n_low_match_confidence == 1
    ratios = [row.match_ratio for row in rows]
    assert stats.mean_match_ratio == pytest.approx(sum(ratios) / 4)
    scores = [row.bm25_score for row in rows if row.bm25_score is not None]
    assert stats.mean_bm25_score == pytest.approx(sum(scores) / len(scores))
    assert stats.mean_cosine is None and stats.min_cosine is None
    spans = [len(row.span_text) for row in rows if row.source_doc is not None]
    assert stats.mean_span_length == pytest.approx(sum(spans) / len(spans))


def test_quote_stats_accepts_row_dicts_and_cosines(rows: list[QuoteMatch]) -> None:
    """Rows as dicts (e.g. from Score.details) work; cosine stats are min/max/mean/median."""
    dicts = [
        dict(row.to_dict(), cosine_similarity=c)
        for row, c in zip(rows, [0.2, 0.9, 0.5, 0.4], strict=True)
    ]
    stats = quote_stats(dicts)
    assert (stats.min_cosine, stats.max_cosine) == (0.2, 0.9)
    assert stats.median_cosine == pytest.approx(0.45)
    assert stats.mean_cosine == pytest.approx(0.5)


def test_quote_stats_of_nothing() -> None:
    """No rows: zero counts and None statistics."""
    stats = quote_stats([])
    assert stats.n_quotes == 0 and stats.mean_match_ratio is None


def test_quote_stats_rejects_other_items() -> None:
    """A row that is neither a QuoteMatch nor its dict is a TypeError naming the index."""
    with pytest.raises(TypeError, match=r"rows\[0\] must be a QuoteMatch"):
        quote_stats(["not a row"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"rows\[0\] is not a QuoteMatch dict"):
        quote_stats([{"quote": "x"}])


def test_stats_csv_is_melted(rows: list[QuoteMatch], tmp_path: Path) -> None:
    """The CSV has one statistic,value line per statistic, empty for None."""
    path = tmp_path / "stats.csv"
    write_stats_csv(rows, path)
    with path.open(newline="") as handle:
        lines = list(csv.reader(handle))
    assert lines[0] == ["statistic", "value"]
    table = dict(lines[1:])
    assert list(table) == list(quote_stats(rows).to_dict())
    assert table["n_quotes"] == "4" and table["mean_cosine"] == ""
    assert float(table["mean_match_ratio"]) == pytest.approx(quote_stats(rows).mean_match_ratio)


def test_excel_rows_sorted_lowest_confidence_first(rows: list[QuoteMatch], tmp_path: Path) -> None:
    """The quotes sheet lists rows by match ratio ascending, text columns wrapped; stats sheet."""
    path = tmp_path / "quotes.xlsx"
    write_quotes_xlsx(rows, path)
    book = openpyxl.load_workbook(path)
    sheet = book["quotes"]
    header = [cell.value for cell in sheet[1]]
    assert header[:4] == ["#", "quote", "source_doc", "span_text"]
    body = [[cell.value for cell in line] for line in sheet.iter_rows(min_row=2)]
    ratios = [line[header.index("match_ratio")] for line in body]
    assert ratios == sorted(ratios)
    assert body[0][header.index("quote")] == QUOTES[3]
    assert body[0][header.index("low_confidence")] is True
    assert sorted(line[0] for line in body) == [1, 2, 3, 4]
    assert sheet.cell(row=2, column=header.index("span_text") + 1).alignment.wrap_text
    assert sheet.cell(row=2, column=header.index("context_window") + 1).alignment.wrap_text
    stats = {line[0].value: line[1].value for line in book["stats"].iter_rows(min_row=2)}
    assert stats["n_quotes"] == 4 and stats["n_low_match_confidence"] == 1


def test_excel_without_xlsxwriter_says_how_to_install(tmp_path: Path) -> None:
    """Without xlsxwriter installed, the Excel export raises ImportError naming the extra."""
    script = (
        "import sys; sys.modules['xlsxwriter'] = None\n"
        "from groundwire.evaluators import verify_quotes, write_quotes_xlsx\n"
        "rows = verify_quotes(['a b c'], ['a b c'], embedder=None)\n"
        "try:\n"
        f"    write_quotes_xlsx(rows, {str(tmp_path / 'x.xlsx')!r})\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert "pip install 'groundwire[reports]'" in result.stdout
    assert not (tmp_path / "x.xlsx").exists()


def _column_widths(sheet: Any) -> dict[int, float]:
    """Column number (1-based) -> width, expanding openpyxl's grouped column ranges."""
    return {
        number: dim.width
        for dim in sheet.column_dimensions.values()
        for number in range(dim.min, dim.max + 1)
    }


def _column_wraps(sheet: Any) -> dict[int, bool]:
    """Column number (1-based) -> whether the column's default format wraps text."""
    return {
        number: bool(dim.alignment.wrap_text)
        for dim in sheet.column_dimensions.values()
        for number in range(dim.min, dim.max + 1)
    }


def test_excel_layout_headers_widths_formats_and_filter(tmp_path: Path) -> None:
    """Both sheets' layout: bold bordered headers, column widths and wrapping as XLSX_COLUMNS
    says, every cell top-aligned (blank cells too), numbers as 0.000, frozen header, autofilter
    over the rows, and the stats sheet's rows in order."""
    rows = verify_quotes(
        ["approved the plan after a long debate", "completely invented statement"],
        DOCUMENTS,
        embedder=None,
    )
    path = tmp_path / "layout.xlsx"
    write_quotes_xlsx(rows, path)
    book = openpyxl.load_workbook(path)
    sheet = book["quotes"]
    fields = ["#", *(field for field, _, _ in XLSX_COLUMNS)]
    assert [cell.value for cell in sheet[1]] == fields
    for cell in sheet[1]:
        assert cell.font.b is True
        assert cell.border.bottom.style == "thin"
        assert cell.alignment.vertical == "top"
    widths = _column_widths(sheet)
    wraps = _column_wraps(sheet)
    assert math.floor(widths[1]) == 5 and wraps[1] is False
    for dim in sheet.column_dimensions.values():
        assert dim.alignment.vertical == "top"
    for column, (_, width, wrapped) in enumerate(XLSX_COLUMNS, start=2):
        assert math.floor(widths[column]) == width
        assert wraps[column] is wrapped
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == "A1:P3"
    exact = next(line for line in sheet.iter_rows(min_row=2) if line[1].value == rows[0].quote)
    cells = dict(zip(fields, exact, strict=True))
    assert cells["#"].value == 1
    for cell in exact:
        assert cell.alignment.vertical == "top"
    for field, (_, _, wrapped) in zip(fields[1:], XLSX_COLUMNS, strict=True):
        if cells[field].data_type == "s":
            assert bool(cells[field].alignment.wrap_text) is wrapped
    assert cells["match_ratio"].number_format == "0.000"
    assert cells["doc_start"].value == rows[0].doc_start
    assert cells["doc_start"].number_format == "General"
    assert cells["low_confidence"].value is False
    assert cells["bm25_score"].value is None
    stats = book["stats"]
    assert [(cell.value, cell.font.b) for cell in stats[1]] == [
        ("statistic", True),
        ("value", True),
    ]
    stats_widths = _column_widths(stats)
    assert (math.floor(stats_widths[1]), math.floor(stats_widths[2])) == (26, 14)
    assert 3 not in stats_widths
    expected = list(quote_stats(rows).to_dict().items())
    assert [(a.value, b.value) for a, b in stats.iter_rows(min_row=2)] == expected


def test_excel_filter_covers_the_header_even_without_rows(tmp_path: Path) -> None:
    """An empty result still gets a header with an autofilter reaching one row below it."""
    one = verify_quotes(["approved the plan after a long debate"], DOCUMENTS, embedder=None)
    write_quotes_xlsx(one, tmp_path / "one.xlsx")
    assert openpyxl.load_workbook(tmp_path / "one.xlsx")["quotes"].auto_filter.ref == "A1:P2"
    write_quotes_xlsx([], tmp_path / "none.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "none.xlsx")["quotes"]
    assert sheet.auto_filter.ref == "A1:P2"
    assert sheet.max_row == 1


def test_excel_cuts_text_at_the_cell_limit_only_beyond_it(tmp_path: Path) -> None:
    """A text longer than Excel's 32,767-character cell limit is cut to the limit ending in an
    ellipsis; one of exactly the limit is written whole."""
    row = verify_quotes(["approved the plan after a long debate"], DOCUMENTS, embedder=None)[0]
    at_limit = "a" * 32_767
    too_long = "b" * 40_000
    rows = [
        dataclasses.replace(row, quote=at_limit, match_ratio=0.1),
        dataclasses.replace(row, quote=too_long, match_ratio=0.2),
    ]
    write_quotes_xlsx(rows, tmp_path / "long.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "long.xlsx")["quotes"]
    assert sheet["B2"].value == at_limit
    assert sheet["B3"].value == "b" * 32_766 + "…"


def test_excel_rejects_a_non_row_naming_its_index(tmp_path: Path) -> None:
    """write_quotes_xlsx refuses anything but QuoteMatch rows, naming the index and the type."""
    row = verify_quotes(["approved the plan after a long debate"], DOCUMENTS, embedder=None)[0]
    with pytest.raises(TypeError, match=r"^rows\[1\] must be a QuoteMatch, got dict$"):
        write_quotes_xlsx([row, row.to_dict()], tmp_path / "bad.xlsx")  # type: ignore[list-item]
    assert not (tmp_path / "bad.xlsx").exists()


def test_excel_import_error_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With xlsxwriter unimportable, the ImportError says exactly which extra installs it."""
    row = verify_quotes(["approved the plan after a long debate"], DOCUMENTS, embedder=None)[0]
    monkeypatch.setitem(sys.modules, "xlsxwriter", None)
    with pytest.raises(ImportError) as raised:
        write_quotes_xlsx([row], tmp_path / "x.xlsx")
    assert str(raised.value) == (
        "Excel export needs the xlsxwriter package: pip install 'groundwire[reports]'"
    )


def test_rows_sort_by_ratio_then_cosine_then_order() -> None:
    """Lowest match ratio first; equal ratios by lowest cosine, a missing cosine last; then the
    original order."""
    row = verify_quotes(["approved the plan after a long debate"], DOCUMENTS, embedder=None)[0]
    rows = [
        dataclasses.replace(row, match_ratio=0.5, cosine_similarity=None),
        dataclasses.replace(row, match_ratio=0.5, cosine_similarity=0.9),
        dataclasses.replace(row, match_ratio=0.5, cosine_similarity=2.5),
        dataclasses.replace(row, match_ratio=0.2, cosine_similarity=0.95),
        dataclasses.replace(row, match_ratio=0.5, cosine_similarity=0.3),
        dataclasses.replace(row, match_ratio=0.5, cosine_similarity=None),
    ]
    assert [index for index, _ in sorted_by_confidence(rows)] == [3, 4, 1, 0, 5, 2]


def test_quote_stats_bm25_means_and_medians_skip_missing_values(rows: list[QuoteMatch]) -> None:
    """BM25 score and ratio statistics are over the rows that have them, each its own list."""
    given = [
        dataclasses.replace(rows[0], bm25_score=1.0, bm25_ratio=3.0),
        dataclasses.replace(rows[1], bm25_score=2.0, bm25_ratio=None),
        dataclasses.replace(rows[2], bm25_score=None, bm25_ratio=5.0),
        dataclasses.replace(rows[3], bm25_score=6.0, bm25_ratio=10.0),
    ]
    stats = quote_stats(given)
    assert (stats.mean_bm25_score, stats.median_bm25_score) == (3.0, 2.0)
    assert (stats.mean_bm25_ratio, stats.median_bm25_ratio) == (6.0, 5.0)


def test_quote_stats_error_names_the_bad_type() -> None:
    """A row of the wrong type is refused with its index and its type's name."""
    with pytest.raises(
        TypeError, match=r"^rows\[0\] must be a QuoteMatch \(or its to_dict\(\)\), got int$"
    ):
        quote_stats([7])  # type: ignore[list-item]
