"""The HTML report and the verify-quotes table show what a misquote changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire import Context, RagTurn
from groundwire.cli import app
from groundwire.cli._verify_quotes import _changes
from groundwire.evaluators import QuoteVerification, verify_quotes, write_quotes_xlsx
from groundwire.offline._results import TurnResult
from groundwire.offline.writers._html import HtmlReportWriter

SOURCE = (
    "The library began in 1887 as a reading room, stocked with four hundred volumes donated "
    "by the shipping families. Members shall not remove books from the reading hall."
)


def _report(tmp_path: Path, answer: str) -> str:
    """The HTML report of one turn scored by quote_verification."""
    turn = RagTurn(query="history?", contexts=[Context(text=SOURCE, id="history")], answer=answer)
    score = QuoteVerification(embedder=None).evaluate(turn)
    writer = HtmlReportWriter(tmp_path / "r.html", ["quote_verification"])
    writer.write(TurnResult(turn, {"quote_verification": score}))
    writer.close()
    return (tmp_path / "r.html").read_text(encoding="utf-8")


def test_html_report_strikes_source_words_and_names_the_change(tmp_path: Path) -> None:
    """A dropped number word is struck, the change outlined and named; typos marked too."""
    html = _report(
        tmp_path,
        "It had “four volumes donated by the shipping families” and “Members shall not "
        "remvoe books”.",
    )
    assert "Quotes that differ from their source" in html
    assert re.search(r'<del title="dropped: number changed" class="meaning">hundred</del>', html)
    assert "number changed: &#x27;four hundred&#x27; -&gt; &#x27;four&#x27;" in html
    assert '<del title="typo">remove</del><ins title="typo">remvoe</ins>' in html


def test_html_report_has_no_diff_for_verbatim_quotes(tmp_path: Path) -> None:
    """Exact quotes need no diff section."""
    html = _report(tmp_path, "It had “four hundred volumes donated by the shipping families”.")
    assert "Quotes that differ from their source" not in html


def test_verify_quotes_table_shows_the_diff_and_the_change(tmp_path: Path) -> None:
    """Under the rich table, one line per quote with edits: -source, +quote, the reason."""
    quotes = tmp_path / "q.txt"
    quotes.write_text("Members shall remove books from the reading hall\n", encoding="utf-8")
    doc = tmp_path / "rules.txt"
    doc.write_text(SOURCE, encoding="utf-8")
    result = CliRunner().invoke(
        app, ["verify-quotes", "--quotes", str(quotes), "--docs", str(doc), "--no-cosine"]
    )
    assert result.exit_code == 0, result.output
    assert "differences from the source (-source words, +quote words):" in result.output
    assert "  1. -not; negation changed: 'shall not' -> 'shall'" in result.output
    (row,) = verify_quotes(
        ["stocked with four volumes donated by the shipping famlies"], {"d": SOURCE}, embedder=None
    )
    assert _changes(row) == (
        "[red strike]-hundred[/]; [red strike]-families[/] [green]+famlies[/]; "
        "[bold red]number changed: 'four hundred' -> 'four'[/]"
    )
    (exact,) = verify_quotes(["Members shall not remove books"], {"d": SOURCE}, embedder=None)
    assert _changes(exact) == "-"


def test_excel_sheet_has_the_reason_column(tmp_path: Path) -> None:
    """The Excel quotes sheet says why each unverified quote is not verified."""
    openpyxl = pytest.importorskip("openpyxl")
    rows = verify_quotes(
        ["Members shall remove books from the reading hall", "Members shall not remove books"],
        {"d": SOURCE},
        embedder=None,
    )
    write_quotes_xlsx(rows, tmp_path / "q.xlsx")
    sheet = openpyxl.load_workbook(tmp_path / "q.xlsx")["quotes"]
    header = [cell.value for cell in sheet[1]]
    column = header.index("low_confidence_reason")
    reasons = [line[column].value for line in sheet.iter_rows(min_row=2)]
    assert reasons == ["negation changed: 'shall not' -> 'shall'", None]
