"""`resume_state` (`offline/_resume.py`) on hand-made outputs, one promise each: the keys of
the whole records, the torn last record cut off and reported, a partial file adopted, records a
dead judge skipped taken out, and OUT refused when it is not a groundwire output of this run's
evaluators. Every format (.jsonl, .csv, .parquet); files of a few rows (two of a little over
1 MiB, to cross the scanner's read size); each test takes milliseconds.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import ResumeError
from groundwire.offline._resume import done_keys, resume_state
from groundwire.offline.writers import CSV_LINE_END, csv_header, parquet_schema, partial_path

NAMES = ["quoted_spans"]
SKIPPED = {"quoted_spans": {"details": {"skip_reason": "judge_unreachable"}}}
"""A record's details with an evaluation skipped because the judge was unreachable."""
MIB = 1 << 20


def _line(trace: str | None, span: str | None, details: Any = None, **scores: float) -> bytes:
    """One `.jsonl` result line."""
    record = {
        "trace_id": trace,
        "span_id": span,
        "scores": scores or {"quoted_spans": 1.0},
        "details": details if details is not None else {"quoted_spans": {"details": None}},
    }
    return json.dumps(record).encode() + b"\n"


def _csv(rows: list[list[str]], header: list[str] | None = None) -> bytes:
    """A results CSV (the writer's dialect) with these rows."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator=CSV_LINE_END)
    writer.writerow(header or csv_header(NAMES))
    writer.writerows(rows)
    return text.getvalue().encode()


def _row(trace: str, span: str, details: Any = None) -> list[str]:
    """One CSV row: ids, query, value, label, details (JSON)."""
    return [trace, span, "q", "1.0", "", json.dumps(details or {})]


def _parquet(path: Path, rows: list[tuple[str, str, Any]], names: list[str] = NAMES) -> Path:
    """A Parquet output of these (trace, span, details) rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, list[Any]] = {field: [] for field in parquet_schema(names).names}
    for trace, span, details in rows:
        for field in columns:
            columns[field].append(None)
        columns["trace_id"][-1], columns["span_id"][-1] = trace, span
        columns["details"][-1] = json.dumps(details or {})
    pq.write_table(pa.table(columns, schema=parquet_schema(names)), path)
    return path


def test_jsonl_keys_and_a_torn_last_line_cut_off(tmp_path: Path) -> None:
    """The whole lines' keys (a null id read as ''; a blank line passed over); a last line
    without its newline is cut off and reported with its start (newlines shown as \\n)."""
    out = tmp_path / "out.jsonl"
    whole = _line("t1", "s1") + b"\n" + _line("t2", None)
    out.write_bytes(whole + b'{"trace_id": "t3", "sp')
    state = resume_state(out, NAMES)
    assert state.keys == {("t1", "s1"), ("t2", "")} and state.rows == 2
    assert out.read_bytes() == whole
    assert state.notes == [
        f"{out}: dropped a torn last line (22 bytes, cut off when the run writing it was "
        'stopped): "{"trace_id": "t3", "sp"'
    ]
    assert (state.rescored, state.changed) == (0, [])


def test_a_long_torn_line_is_shown_cut_and_found_across_reads(tmp_path: Path) -> None:
    """A torn line longer than one read (1 MiB): the last newline is still found, and the
    report shows its first 59 characters and an ellipsis."""
    out = tmp_path / "out.jsonl"
    torn = b'{"x": "' + b"a" * (MIB + 10)
    out.write_bytes(_line("t1", "s1") + torn)
    state = resume_state(out)
    assert state.keys == {("t1", "s1")} and out.read_bytes() == _line("t1", "s1")
    shown = torn.decode()[:59] + "…"
    assert state.notes[0].endswith(
        f'({len(torn)} bytes, cut off when the run writing it was stopped): "{shown}"'
    )
    no_newline = tmp_path / "none.jsonl"
    no_newline.write_bytes(b"a" * (MIB + 3))
    assert resume_state(no_newline).keys == set() and no_newline.read_bytes() == b""


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (b"{not json\n", "out.jsonl:2: not a groundwire result line; cannot resume from it"),
        (b'{"span_id": "s"}\n', "out.jsonl:2: not a groundwire result line"),
        (b"[1, 2]\n", "out.jsonl:2: not a groundwire result line"),
        (b'{"trace_id": 1, "span_id": "s"}\n', "out.jsonl:2: trace_id and span_id must be strings"),
        (b'{"trace_id": "t", "span_id": 2}\n', "out.jsonl:2: trace_id and span_id must be strings"),
        (b'{"trace_id": "t", "span_id": "s"}\n', "out.jsonl:2: no 'scores' object; not a"),
    ],
)  # fmt: skip
def test_a_jsonl_line_that_is_not_a_result_is_refused(
    tmp_path: Path, content: bytes, error: str
) -> None:
    """A line that is not a groundwire result: ResumeError naming the file and line."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(_line("t1", "s1") + content)
    with pytest.raises(ResumeError) as raised:
        resume_state(out, NAMES)
    assert str(raised.value).startswith(f"{tmp_path}/{error}")


def test_jsonl_of_other_evaluators_is_refused_in_any_order_accepted(tmp_path: Path) -> None:
    """Lines scored by other evaluators are refused naming both lists; the same evaluators in
    another order, or no evaluators given, resume."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(_line("t1", "s1", quoted_spans=1.0, erag=0.5))
    with pytest.raises(ResumeError) as raised:
        resume_state(out, ["quoted_spans"])
    assert str(raised.value) == (
        f"{out}:1: its evaluators (quoted_spans, erag) are not this run's (quoted_spans): "
        "resume with the same evaluators, or write a new output"
    )
    assert resume_state(out, ["erag", "quoted_spans"]).rows == 1
    assert done_keys(out) == {("t1", "s1")}


def test_jsonl_lines_a_dead_judge_skipped_are_taken_out(tmp_path: Path) -> None:
    """Lines with an evaluation skipped as judge_unreachable leave OUT (the rest byte for byte)
    and are counted, noted and named as changed; other details are kept."""
    out = tmp_path / "out.jsonl"
    kept = [
        _line("t1", "s1"),
        _line("t4", "s4", {"quoted_spans": {"details": {"skip_reason": "no_quotes"}}}),
        _line("t5", "s5", {"quoted_spans": "text"}),
        _line("t6", "s6", ["not", "a", "dict"]),
        _line("t7", "s7", {"quoted_spans": {"details": "text"}}),
    ]
    out.write_bytes(kept[0] + _line("t2", "s2", SKIPPED) + b"".join(kept[1:]))
    state = resume_state(out, NAMES)
    assert out.read_bytes() == b"".join(kept)
    assert state.keys == {("t1", "s1"), ("t4", "s4"), ("t5", "s5"), ("t6", "s6"), ("t7", "s7")}
    assert (state.rows, state.rescored, state.changed) == (5, 1, [out])
    assert state.notes == [
        f"{out}: 1 turn with evaluations skipped as judge_unreachable taken out; scoring them again"
    ]
    two = tmp_path / "two.jsonl"
    two.write_bytes(_line("t2", "s2", SKIPPED) + _line("t3", "s3", SKIPPED))
    state = resume_state(two, NAMES)
    assert state.notes[0].startswith(f"{two}: 2 turns with evaluations skipped")
    assert (state.rescored, state.rows, two.read_bytes()) == (2, 0, b"")


def test_a_partial_file_is_adopted_only_when_out_is_missing(tmp_path: Path) -> None:
    """A partial file left by a run that did not finish becomes OUT when there is none; beside
    an OUT it is left alone and reported; with neither there is nothing to resume."""
    out = tmp_path / "out.jsonl"
    partial = partial_path(out)
    assert resume_state(out).notes == [] and not out.exists()
    partial.write_bytes(_line("t1", "s1"))
    state = resume_state(out)
    assert out.read_bytes() == _line("t1", "s1") and not partial.exists()
    assert state.notes == [f"resuming from {partial} (left by a run that did not finish)"]
    assert state.keys == {("t1", "s1")}
    partial.write_bytes(_line("t2", "s2"))
    state = resume_state(out)
    assert state.notes == [
        f"{partial} (left by a run that did not finish) is not used: resuming {out}"
    ]
    assert state.keys == {("t1", "s1")} and partial.exists()


def test_a_format_that_cannot_append_is_refused(tmp_path: Path) -> None:
    """--resume into .html: ResumeError naming the formats that can be resumed."""
    with pytest.raises(ResumeError) as raised:
        resume_state(tmp_path / "r.html")
    assert str(raised.value) == (
        f"--resume needs an output that can be resumed (.jsonl, .csv, .parquet); "
        f"{tmp_path / 'r.html'} is .html"
    )


def test_csv_keys_and_a_record_torn_inside_a_quoted_cell(tmp_path: Path) -> None:
    """CSV: the whole records' keys; a record cut inside a quoted multi-line cell is cut off
    (newlines inside quotes do not end a record) and reported as a record."""
    out = tmp_path / "out.csv"
    whole = _csv([_row("t1", "s1", {"a": "x\ny"}), _row("t2", "s2")])
    out.write_bytes(whole + b't3,s3,"cut\nhere')
    state = resume_state(out, NAMES)
    assert out.read_bytes() == whole and state.keys == {("t1", "s1"), ("t2", "s2")}
    assert state.rows == 2
    assert state.notes == [
        f"{out}: dropped a torn last record (15 bytes, cut off when the run writing it was "
        'stopped): "t3,s3,"cut\\nhere"'
    ]


def test_a_csv_record_end_is_found_across_reads(tmp_path: Path) -> None:
    """A file longer than one read (1 MiB) of records with quoted multi-line cells: the quotes
    are counted across reads, so the torn record is found where it starts."""
    out = tmp_path / "out.csv"
    rows = [_row(f"t{i}", f"s{i}", {"text": "a\nb " * 10}) for i in range(MIB // 70)]
    whole = _csv(rows)
    assert len(whole) > MIB
    out.write_bytes(whole + b't,s,"' + b"x\n" * 10)
    state = resume_state(out, NAMES)
    assert out.read_bytes() == whole and state.rows == len(rows)


def test_csv_that_is_not_this_runs_output_is_refused(tmp_path: Path) -> None:
    """Other columns, a header without trace_id/span_id, or a row with a wrong cell count:
    ResumeError naming the file and line; a file without a header has nothing to resume."""
    out = tmp_path / "out.csv"
    out.write_bytes(_csv([_row("t1", "s1")]))
    with pytest.raises(ResumeError) as raised:
        resume_state(out, ["erag"])
    header = ", ".join(csv_header(NAMES))
    assert str(raised.value) == (
        f"{out}:1: its columns ({header}) are not this run's "
        f"({', '.join(csv_header(['erag']))}): resume with the same evaluators, or write a new "
        "output"
    )
    out.write_bytes(_csv([["a", "b"]], header=["id", "span"]))
    with pytest.raises(ResumeError, match=r"out\.csv:1: not a groundwire results CSV"):
        resume_state(out)
    out.write_bytes(_csv([_row("t1", "s1"), ["t2", "s2"]]))
    with pytest.raises(ResumeError) as raised:
        resume_state(out, NAMES)
    assert str(raised.value) == f"{out}:3: 2 cells where the header has 6; cannot resume from it"
    out.write_bytes(b"")
    assert resume_state(out, NAMES).rows == 0


def test_csv_records_a_dead_judge_skipped_are_taken_out(tmp_path: Path) -> None:
    """CSV rows whose details hold judge_unreachable are taken out, the others kept byte for
    byte (a details cell that is not JSON, or names the reason elsewhere, is kept)."""
    out = tmp_path / "out.csv"
    rows = [
        _row("t1", "s1"),
        _row("t2", "s2", SKIPPED),
        ["t3", "s3", "q", "", "", "judge_unreachable {"],
        _row("t4", "s4", {"note": "judge_unreachable"}),
    ]
    out.write_bytes(_csv(rows))
    state = resume_state(out, NAMES)
    assert out.read_bytes() == _csv([rows[0], rows[2], rows[3]])
    assert state.keys == {("t1", "s1"), ("t3", "s3"), ("t4", "s4")}
    assert (state.rows, state.rescored, state.changed) == (3, 1, [out])
    no_details = tmp_path / "plain.csv"
    no_details.write_bytes(_csv([["t1", "s1"]], header=["trace_id", "span_id"]))
    assert resume_state(no_details).keys == {("t1", "s1")}


def test_parquet_keys_and_rows_a_dead_judge_skipped(tmp_path: Path) -> None:
    """Parquet: every row's key (null ids as ''), rows skipped as judge_unreachable taken out
    of the file and noted."""
    import pyarrow.parquet as pq

    out = _parquet(
        tmp_path / "out.parquet", [("t1", "s1", None), ("t2", "s2", SKIPPED), (None, None, None)]
    )
    state = resume_state(out, NAMES)
    assert state.keys == {("t1", "s1"), ("", "")} and state.rows == 2
    assert (state.rescored, state.changed) == (1, [out])
    assert state.notes == [
        f"{out}: 1 turn with evaluations skipped as judge_unreachable taken out; scoring them again"
    ]
    assert pq.read_table(out).column("trace_id").to_pylist() == ["t1", None]


def test_parquet_of_other_evaluators_is_refused(tmp_path: Path) -> None:
    """A Parquet OUT with other columns: ResumeError naming both lists."""
    out = _parquet(tmp_path / "out.parquet", [("t1", "s1", None)], names=["erag"])
    with pytest.raises(ResumeError) as raised:
        resume_state(out, NAMES)
    names = ", ".join(parquet_schema(["erag"]).names)
    wanted = ", ".join(parquet_schema(NAMES).names)
    assert str(raised.value) == (
        f"{out}: its columns ({names}) are not this run's ({wanted}): resume with the same "
        "evaluators, or write a new output"
    )
    assert resume_state(out).keys == {("t1", "s1")}


def test_a_parquet_out_without_a_footer_is_moved_aside(tmp_path: Path) -> None:
    """A Parquet OUT cut before its footer is moved aside (`.torn`) and reported."""
    out = tmp_path / "out.parquet"
    out.write_bytes(b"PAR1 not a whole file")
    state = resume_state(out, NAMES)
    aside = tmp_path / "out.torn.parquet"
    assert not out.exists() and aside.read_bytes() == b"PAR1 not a whole file"
    assert state.notes == [
        f"{out}: no Parquet footer (the run writing it was stopped); moved aside to {aside}"
    ]
    assert state.keys == set()


def test_parquet_parts_left_by_an_unfinished_run_are_resumed(tmp_path: Path) -> None:
    """The partial folder's complete parts are resumed; a `.tmp` row group and a part without
    a footer are dropped and reported; the rows found there are counted in one note."""
    out = _parquet(tmp_path / "out.parquet", [("t0", "s0", None)])
    folder = partial_path(out)
    folder.mkdir()
    _parquet(folder / "part-000001.parquet", [("t1", "s1", None), ("t2", "s2", None)])
    (folder / "part-000002.parquet").write_bytes(b"torn")
    (folder / "part-000003.parquet.tmp").write_bytes(b"12345")
    state = resume_state(out, NAMES)
    assert state.keys == {("t0", "s0"), ("t1", "s1"), ("t2", "s2")} and state.rows == 3
    assert state.changed == [folder / "part-000002.parquet"]
    assert not (folder / "part-000002.parquet").exists()
    assert not (folder / "part-000003.parquet.tmp").exists()
    assert state.notes == [
        f"{folder / 'part-000003.parquet.tmp'}: dropped a torn row group (5 bytes, cut off "
        "when the run writing it was stopped)",
        f"{folder / 'part-000002.parquet'}: dropped a torn row group (no Parquet footer)",
        f"{folder}: resuming 2 rows an unfinished run left in complete row groups",
    ]


def test_an_empty_partial_folder_adds_no_note(tmp_path: Path) -> None:
    """A partial folder with no rows in it resumes nothing and says nothing."""
    out = tmp_path / "out.parquet"
    partial_path(out).mkdir()
    state = resume_state(out, NAMES)
    assert (state.keys, state.notes) == (set(), [])


def test_a_parquet_out_the_ray_workers_wrote_is_read_part_by_part(tmp_path: Path) -> None:
    """OUT as a directory of parts (Ray's workers): the keys of every part."""
    out = tmp_path / "out.parquet"
    out.mkdir()
    _parquet(out / "part-000001.parquet", [("t1", "s1", None)])
    _parquet(out / "part-000002.parquet", [("t2", "s2", SKIPPED), ("t3", "s3", None)])
    state = resume_state(out, NAMES)
    assert state.keys == {("t1", "s1"), ("t3", "s3")} and state.rescored == 1


def test_a_torn_record_is_shown_whole_up_to_sixty_characters_undecodable_bytes_replaced(
    tmp_path: Path,
) -> None:
    """A torn record of exactly 60 characters is shown whole; bytes that are not UTF-8 are
    shown as replacement characters instead of failing the resume."""
    out = tmp_path / "out.jsonl"
    torn = b"x" * 59 + b"\xff"
    out.write_bytes(_line("t1", "s1") + torn)
    note = resume_state(out).notes[0]
    assert note.endswith(
        f'(60 bytes, cut off when the run writing it was stopped): "{"x" * 59}\ufffd"'
    )


def test_a_lone_newline_is_a_whole_file_and_a_torn_header_is_cut(tmp_path: Path) -> None:
    """A .jsonl OUT of one newline has nothing torn; a .csv OUT whose only line (the header)
    is cut has no complete record: all of it is dropped; a whole .csv OUT is left as it is."""
    blank = tmp_path / "blank.jsonl"
    blank.write_bytes(b"\n")
    assert resume_state(blank).notes == [] and blank.read_bytes() == b"\n"
    header = tmp_path / "header.csv"
    header.write_bytes(b"trace_id,sp")
    state = resume_state(header)
    assert header.read_bytes() == b"" and state.notes[0].startswith(
        f"{header}: dropped a torn last record (11 bytes"
    )
    whole = tmp_path / "whole.csv"
    whole.write_bytes(_csv([_row("t1", "s1")]))
    assert resume_state(whole, NAMES).notes == []


def _multiline_rows(count: int, pad: int = 0) -> list[list[str]]:
    """CSV rows whose query cells span many lines (with quotes in them), the first padded."""
    cell = 'one "line"\r\n' * 60
    return [[f"t{i}", f"s{i}", "p" * (pad if i == 0 else 0) + cell, "1.0", "", "{}"]
            for i in range(count)]  # fmt: skip


def test_csv_quotes_are_counted_across_every_read(tmp_path: Path) -> None:
    """Over 2 MiB of records with multi-line quoted cells, one of them crossing the first read
    boundary at a quote, and a torn record at the end: exactly the torn record is dropped (the
    quote parity is carried over each read, the offset added up over three reads)."""
    pad = 0
    while True:  # shift the records until the first read ends just before a quote character
        whole = _csv(_multiline_rows(3300, pad))
        if whole[MIB : MIB + 1] == b'"':
            break
        pad += 1
    assert len(whole) > 2 * MIB
    start = whole.rfind(b"\r\nt", 0, MIB) + 2  # the record holding the first read boundary
    assert b"\n" in whole[start:MIB]  # ... with a newline inside its quoted cell before it
    out = tmp_path / "out.csv"
    out.write_bytes(whole + b't,s,"torn\r\nrecord')
    state = resume_state(out, NAMES)
    assert out.read_bytes() == whole and state.rows == 3300


def test_records_a_dead_judge_skipped_are_counted_over_files_and_rows(tmp_path: Path) -> None:
    """Two skipped rows in one Parquet part and one in another: three turns to score again,
    each part noted with its own count."""
    out = tmp_path / "out.parquet"
    out.mkdir()
    first = _parquet(out / "part-000001.parquet", [("t1", "s1", SKIPPED), ("t2", "s2", SKIPPED)])
    second = _parquet(out / "part-000002.parquet", [("t3", "s3", SKIPPED), ("t4", "s4", None)])
    state = resume_state(out, NAMES)
    assert (state.rescored, state.keys, state.changed) == (3, {("t4", "s4")}, [first, second])
    assert state.notes[0].startswith(f"{first}: 2 turns with evaluations skipped")
    assert state.notes[1].startswith(f"{second}: 1 turn with evaluations skipped")


def test_a_csv_retry_keeps_multiline_cells_byte_for_byte(tmp_path: Path) -> None:
    """Taking a skipped record out of a .csv rewrites the others exactly, line ends inside
    quoted cells included."""
    out = tmp_path / "out.csv"
    rows = [*_multiline_rows(2), _row("t9", "s9", SKIPPED)]
    out.write_bytes(_csv(rows))
    resume_state(out, NAMES)
    assert out.read_bytes() == _csv(rows[:2])


def test_a_parquet_without_a_details_column_is_read(tmp_path: Path) -> None:
    """A Parquet output with only the ids (no details column): every row is a done turn."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"
    pq.write_table(pa.table({"trace_id": ["t1", "t2"], "span_id": ["s1", None]}), out)
    assert done_keys(out) == {("t1", "s1"), ("t2", "")}


def test_parquet_parts_of_other_evaluators_are_refused(tmp_path: Path) -> None:
    """Parts written for other evaluators are refused, in OUT's directory (Ray's workers) and
    in the partial folder an unfinished run left."""
    workers = tmp_path / "workers.parquet"
    workers.mkdir()
    _parquet(workers / "part-000001.parquet", [("t1", "s1", None)], names=["erag"])
    with pytest.raises(ResumeError, match="are not this run's"):
        resume_state(workers, NAMES)
    out = tmp_path / "out.parquet"
    partial_path(out).mkdir()
    _parquet(partial_path(out) / "part-000001.parquet", [("t1", "s1", None)], names=["erag"])
    with pytest.raises(ResumeError, match="are not this run's"):
        resume_state(out, NAMES)
