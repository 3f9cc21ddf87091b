"""The persistent queue's rows on a real SQLite database, in-process: the connection's settings,
the chunked statements of a group commit, reading a row back only whole, and `salvage` copying
what a damaged database still holds (fast tests: the process-level ones are in test_queue.py)."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import zlib
from itertools import islice
from pathlib import Path

import pytest

from groundwire.gateway._queue_rows import (
    DB_NAME,
    StoredRequest,
    chunked,
    connect,
    insert_sql,
    read_row,
    set_sql,
)
from groundwire.gateway._repair import salvage


def _insert(db: sqlite3.Connection, body: bytes, *, crc: int | None = None) -> int:
    """Insert one traces request with `body` (its CRC-32 unless `crc` is given); its seq."""
    values = ("traces", "application/x-protobuf", 2, body, zlib.crc32(body) if crc is None else crc)
    cursor = db.execute(insert_sql(1), (*values, 1, 0))
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def test_a_stored_request_reads_each_field_from_its_column() -> None:
    """`from_row` takes seq, signal, content type, items, body and the two marks (as booleans)
    from their own columns, skipping the CRC."""
    request = StoredRequest.from_row((7, "logs", "application/json", 3, b"body", 99, 1, 0))
    assert request == StoredRequest(7, "logs", "application/json", 3, b"body", True, False)
    assert StoredRequest.from_row((8, "traces", "t", 1, b"", 5, 0, 2)).score is True


@pytest.mark.parametrize(("fsync", "synchronous"), [(True, 2), (False, 1)])
def test_the_connection_is_wal_with_the_durability_asked_for(
    tmp_path: Path, fsync: bool, synchronous: int
) -> None:
    """`connect` opens in WAL mode, FULL sync with `fsync` and NORMAL without, a 4 MiB log kept
    after checkpoints, secure_delete FAST, autocommit, usable from another thread."""
    db = connect(tmp_path / DB_NAME, fsync=fsync)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == synchronous
    assert db.execute("PRAGMA journal_size_limit").fetchone()[0] == 4 << 20
    assert db.execute("PRAGMA secure_delete").fetchone()[0] == 2  # FAST
    assert db.isolation_level is None
    seqs: list[int] = []
    thread = threading.Thread(target=lambda: seqs.append(_insert(db, b"from another thread")))
    thread.start()
    thread.join()
    assert seqs == [1]
    assert not db.in_transaction  # committed at once: nothing left open
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"requests", "finished", "scored", "scored_at"} <= names
    db.close()


@pytest.mark.parametrize(
    ("count", "sizes"),
    [(68, [64, 4]), (67, [64, 2, 1]), (4, [4]), (3, [2, 1]), (2, [2]), (1, [1]), (0, [])],
)
def test_each_chunk_is_the_largest_power_of_two_that_fits_what_is_left(
    count: int, sizes: list[int]
) -> None:
    """The chunks of `count` items, read at most six deep (a chunking that never ends fails
    here rather than hanging), cover the items once, in order."""
    items = list(range(count))
    chunks = list(islice(chunked(items, lambda item: (item,)), 6))
    assert [size for size, _ in chunks] == sizes
    assert [value for _, values in chunks for value in values] == items


def test_chunks_are_powers_of_two_up_to_64_in_order() -> None:
    """`chunked` cuts 71 items into statements of 64, 4, 2 and 1 rows, 100 into 64, 32, 4, and
    joins each chunk's bound values in the items' order."""
    items = list(range(71))
    chunks = list(chunked(items, lambda item: (item, -item)))
    assert [size for size, _ in chunks] == [64, 4, 2, 1]
    assert [len(values) for _, values in chunks] == [128, 8, 4, 2]
    assert chunks[1][1] == (64, -64, 65, -65, 66, -66, 67, -67)
    assert chunks[-1] == (1, (70, -70))
    joined = [value for _, values in chunks for value in values]
    assert joined == [value for item in items for value in (item, -item)]
    assert [size for size, _ in chunked(list(range(100)), lambda item: (item,))] == [64, 32, 4]
    assert [size for size, _ in chunked([1], lambda item: (item,))] == [1]
    assert [size for size, _ in chunked(list(range(128)), lambda item: (item,))] == [64, 64]
    assert list(chunked([], lambda item: (item,))) == []


def test_the_statements_insert_and_mark_the_rows_named(tmp_path: Path) -> None:
    """`insert_sql(n)` inserts n rows of 7 values (seq left to SQLite); `set_sql(column, n)`
    clears that column of exactly the n rows named."""
    assert insert_sql(2) == (
        "INSERT INTO requests (signal, content_type, items, body, crc, forward, score) VALUES "
        "(?, ?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?, ?)"
    )
    assert set_sql("forward", 3) == "UPDATE requests SET forward = 0 WHERE seq IN (?, ?, ?)"
    db = connect(tmp_path / DB_NAME, fsync=False)
    rows = [("traces", "c", 1, bytes([n]), zlib.crc32(bytes([n])), 1, 1) for n in range(4)]
    db.execute(insert_sql(4), tuple(value for row in rows for value in row))
    db.execute(set_sql("score", 2), (2, 4))
    marks = db.execute("SELECT seq, forward, score FROM requests ORDER BY seq").fetchall()
    assert marks == [(1, 1, 1), (2, 1, 0), (3, 1, 1), (4, 1, 0)]
    db.close()


def test_a_row_reads_back_only_whole(tmp_path: Path) -> None:
    """`read_row` gives a row as stored (body as bytes); None for a row that is gone, one whose
    body does not match its CRC-32, and a database that cannot be read."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    good = _insert(db, b"a good body")
    bad = _insert(db, b"a damaged body", crc=zlib.crc32(b"another body"))
    row = read_row(db, good)
    assert row == (good, "traces", "application/x-protobuf", 2, b"a good body",
                   zlib.crc32(b"a good body"), 1, 0)  # fmt: skip
    assert row is not None and type(row[4]) is bytes
    assert read_row(db, bad) is None
    assert read_row(db, 99) is None
    db.close()
    assert read_row(db, good) is None  # a closed connection: sqlite3.Error, not a traceback


def test_a_row_keeps_its_body_beside_a_small_checksum(tmp_path: Path) -> None:
    """The body read back is the body column, whatever the CRC-32 beside it ("b288881" has a
    CRC-32 of 4084, small enough that mistaking one for the other shows at once)."""
    body = b"b288881"
    assert zlib.crc32(body) == 4084
    db = connect(tmp_path / DB_NAME, fsync=False)
    row = read_row(db, _insert(db, body))
    assert row is not None and (row[4], row[5]) == (body, 4084)
    db.close()


def _damaged_queue(directory: Path) -> Path:
    """A queue database holding three good rows around one whose body no longer matches."""
    path = directory / DB_NAME
    db = connect(path, fsync=False)
    _insert(db, b"first")
    _insert(db, b"second!")
    _insert(db, b"damaged", crc=1)
    db.execute(
        "INSERT INTO requests (seq, signal, content_type, items, body, crc, forward, score) "
        "VALUES (9, 'logs', 'application/json', 4, ?, ?, 0, 1)",
        (b"ninth", zlib.crc32(b"ninth")),
    )
    db.close()
    return path


def test_salvage_moves_the_file_aside_and_keeps_every_whole_row_in_order(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The damaged file (and its log files) are moved to `<name>.damaged-<stamp>`, a new database
    is opened with `connect`, and every row that reads back whole is copied with its own seq and
    fields; the unreadable ones are counted and both steps logged."""
    path = _damaged_queue(tmp_path)
    Path(str(path) + "-wal").write_bytes(b"")
    Path(str(path) + "-shm").write_bytes(b"")
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    db, kept, unreadable = salvage(path, ValueError("bad page"), lambda: connect(path, fsync=False))
    assert kept == (3, len(b"first") + len(b"second!") + len(b"ninth"))
    assert unreadable == 1
    copied = db.execute("SELECT * FROM requests ORDER BY seq").fetchall()
    assert [row[0] for row in copied] == [1, 2, 9]
    assert copied[2] == (9, "logs", "application/json", 4, b"ninth", zlib.crc32(b"ninth"), 0, 1)
    db.close()
    moved = [p.name for p in tmp_path.iterdir() if ".damaged-" in p.name]
    stamp = re.fullmatch(r"queue\.sqlite3\.damaged-(\d{8}T\d{6})", min(moved))
    assert stamp is not None
    base = f"{DB_NAME}.damaged-{stamp[1]}"
    assert sorted(moved) == [base, base + "-shm", base + "-wal"]
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == (
        f"the forward queue {path} is damaged (bad page); moved to {base}, reading back what it can"
    )
    assert messages[1] == "kept 3 requests from the damaged queue; 1 unreadable"


def test_salvage_moves_every_file_of_the_database_before_opening_the_new_one(
    tmp_path: Path,
) -> None:
    """When `connect` opens the new database, nothing of the damaged one (the file, its log,
    its shared memory) is left at the queue's path; every unreadable row is counted."""
    path = _damaged_queue(tmp_path)
    db = connect(path, fsync=False)
    _insert(db, b"damaged too", crc=2)
    db.close()
    Path(str(path) + "-wal").write_bytes(b"")
    Path(str(path) + "-shm").write_bytes(b"")
    left: list[str] = []

    def reopen() -> sqlite3.Connection:
        left.extend(p.name for p in tmp_path.iterdir() if ".damaged-" not in p.name)
        return connect(path, fsync=False)

    db, kept, unreadable = salvage(path, ValueError("bad page"), reopen)
    db.close()
    assert left == []
    assert (kept[0], unreadable) == (3, 2)


def test_salvage_of_a_file_that_is_no_database_keeps_nothing_and_counts_it(
    tmp_path: Path,
) -> None:
    """A file that is not a database: moved aside all the same, a new empty database is
    opened, and the file counts as one unreadable row."""
    path = tmp_path / DB_NAME
    path.write_bytes(b"this is not a database" * 100)
    db, kept, unreadable = salvage(path, ValueError("not a db"), lambda: connect(path, fsync=False))
    assert (kept, unreadable) == ((0, 0), 1)
    assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 0
    db.close()
    assert len([p for p in tmp_path.iterdir() if ".damaged-" in p.name]) == 1
