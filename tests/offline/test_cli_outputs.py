"""Outputs are written safely: never over an input, never emptier after a failure, resumable."""

from __future__ import annotations

import csv
import json
import os
import signal
from pathlib import Path

import openpyxl
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import rescore
from groundwire.offline._resume import resume_state
from tests.offline._cli_files import write_turns
from tests.offline.test_cli_exit_codes import slow_run, wait_for_bytes

QUERIES = [f"question {i}" for i in range(6)]


def _run(*args: str | Path) -> tuple[int, str]:
    """`groundwire ARGS` in-process; (exit code, stderr); never a traceback."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result.exit_code, result.stderr


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    """Six turns in an OTLP/JSON lines file."""
    return write_turns(QUERIES, tmp_path / "t.jsonl")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "relative"])
def test_output_that_is_the_input_is_refused(traces: Path, tmp_path: Path, how: str) -> None:
    """-o naming the input (itself, a symlink, a hard link, another path): exit 2, input intact."""
    before = traces.read_bytes()
    out = {"same": traces, "relative": tmp_path / "sub" / ".." / "t.jsonl"}.get(how)
    if how == "symlink":
        out = tmp_path / "link.jsonl"
        out.symlink_to(traces)
    elif how == "hardlink":
        out = tmp_path / "hard.jsonl"
        os.link(traces, out)
    (tmp_path / "sub").mkdir()
    assert out is not None
    code, stderr = _run("rescore", traces, "-e", "quoted_spans", "-o", out)
    assert code == ExitCode.BAD_ARGUMENTS
    assert "would destroy the input" in stderr
    assert traces.read_bytes() == before
    assert not (tmp_path / "t.partial.jsonl").exists()


def test_output_that_is_the_expected_file_is_refused(traces: Path, tmp_path: Path) -> None:
    """-o naming the --expected gold-answers file: exit 2, the file intact."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"query": "question 0", "expected": ["x"]}\n')
    code, stderr = _run("rescore", traces, "-e", "quoted_spans", "--expected", gold, "-o", gold)
    assert code == ExitCode.BAD_ARGUMENTS and "--expected file" in stderr
    assert gold.read_text() == '{"query": "question 0", "expected": ["x"]}\n'


def test_verify_quotes_refuses_to_overwrite_its_inputs(tmp_path: Path) -> None:
    """verify-quotes: --csv on the quotes file, --xlsx on a document, --csv = --xlsx: exit 2."""
    quotes = tmp_path / "q.txt"
    quotes.write_text("we shall fight\n")
    doc = tmp_path / "speech.txt"
    doc.write_text("we shall fight on the beaches")
    base = ["verify-quotes", "--quotes", quotes, "--docs", doc, "--no-cosine"]
    for extra, word in (
        (["--csv", quotes], "--quotes file"),
        (["--xlsx", doc.with_suffix(".xlsx"), "--csv", doc], "document"),
        (["--xlsx", tmp_path / "r.xlsx", "--csv", tmp_path / "r.xlsx"], "same file"),
    ):
        code, stderr = _run(*base, *extra)
        assert code == ExitCode.BAD_ARGUMENTS and word in stderr, stderr
    assert quotes.read_text() == "we shall fight\n"
    assert doc.read_text() == "we shall fight on the beaches"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_failing_run_leaves_the_existing_output_as_it_was(
    traces: Path, tmp_path: Path, suffix: str
) -> None:
    """An existing OUT survives a run that dies (--strict on a bad line); what it wrote is kept."""
    out = tmp_path / f"prev{suffix}"
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    before = out.read_bytes()
    broken = tmp_path / "broken.jsonl"
    many = write_turns([f"q{i}" for i in range(80)], tmp_path / "many.jsonl")
    lines = many.read_text().splitlines()
    broken.write_text("\n".join([*lines, '{"resourceSpans": 7}', *lines]) + "\n")
    code, stderr = _run("rescore", broken, "-e", "quoted_spans", "-o", out, "--strict", "-q")
    assert code == ExitCode.PARTIAL_INPUT
    assert out.read_bytes() == before
    kept = tmp_path / f"prev.partial{suffix}"
    assert f"results written are kept in {kept}" in stderr and f"{out} is left as it was" in stderr
    rows = pq.read_table(kept).num_rows if kept.is_dir() else len(kept.read_text().splitlines())
    assert rows >= 32


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".xlsx", ".html"])
def test_a_run_that_reads_nothing_leaves_the_existing_output(
    traces: Path, tmp_path: Path, suffix: str
) -> None:
    """An existing OUT survives a run that read nothing (exit 4): no empty file in its place."""
    out = tmp_path / f"prev{suffix}"
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    before = out.read_bytes()
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 4)
    code, stderr = _run("rescore", junk, "-e", "quoted_spans", "-o", out, "-q")
    assert code == ExitCode.NOTHING_READABLE
    assert out.read_bytes() == before and f"{out} is left as it was" in stderr
    assert not (tmp_path / f"prev.partial{suffix}").exists()


def test_a_finished_run_replaces_the_output(traces: Path, tmp_path: Path) -> None:
    """A run that ends moves its partial file into place: no partial file is left behind."""
    out = tmp_path / "o.csv"
    out.write_text("old,content\n")
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    assert len(list(csv.reader(out.open()))) == 7
    assert not (tmp_path / "o.partial.csv").exists()


def test_resume_drops_a_torn_jsonl_line(traces: Path, tmp_path: Path) -> None:
    """A half-written last line is reported, dropped, never parsed; the turn is scored again."""
    out = tmp_path / "o.jsonl"
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    lines = out.read_text().splitlines(keepends=True)
    torn = lines[-1][: len(lines[-1]) // 2]
    out.write_text("".join(lines[:-1]) + torn)
    code, stderr = _run("rescore", traces, "-e", "quoted_spans", "-o", out, "--resume")
    assert code == 0
    assert f"{out}: dropped a torn last line ({len(torn.encode())} bytes" in stderr
    assert "(5 already in the output)" in stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["query"] for r in records) == sorted(QUERIES)


def test_resume_drops_a_csv_record_cut_inside_a_multiline_cell(tmp_path: Path) -> None:
    """A .csv cut right after a newline inside a quoted cell: the torn record is dropped whole."""
    queries = [f"line one {i}\nline two\nline three" for i in range(4)]
    traces = write_turns(queries, tmp_path / "t.jsonl")
    out = tmp_path / "o.csv"
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    text = out.read_text()
    cut = text.rindex("line two\n") + len("line two\n")
    out.write_text(text[:cut])
    state = resume_state(out, ["quoted_spans"])
    assert state.rows == 3 and len(state.keys) == 3
    assert "dropped a torn last record" in state.notes[0]
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "--resume", "-q")[0] == 0
    rows = list(csv.DictReader(out.open(newline="")))
    assert sorted(row["query"] for row in rows) == sorted(queries)
    assert all(len(row["trace_id"]) == 32 for row in rows)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_resume_with_other_evaluators_is_refused(traces: Path, tmp_path: Path, suffix: str) -> None:
    """--resume on an OUT written for other evaluators: exit 2 naming both lists, OUT as it was."""
    out = tmp_path / f"o{suffix}"
    assert _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")[0] == 0
    before = out.read_bytes()
    code, stderr = _run(
        "rescore", traces, "-e", "quoted_spans,quote_verification", "-o", out, "--resume", "-q"
    )
    assert code == ExitCode.BAD_ARGUMENTS and "resume with the same evaluators" in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert out.read_bytes() == before


def test_jsonl_resume_with_other_evaluators_raises_resume_error(
    traces: Path, tmp_path: Path
) -> None:
    """rescore(resume=True) onto a .jsonl of other evaluators raises ResumeError (as documented);
    the same evaluators in another order resume."""
    from groundwire.offline import ResumeError

    out = tmp_path / "o.jsonl"
    rescore(traces, ["quoted_spans", "quote_verification"], out)
    with pytest.raises(ResumeError, match=r"o\.jsonl:1: its evaluators"):
        rescore(traces, ["quoted_spans"], out, resume=True)
    summary = rescore(traces, ["quote_verification", "quoted_spans"], out, resume=True)
    assert summary.turns_scored == 0 and summary.counts.resumed == len(QUERIES)


def test_parquet_resume_keeps_complete_row_groups_and_drops_a_torn_one(
    traces: Path, tmp_path: Path
) -> None:
    """Parquet: complete row groups left by a killed run are resumed; a torn one is dropped."""
    out = tmp_path / "o.parquet"
    first = write_turns(QUERIES[:3], tmp_path / "first.jsonl")
    rescore(first, ["quoted_spans"], out)
    parts = tmp_path / "o.partial.parquet"
    parts.mkdir()
    (parts / "part-00000.parquet").write_bytes(out.read_bytes())  # a complete row group
    (parts / "part-00001.parquet.tmp").write_bytes(out.read_bytes()[:100])  # torn
    out.unlink()
    summary = rescore(first, ["quoted_spans"], out, resume=True)
    assert summary.counts.resumed == 3 and summary.turns_scored == 0
    assert any("dropped a torn row group (100 bytes" in note for note in summary.resume_notes)
    summary = rescore(traces, ["quoted_spans"], out, resume=True)
    assert summary.counts.resumed == 0 and summary.turns_scored == 6
    table = pq.read_table(out)
    assert table.num_rows == 9 and sorted(set(table.column("query").to_pylist())) == sorted(QUERIES)
    assert not parts.exists()


@pytest.mark.slow
def test_sigkill_mid_write_then_resume(tmp_path: Path) -> None:
    """SIGKILL while writing: --resume adopts what was written and finishes; no turn twice."""
    queries = [f"q{i}" for i in range(200)]
    traces = write_turns(queries, tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    process = slow_run(traces, "-o", out)
    try:
        wait_for_bytes(tmp_path / "o.partial.jsonl", 3000, process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        process.kill()
    partial = tmp_path / "o.partial.jsonl"
    assert not out.exists() and partial.exists()
    with partial.open("ab") as file:  # what a kill inside write() leaves
        file.write(b'{"trace_id": "0af7651916cd43dd8448eb211c80319c", "span_id": "b7')
    process = slow_run(traces, "-o", out, "--resume")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr.decode()
    assert b"resuming from" in stderr and b"dropped a torn last line" in stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["query"] for r in records) == sorted(queries)


FORMULAS = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx=1", "\rHYPERLINK()", "plain text"]


def test_spreadsheet_cells_never_start_a_formula(tmp_path: Path) -> None:
    """CSV cells starting =,+,-,@,tab,CR get a leading quote; the .xlsx holds no formula."""
    traces = write_turns(FORMULAS, tmp_path / "t.jsonl")
    out_csv, out_xlsx = tmp_path / "o.csv", tmp_path / "o.xlsx"
    for out in (out_csv, out_xlsx):
        assert _run("rescore", traces, "-e", "quote_verification", "-o", out, "-q")[0] == 0
    queries = sorted(row["query"] for row in csv.DictReader(out_csv.open(newline="")))
    expected = sorted(q if q == "plain text" else "'" + q for q in FORMULAS)
    assert queries == expected
    book = openpyxl.load_workbook(out_xlsx)
    cells = [cell for sheet in book.worksheets for row in sheet.iter_rows() for cell in row]
    assert cells and not [cell.coordinate for cell in cells if cell.data_type == "f"]
    sheet = book["turns"]
    column = [cell.value for cell in sheet[1]].index("query")
    # OOXML stores a carriage return as `_x000D_`; Excel decodes it, openpyxl does not.
    written = {
        row[column].value.replace("_x000D_", "\r"): row[column]
        for row in sheet.iter_rows(min_row=2)
    }
    assert sorted(written) == sorted(FORMULAS)
    assert all(written[q].quotePrefix for q in FORMULAS if q != "plain text")
    quotes = [row[3].value for row in book["quotes"].iter_rows(min_row=2)]
    assert quotes and all(isinstance(quote, str) for quote in quotes)


@pytest.mark.slow
def test_two_runs_never_write_one_output(tmp_path: Path) -> None:
    """A second run on an OUT another run is writing is refused (exit 2); once that run is
    killed outright, its stale lock does not block the next one."""
    traces = write_turns([f"q{i}" for i in range(200)], tmp_path / "t.jsonl")
    out = tmp_path / "o.jsonl"
    process = slow_run(traces, "-o", out)
    try:
        wait_for_bytes(tmp_path / "o.partial.jsonl", 1000, process)
        code, stderr = _run("rescore", traces, "-e", "quoted_spans", "-o", out, "--resume", "-q")
        assert code == ExitCode.BAD_ARGUMENTS
        assert "another groundwire run is writing o.jsonl" in stderr
        assert (tmp_path / "o.partial.jsonl").stat().st_size >= 1000
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    assert (tmp_path / ".o.jsonl.lock").exists()  # left by the killed run, but not held
    code, _ = _run("rescore", traces, "-e", "quoted_spans", "-o", out, "-q")
    assert code == 0 and len(out.read_text().splitlines()) == 200
    assert not (tmp_path / ".o.jsonl.lock").exists()
