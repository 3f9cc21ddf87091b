"""`groundwire verify-quotes`: locate quotes in text files and report (table, CSV, Excel).

The quotes file is a JSON list of strings when its name ends in `.json`, otherwise one quote per
line (blank lines skipped). Each document is a UTF-8 text file named by its stem; a directory
stands for its `*.txt` and `*.md` files in name order, never the quotes file or an output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from groundwire.evaluators.quote_verification import QuoteMatch

from groundwire.cli._app import app, console, err_console
from groundwire.cli._errors import bad_argument, guarded
from groundwire.cli._exit import help_epilog
from groundwire.offline import dumps_strict
from groundwire.offline.writers import OutputTarget, check_output_paths

_SHORT = 60
_DOC_SUFFIXES = (".txt", ".md")


class InputError(Exception):
    """A bad input file; the message names the file and the problem."""


def read_quotes(path: Path) -> list[str]:
    """Quotes from a JSON list (`.json`) or one per line."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read quotes file {path}: {error}") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}: not valid JSON ({error})") from None
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of strings, got {type(data).__name__}")
        for index, item in enumerate(data):
            if not isinstance(item, str) or not item.strip():
                raise InputError(f"{path}: item {index} must be a non-empty string, got {item!r}")
        return list(data)
    return [line.strip() for line in raw.splitlines() if line.strip()]


def _same_file(a: Path, b: Path) -> bool:
    """True when `a` and `b` name one file (links and relative paths seen through)."""
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def document_files(paths: list[Path], *, quotes: Path, outputs: list[Path]) -> list[Path]:
    """The files the --docs paths stand for (a directory: its .txt and .md files).

    The quotes file and the outputs are never documents: a directory's listing leaves them out
    (a quote would otherwise be found verbatim in its own file and reported verified), and the
    quotes file named as a document is an error.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                child
                for child in path.iterdir()
                if child.suffix.lower() in _DOC_SUFFIXES
                and child.is_file()
                and not any(_same_file(child, other) for other in (quotes, *outputs))
            )
            if not found:
                raise InputError(f"directory {path} has no .txt or .md files")
            files.extend(found)
        elif path.is_file():
            if _same_file(path, quotes):
                raise InputError(f"the quotes file {path} cannot also be a document")
            files.append(path)
        else:
            raise InputError(f"document {path} does not exist")
    return files


def read_documents(files: list[Path]) -> dict[str, str]:
    """Documents by file stem, in the order given; two files with one stem are an error."""
    documents: dict[str, str] = {}
    origin: dict[str, Path] = {}
    for path in files:
        if path.stem in documents:
            raise InputError(f"documents {origin[path.stem]} and {path} have the same name")
        try:
            documents[path.stem] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"cannot read document {path}: {error}") from None
        origin[path.stem] = path
    return documents


def _short(text: str) -> str:
    """Whitespace-collapsed text cut for a table cell, markup escaped."""
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= _SHORT else flat[: _SHORT - 1] + "…")


def _changes(row: QuoteMatch) -> str:
    """The quote's word edits: source words struck in red (-), quote words in green (+), then
    what a misquote changed ('-' alone for a verbatim quote)."""
    shown = []
    for edit in row.edits:
        source = f"[red strike]-{escape(edit.source_text)}[/]" if edit.source_text else ""
        quote = f"[green]+{escape(edit.quote_text)}[/]" if edit.quote_text else ""
        shown.append(" ".join(part for part in (source, quote) if part))
    if row.meaning_changes and row.low_confidence_reason:
        shown.append(f"[bold red]{escape(row.low_confidence_reason)}[/]")
    return "; ".join(shown) or "-"


def _number(value: float | None, digits: int = 2) -> str:
    """A table cell for a number ('-' for None, '>999' for huge BM25 ratios)."""
    if value is None:
        return "-"
    return ">999" if value > 999 else f"{value:.{digits}f}"


def _check_outputs(quotes: Path, files: list[Path], xlsx: Path | None, csv: Path | None) -> None:
    """Refuse an output that is the quotes file, a document or the other output (exit 2)."""
    outputs = [(flag, path) for flag, path in (("--xlsx", xlsx), ("--csv", csv)) if path]
    inputs: list[tuple[str, Path]] = [("--quotes file", quotes)]
    inputs.extend(("document", path) for path in files)
    try:
        check_output_paths(outputs, inputs)
    except ValueError as error:
        bad_argument(str(error))


def _write_safely(path: Path, write: Callable[[Path], None]) -> None:
    """Write beside `path` and move into place, so a failure leaves an existing file as it was."""
    target = OutputTarget(path)
    target.prepare()
    try:
        write(target.write_path)
    except BaseException:
        target.abandon(0)
        raise
    target.commit()


@app.command("verify-quotes", epilog=help_epilog("verify-quotes"))
@guarded
def verify_quotes_command(
    quotes: Annotated[
        Path, typer.Option("--quotes", help="Quotes: one per line, or a JSON list (.json).")
    ],
    docs: Annotated[
        list[Path],
        typer.Option("--docs", help="Document text files or directories (repeatable)."),
    ],
    more_docs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="More document paths (so `--docs a.txt b.txt` works).", show_default=False
        ),
    ] = None,
    xlsx: Annotated[
        Path | None, typer.Option("--xlsx", help="Write the rows to this Excel file.")
    ] = None,
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Write the statistics (melted) to this CSV file.")
    ] = None,
    cosine: Annotated[
        bool, typer.Option("--cosine/--no-cosine", help="Cosine similarity with the local model.")
    ] = True,
    trim_method: Annotated[
        str, typer.Option("--trim-method", help="fuzzy, sliding_bm25 or hybrid.")
    ] = "fuzzy",
    min_fuzzy_ratio: Annotated[
        float, typer.Option("--min-fuzzy-ratio", help="Below this match ratio: not verified.")
    ] = 0.6,
    ellipsis_max_gap: Annotated[
        int | None,
        typer.Option("--ellipsis-max-gap", help="Most characters between ellipsis parts."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON lines.")] = False,
) -> None:
    """Locate each quote in the documents and report where it is and how well it matches.

    The quotes file holds one quote per line, or a JSON list of strings when its name ends in
    .json. Each document is a UTF-8 text file named by its stem; a directory stands for its .txt
    and .md files (never the quotes file or an output). Exit status 2 on bad input.
    """
    files = _documents_given([*docs, *(more_docs or [])], quotes, xlsx, csv)
    try:
        quote_list = read_quotes(quotes)
        documents = read_documents(files)
        rows = _verify(
            quote_list, documents, cosine, trim_method, min_fuzzy_ratio, ellipsis_max_gap
        )
        _write(rows, xlsx, csv)
    except (InputError, ValueError, TypeError, ImportError, OSError) as error:
        bad_argument(str(error))
    if as_json:
        for row in rows:
            typer.echo(dumps_strict(row.to_dict()))
    else:
        _print_rows(rows, len(documents))
    _print_totals(rows, xlsx, csv)


def _documents_given(
    paths: list[Path], quotes: Path, xlsx: Path | None, csv: Path | None
) -> list[Path]:
    """The document files, once the outputs are known not to overwrite an input (exit 2)."""
    outputs = [path for path in (xlsx, csv) if path is not None]
    try:
        files = document_files(paths, quotes=quotes, outputs=outputs)
    except InputError as error:
        bad_argument(str(error))
    _check_outputs(quotes, files, xlsx, csv)
    if xlsx is not None and xlsx.suffix.lower() != ".xlsx":
        bad_argument(f"--xlsx: {xlsx} should end in .xlsx (Excel would not open it otherwise)")
    return files


def _verify(
    quote_list: list[str],
    documents: dict[str, str],
    cosine: bool,
    trim_method: str,
    min_fuzzy_ratio: float,
    ellipsis_max_gap: int | None,
) -> list[QuoteMatch]:
    """`verify_quotes` with the command's options (the local model only with `--cosine`)."""
    from groundwire.embeddings import DEFAULT_EMBEDDER
    from groundwire.evaluators.quote_verification import verify_quotes

    return verify_quotes(
        quote_list,
        documents,
        embedder=DEFAULT_EMBEDDER if cosine else None,
        trim_method=trim_method,  # type: ignore[arg-type]  # validated by verify_quotes
        min_fuzzy_ratio=min_fuzzy_ratio,
        ellipsis_max_gap=ellipsis_max_gap,
    )


def _write(rows: list[QuoteMatch], xlsx: Path | None, csv: Path | None) -> None:
    """The Excel rows and the statistics CSV, each where it was asked for."""
    from groundwire.evaluators.quote_verification import write_quotes_xlsx, write_stats_csv

    if xlsx is not None:
        _write_safely(xlsx, lambda path: write_quotes_xlsx(rows, path))
    if csv is not None:
        _write_safely(csv, lambda path: write_stats_csv(rows, path))


def _print_rows(rows: list[QuoteMatch], n_documents: int) -> None:
    """One table row per quote, then each quote's word edits against its source."""
    table = Table(title=f"{len(rows)} quotes in {n_documents} documents")
    for header in ("#", "quote", "source", "span", "match", "cosine", "bm25 ratio", "ok"):
        table.add_column(header, overflow="fold")
    for index, row in enumerate(rows, start=1):
        table.add_row(
            str(index),
            _short(row.quote),
            escape(row.source_doc or "-"),
            _short(row.span_text) or "-",
            _number(row.match_ratio),
            _number(row.cosine_similarity),
            _number(row.bm25_ratio),
            "[red]no[/red]" if row.low_confidence else "[green]yes[/green]",
        )
    console.print(table)
    changed = [(index, row) for index, row in enumerate(rows, start=1) if row.edits]
    if changed:
        console.print("differences from the source (-source words, +quote words):")
    for index, row in changed:
        console.print(f"  {index}. {_changes(row)}", highlight=False)


def _print_totals(rows: list[QuoteMatch], xlsx: Path | None, csv: Path | None) -> None:
    """How many quotes were verified, and the files written, on stderr."""
    from groundwire.evaluators.quote_verification import quote_stats

    stats = quote_stats(rows)
    err_console.print(
        f"{stats.n_quotes - stats.n_low_match_confidence} of {stats.n_quotes} quotes verified; "
        f"mean match ratio {_number(stats.mean_match_ratio, 3)}",
        highlight=False,
    )
    for path, what in ((xlsx, "Excel report"), (csv, "statistics CSV")):
        if path is not None:
            err_console.print(f"wrote {what} {path}", highlight=False, markup=False)
