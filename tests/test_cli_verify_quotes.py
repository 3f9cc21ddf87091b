"""`groundwire verify-quotes`: file formats, table output, reports, errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import openpyxl
import pytest
from typer.testing import CliRunner

from groundwire.cli import app

runner = CliRunner()

DATA = Path(__file__).parent / "data" / "quotes"


def test_lines_file_with_reports(tmp_path: Path) -> None:
    """One quote per line, documents by stem; table on stdout, CSV and Excel written."""
    xlsx, stats = tmp_path / "r.xlsx", tmp_path / "s.csv"
    result = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(DATA / "quotes.txt"),
            "--docs",
            str(DATA / "docs" / "speech.txt"),
            str(DATA / "docs" / "report.md"),
            "--xlsx",
            str(xlsx),
            "--csv",
            str(stats),
            "--no-cosine",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "4 quotes in 2 documents" in result.output
    assert "speech" in result.output and "report" in result.output
    assert "3 of 4 quotes verified" in result.output
    assert openpyxl.load_workbook(xlsx)["quotes"].max_row == 5
    with stats.open(newline="") as handle:
        assert dict(list(csv.reader(handle))[1:])["n_quotes"] == "4"


def test_json_list_and_directory_with_json_output(tmp_path: Path) -> None:
    """A .json quotes file and a directory of documents; --json prints one JSON line per quote."""
    quotes = tmp_path / "q.json"
    quotes.write_text(json.dumps(["we shall fight on the beaches", "never surender"]))
    result = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(quotes),
            "--docs",
            str(DATA / "docs"),
            "--json",
            "--no-cosine",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]  # JSON lines, nothing else
    assert [row["source_doc"] for row in rows] == ["speech", "speech"]
    assert rows[1]["span_text"] == "never surrender"


def test_docs_option_can_repeat() -> None:
    """--docs may be repeated as well as followed by several paths."""
    result = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(DATA / "quotes.txt"),
            "--docs",
            str(DATA / "docs" / "speech.txt"),
            "--docs",
            str(DATA / "docs" / "report.md"),
            "--no-cosine",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "4 quotes in 2 documents" in result.output


@pytest.mark.parametrize(
    ("quotes_text", "name", "message"),
    [
        ("{not json", "q.json", "not valid JSON"),
        ('{"a": 1}', "q.json", "expected a JSON list of strings, got dict"),
        ('["ok", 3]', "q.json", "item 1 must be a non-empty string"),
    ],
)
def test_bad_quotes_file_is_reported(
    tmp_path: Path, quotes_text: str, name: str, message: str
) -> None:
    """A malformed quotes file exits 2 with a message naming the file and the problem."""
    quotes = tmp_path / name
    quotes.write_text(quotes_text)
    result = runner.invoke(
        app, ["verify-quotes", "--quotes", str(quotes), "--docs", str(DATA / "docs")]
    )
    assert result.exit_code == 2
    assert message in result.output and name in result.output


def test_missing_document_and_duplicate_names_are_reported(tmp_path: Path) -> None:
    """A missing path or two documents with one stem exit 2 naming the files."""
    missing = runner.invoke(
        app, ["verify-quotes", "--quotes", str(DATA / "quotes.txt"), "--docs", "nope.txt"]
    )
    assert missing.exit_code == 2 and "document nope.txt does not exist" in missing.output
    (tmp_path / "speech.md").write_text("other")
    duplicate = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(DATA / "quotes.txt"),
            "--docs",
            str(DATA / "docs" / "speech.txt"),
            str(tmp_path / "speech.md"),
        ],
    )
    assert duplicate.exit_code == 2 and "have the same name" in duplicate.output


def test_bad_option_value_is_reported() -> None:
    """An invalid matching option exits 2 with the library's message."""
    result = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(DATA / "quotes.txt"),
            "--docs",
            str(DATA / "docs"),
            "--trim-method",
            "magic",
        ],
    )
    assert result.exit_code == 2 and "trim_method must be one of" in result.output


def test_help_documents_the_formats() -> None:
    """--help explains the options."""
    result = runner.invoke(app, ["verify-quotes", "--help"])
    assert result.exit_code == 0
    assert "--quotes" in result.output and "--xlsx" in result.output
    assert "JSON list of strings" in result.output


def test_brackets_in_quotes_are_printed_literally(tmp_path: Path) -> None:
    """Quote text that looks like rich markup is shown as is, not swallowed."""
    quotes = tmp_path / "q.txt"
    quotes.write_text("[bold]we shall fight[/bold] on the beaches\n")
    result = runner.invoke(
        app,
        ["verify-quotes", "--quotes", str(quotes), "--docs", str(DATA / "docs"), "--no-cosine"],
    )
    assert result.exit_code == 0, result.output
    assert "[bold]" in result.output and "[/bold]" in result.output


def test_formula_like_quotes_stay_text_in_excel(tmp_path: Path) -> None:
    """A quote that looks like a formula is a string cell in the Excel report, never a formula."""
    attack = '=HYPERLINK("http://evil.example","click")'
    quotes = tmp_path / "q.json"
    quotes.write_text(json.dumps([attack, "+1 and -2"]))
    doc = tmp_path / "doc.txt"
    doc.write_text(f"The cell said {attack} and then +1 and -2 were added.")
    xlsx = tmp_path / "r.xlsx"
    result = runner.invoke(
        app,
        [
            "verify-quotes",
            "--quotes",
            str(quotes),
            "--docs",
            str(doc),
            "--xlsx",
            str(xlsx),
            "--no-cosine",
        ],
    )
    assert result.exit_code == 0, result.output
    book = openpyxl.load_workbook(xlsx)
    cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
    assert not [cell.coordinate for cell in cells if cell.data_type == "f"]
    assert attack in [cell.value for cell in cells]


def _folder_with_quotes(tmp_path: Path) -> Path:
    """A folder holding one document and, beside it, a quotes file with an invented quote."""
    (tmp_path / "speech.txt").write_text("We shall fight on the beaches, we shall not surrender.")
    (tmp_path / "quotes.txt").write_text("we shall fight on the beaches\nthe moon is cheese\n")
    return tmp_path


def test_quotes_file_in_the_docs_folder_is_not_a_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--quotes quotes.txt --docs .`: the quotes file is left out, the invented quote fails."""
    monkeypatch.chdir(_folder_with_quotes(tmp_path))
    result = runner.invoke(
        app, ["verify-quotes", "--quotes", "quotes.txt", "--docs", ".", "--no-cosine", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows[0]["source_doc"] == "speech"
    assert "quotes" not in {row["source_doc"] for row in rows}
    assert "1 of 2 quotes verified" in result.stderr


def test_quotes_file_named_as_a_document_is_refused(tmp_path: Path) -> None:
    """The quotes file given as a document too: exit 2, one line."""
    folder = _folder_with_quotes(tmp_path)
    quotes = str(folder / "quotes.txt")
    result = runner.invoke(app, ["verify-quotes", "--quotes", quotes, "--docs", quotes])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: the quotes file {quotes} cannot also be a document"
    ]


@pytest.mark.parametrize("name", ["stats.txt", "stats.csv"])
def test_an_output_in_the_docs_folder_is_never_read_nor_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Run twice writing --csv into the docs folder: the second run does not read it or refuse."""
    monkeypatch.chdir(_folder_with_quotes(tmp_path))
    args = ["verify-quotes", "--quotes", "quotes.txt", "--docs", ".", "--no-cosine"]
    for _ in range(2):
        result = runner.invoke(app, [*args, "--csv", name])
        assert result.exit_code == 0, result.output
        assert "2 quotes in 1 documents" in " ".join(result.stdout.split()), result.stdout
    assert (tmp_path / name).is_file()
