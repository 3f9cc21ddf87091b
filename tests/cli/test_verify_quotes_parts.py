"""`groundwire verify-quotes`' parts, each pinned: reading quotes and documents, the table cells,
the word edits, the outputs and the totals line."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._verify_quotes import (
    InputError,
    _number,
    _same_file,
    _short,
    document_files,
    read_documents,
    read_quotes,
)

SPEECH = "we shall fight on the beaches, we shall fight on the landing grounds"


def test_quotes_one_per_line_or_a_json_list(tmp_path: Path) -> None:
    """Lines stripped and blank ones skipped; `.json` (any case) is a list of strings."""
    lines = tmp_path / "q.txt"
    lines.write_text("  one quote \n\n two\n   \n", encoding="utf-8")
    assert read_quotes(lines) == ["one quote", "two"]
    listed = tmp_path / "q.JSON"
    listed.write_text(json.dumps([" a b ", "c"]), encoding="utf-8")
    assert read_quotes(listed) == [" a b ", "c"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{bad", "not valid JSON (Expecting property name"),
        ('{"a": 1}', "expected a JSON list of strings, got dict"),
        ('["ok", 3]', "item 1 must be a non-empty string, got 3"),
        ('["ok", "  "]', "item 1 must be a non-empty string, got '  '"),
    ],
)
def test_a_bad_json_quotes_file_names_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    """Each problem says the file and what is wrong."""
    path = tmp_path / "q.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_quotes(path)
    assert str(caught.value).startswith(f"{path}: {message}")


def test_an_unreadable_quotes_file(tmp_path: Path) -> None:
    """Missing or not UTF-8: `cannot read quotes file`."""
    with pytest.raises(InputError, match="cannot read quotes file"):
        read_quotes(tmp_path / "none.txt")
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9\n")
    with pytest.raises(InputError) as caught:
        read_quotes(latin)
    assert str(caught.value).startswith(f"cannot read quotes file {latin}: 'utf-8' codec")


def test_same_file_sees_through_links_and_missing_files(tmp_path: Path) -> None:
    """A link and its target are one file; paths to nothing compare resolved."""
    target = tmp_path / "a.txt"
    target.write_text("x")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    assert _same_file(link, target)
    assert not _same_file(target, tmp_path / "b.txt")
    assert _same_file(tmp_path / "none.txt", tmp_path / "." / "none.txt")
    assert not _same_file(tmp_path / "none.txt", tmp_path / "other.txt")


def test_a_directory_stands_for_its_text_and_markdown_files(tmp_path: Path) -> None:
    """`.txt` and `.md` (any case) in name order; not the quotes file nor an output."""
    for name in ("b.txt", "a.MD", "c.csv", "quotes.txt", "out.txt"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub.txt").mkdir()
    files = document_files(
        [tmp_path], quotes=tmp_path / "quotes.txt", outputs=[tmp_path / "out.txt"]
    )
    assert [path.name for path in files] == ["a.MD", "b.txt"]
    single = document_files([tmp_path / "c.csv"], quotes=tmp_path / "q.txt", outputs=[])
    assert single == [tmp_path / "c.csv"]


def test_document_paths_that_cannot_be_documents(tmp_path: Path) -> None:
    """An empty directory, the quotes file, a missing path: each refused with its line."""
    empty = tmp_path / "empty"
    empty.mkdir()
    quotes = tmp_path / "q.txt"
    quotes.write_text("x")
    cases = [
        (empty, f"directory {empty} has no .txt or .md files"),
        (quotes, f"the quotes file {quotes} cannot also be a document"),
        (tmp_path / "no.txt", f"document {tmp_path / 'no.txt'} does not exist"),
    ]
    for path, message in cases:
        with pytest.raises(InputError) as caught:
            document_files([path], quotes=quotes, outputs=[])
        assert str(caught.value) == message


def test_documents_by_stem_in_order(tmp_path: Path) -> None:
    """Each document under its file's stem; two with one stem, or bad UTF-8, refused."""
    first, second = tmp_path / "b.txt", tmp_path / "a.md"
    first.write_text("one", encoding="utf-8")
    second.write_text("two", encoding="utf-8")
    assert list(read_documents([first, second]).items()) == [("b", "one"), ("a", "two")]
    same = tmp_path / "b.md"
    same.write_text("x")
    with pytest.raises(InputError) as caught:
        read_documents([first, same])
    assert str(caught.value) == f"documents {first} and {same} have the same name"
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"caf\xe9")
    with pytest.raises(InputError) as caught:
        read_documents([latin])
    assert str(caught.value).startswith(f"cannot read document {latin}: 'utf-8' codec")


def test_cells_are_short_one_line_and_escaped() -> None:
    """60 characters at most (59 and an ellipsis), white space folded, markup escaped."""
    assert _short(" a\n b ") == "a b"
    assert _short("x" * 60) == "x" * 60
    assert _short("x" * 61) == "x" * 59 + "…"
    assert _short("[b]") == "\\[b]"


def test_numbers_in_cells() -> None:
    """Two places (or as asked), a dash for none, >999 for a huge ratio."""
    assert _number(None) == "-"
    assert _number(0.5) == "0.50"
    assert _number(0.12345, 3) == "0.123"
    assert _number(999.0) == "999.00"
    assert _number(999.5) == ">999"


def _verify(tmp_path: Path, *quotes: str, extra: tuple[str, ...] = ()) -> object:
    quotes_file = tmp_path / "q.txt"
    quotes_file.write_text("\n".join(quotes), encoding="utf-8")
    doc = tmp_path / "speech.txt"
    doc.write_text(SPEECH, encoding="utf-8")
    return CliRunner().invoke(
        app,
        ["verify-quotes", "--quotes", str(quotes_file), "--docs", str(doc), "--no-cosine", *extra],
        env={"COLUMNS": "300"},
    )


def test_the_table_and_the_edits(tmp_path: Path) -> None:
    """A row per quote; quotes with word edits listed after the table, -source +quote."""
    result = _verify(tmp_path, "we shall fight on", "we shall fight in the hills")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    out = result.stdout  # type: ignore[attr-defined]
    assert "2 quotes in 1 documents" in out
    assert (
        "│ 1 │ we shall fight on           │ speech │ we shall fight on     │ 1.00  │ -      │ "
        "-          │ yes │"
    ) in out
    assert (
        "│ 2 │ we shall fight in the hills │ speech │ we shall fight on the │ 0.78  │ -      │ "
        "0.86       │ yes │"
    ) in out
    lines = out.splitlines()
    start = lines.index("differences from the source (-source words, +quote words):")
    assert lines[start + 1 :] == ["  2. -on +in; +hills"]
    assert result.stderr == "2 of 2 quotes verified; mean match ratio 0.890\n"  # type: ignore[attr-defined]


def test_a_verbatim_run_lists_no_differences(tmp_path: Path) -> None:
    """No edits: no differences block."""
    result = _verify(tmp_path, "we shall fight on the beaches")
    assert "differences from the source" not in result.stdout  # type: ignore[attr-defined]


def test_the_files_written_are_said(tmp_path: Path) -> None:
    """`wrote Excel report PATH` and `wrote statistics CSV PATH` on stderr, as given."""
    xlsx, csv = tmp_path / "r.xlsx", tmp_path / "s[1].csv"
    result = _verify(tmp_path, "we shall fight on", extra=("--xlsx", str(xlsx), "--csv", str(csv)))
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert result.stderr.splitlines()[1:] == [  # type: ignore[attr-defined]
        f"wrote Excel report {xlsx}",
        f"wrote statistics CSV {csv}",
    ]
    assert xlsx.read_bytes()[:2] == b"PK"
    assert csv.read_text().startswith("statistic,value")


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    """--csv on the quotes file or a document, or --xlsx without .xlsx: exit 2."""
    quotes = tmp_path / "q.txt"
    result = _verify(tmp_path, "x", extra=("--csv", str(quotes)))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert f"--csv {quotes} is the --quotes file {quotes}" in result.stderr  # type: ignore[attr-defined]
    doc = tmp_path / "speech.txt"
    result = _verify(tmp_path, "x", extra=("--xlsx", str(doc)))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert f"--xlsx {doc} is the document {doc}" in result.stderr  # type: ignore[attr-defined]
    result = _verify(tmp_path, "x", extra=("--xlsx", str(tmp_path / "r.csv")))
    assert result.stderr == (  # type: ignore[attr-defined]
        f"error: --xlsx: {tmp_path / 'r.csv'} should end in .xlsx (Excel would not open it "
        "otherwise)\n"
    )


def test_json_lines_and_options_reach_the_verifier(tmp_path: Path) -> None:
    """--json prints a row per quote; --min-fuzzy-ratio and --ellipsis-max-gap are used."""
    result = _verify(
        tmp_path, "we shall fight in the hills", extra=("--json", "--min-fuzzy-ratio", "0.95")
    )
    rows = [json.loads(line) for line in result.stdout.splitlines()]  # type: ignore[attr-defined]
    assert [(row["quote"], row["low_confidence"]) for row in rows] == [
        ("we shall fight in the hills", True)
    ]
    whole = _verify(tmp_path, "we shall ... landing grounds", extra=("--json",))
    assert json.loads(whole.stdout)["span_text"] == "we shall fight on the landing grounds"  # type: ignore[attr-defined]
    gap = _verify(
        tmp_path, "we shall ... landing grounds", extra=("--json", "--ellipsis-max-gap", "5")
    )
    assert json.loads(gap.stdout)["span_text"] == "landing grounds"  # type: ignore[attr-defined]


# --- survivors of the first mutation run -------------------------------------------------------

YEAR = "we shall fight on the beaches, we shall fight on the landing grounds in 1940"


def _verify_in(tmp_path: Path, speech: str, *quotes: str, extra: tuple[str, ...] = ()) -> Any:
    """verify-quotes over one document `speech.txt` holding `speech`."""
    quotes_file = tmp_path / "q.txt"
    quotes_file.write_text("\n".join(quotes), encoding="utf-8")
    doc = tmp_path / "speech.txt"
    doc.write_text(speech, encoding="utf-8")
    args = ["verify-quotes", "--quotes", str(quotes_file), "--docs", str(doc), "--no-cosine"]
    return CliRunner().invoke(app, [*args, *extra], env={"COLUMNS": "300"})


def test_the_table_headers_and_a_quote_not_found(tmp_path: Path) -> None:
    """Column headers as documented; a quote found nowhere: dashes and `no`."""
    result = _verify_in(tmp_path, YEAR, "zebra xylophone quartz violin")
    lines = result.stdout.splitlines()
    assert " ".join(lines[2].split()) == (
        "┃ # ┃ quote ┃ source ┃ span ┃ match ┃ cosine ┃ bm25 ratio ┃ ok ┃"
    )
    assert " ".join(lines[4].split()) == (
        "│ 1 │ zebra xylophone quartz violin │ - │ - │ 0.00 │ - │ - │ no │"
    )
    assert result.stderr == "0 of 1 quotes verified; mean match ratio 0.000\n"


def test_word_edits_and_meaning_changes(tmp_path: Path) -> None:
    """A dropped word is `-word` alone; a changed number adds what the misquote changed."""
    result = _verify_in(
        tmp_path,
        YEAR,
        "we shall fight the beaches",
        "we shall fight on the landing grounds in 1941",
    )
    lines = result.stdout.splitlines()
    start = lines.index("differences from the source (-source words, +quote words):")
    assert lines[start + 1 :] == [
        "  1. -on; +beaches",
        "  2. -1940 +1941; number changed: '1940' -> '1941'",
    ]
    assert result.stderr == "1 of 2 quotes verified; mean match ratio 0.858\n"


def test_narrow_terminals_fold_cells(tmp_path: Path) -> None:
    """Cells fold onto more lines rather than being cut with an ellipsis."""
    quotes = tmp_path / "q.txt"
    quotes.write_text("we shall fight on the landing grounds in 1940", encoding="utf-8")
    doc = tmp_path / "speech.txt"
    doc.write_text(YEAR, encoding="utf-8")
    args = ["verify-quotes", "--quotes", str(quotes), "--docs", str(doc), "--no-cosine"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "70"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert "1940" in result.stdout


def test_colour_terminal_lines_are_not_highlighted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits, totals and `wrote` lines print their text as it is, also on a colour terminal."""
    import groundwire.cli._verify_quotes as module

    out, err = io.StringIO(), io.StringIO()
    kwargs: dict[str, Any] = {"force_terminal": True, "width": 300, "color_system": "standard"}
    monkeypatch.setattr(module, "console", Console(file=out, **kwargs))
    monkeypatch.setattr(module, "err_console", Console(file=err, **kwargs))
    csv = tmp_path / "s[b] 1.csv"
    result = _verify_in(tmp_path, YEAR, "we shall fight the beaches", extra=("--csv", str(csv)))
    assert result.exit_code == 0, result.output
    assert "  1. \x1b[9;31m-on\x1b[0m; \x1b[32m+beaches\x1b[0m\n" in out.getvalue()
    assert err.getvalue() == (
        f"1 of 1 quotes verified; mean match ratio 0.783\nwrote statistics CSV {csv}\n"
    )


def test_document_problems_on_the_command_line(tmp_path: Path) -> None:
    """A missing document is one line naming it, exit 2."""
    quotes = tmp_path / "q.txt"
    quotes.write_text("x", encoding="utf-8")
    missing = tmp_path / "none.txt"
    args = ["verify-quotes", "--quotes", str(quotes), "--docs", str(missing), "--no-cosine"]
    result = CliRunner().invoke(app, args)
    assert (result.exit_code, result.stderr) == (2, f"error: document {missing} does not exist\n")


def test_an_output_inside_the_docs_folder_is_not_a_document(tmp_path: Path) -> None:
    """--csv into the --docs folder: the next run does not read it as a document."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "speech.txt").write_text(YEAR, encoding="utf-8")
    quotes = tmp_path / "q.txt"
    quotes.write_text("we shall fight on", encoding="utf-8")
    args = ["verify-quotes", "--quotes", str(quotes), "--docs", str(docs), "--no-cosine"]
    for _ in range(2):
        result = CliRunner().invoke(app, [*args, "--csv", str(docs / "stats.txt")])
        assert result.exit_code == 0, result.output
        assert "1 quotes in 1 documents" in result.stdout


def test_the_trim_method_reaches_the_verifier(tmp_path: Path) -> None:
    """An unknown --trim-method is refused by the verifier (it was passed on)."""
    result = _verify_in(tmp_path, YEAR, "we shall", extra=("--trim-method", "nope"))
    assert result.exit_code == 2
    assert "trim_method must be one of" in result.stderr
