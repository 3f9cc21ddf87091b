"""quote_stats and the reports: melted statistics CSV, Excel sorted by confidence."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from groundwire.evaluators import (
    QuoteMatch,
    quote_stats,
    verify_quotes,
    write_quotes_xlsx,
    write_stats_csv,
)

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
