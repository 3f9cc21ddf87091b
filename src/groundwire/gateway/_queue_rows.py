"""The persistent queue's database: its schema, its connection settings, its statements, and
reading one row back.

Shared by `DiskQueue` (which reads its rows back at start) and `salvage` (which copies what a
damaged database still holds into a new one): a row reads back only whole, its body matching
the CRC-32 stored beside it, so a damaged row is never replayed as if it were good.

A group commit writes many rows at once; each statement run costs the database thread a
hand-back of the interpreter lock, which it may wait for while the event loop runs. So rows
are inserted, and marks set, several to a statement (`chunked`): chunks of 64, 32, ..., 1 rows,
a handful of statements that stay in the connection's statement cache.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeVar

__all__ = [
    "DB_NAME",
    "QueueWriteError",
    "Row",
    "StoredRequest",
    "chunked",
    "connect",
    "insert_sql",
    "read_row",
    "set_sql",
]

DB_NAME: Final = "queue.sqlite3"
WAL_KEEP_BYTES: Final = 4 << 20
"""The write-ahead log is cut back to this size after a checkpoint (it is reused, not grown)."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    signal TEXT NOT NULL,
    content_type TEXT NOT NULL,
    items INTEGER NOT NULL,
    body BLOB NOT NULL,
    crc INTEGER NOT NULL,
    forward INTEGER NOT NULL,
    score INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS finished ON requests (seq) WHERE forward = 0 AND score = 0;
CREATE TABLE IF NOT EXISTS scored (trace_id TEXT PRIMARY KEY, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS scored_at ON scored (at);
"""
"""`finished` holds only the rows about to be deleted, so finding them never scans the queue."""

_CHUNK_MAX: Final = 64
"""Most rows one statement writes (7 bound values each, far below SQLite's limit)."""

_T = TypeVar("_T")

Row = tuple[int, str, str, int, bytes, int, int, int]
"""(seq, signal, content_type, items, body, crc, forward, score): one row as stored."""


class QueueWriteError(OSError):
    """The queue could not store a request (disk full, read-only, damaged): answer 503."""


@dataclass(frozen=True, slots=True)
class StoredRequest:
    """One request read back from the queue."""

    seq: int
    signal: str
    content_type: str
    items: int
    body: bytes
    forward: bool
    """Not yet delivered downstream."""
    score: bool
    """Its traces not yet scored."""

    @classmethod
    def from_row(cls, row: Row) -> StoredRequest:
        """The request of a row read back whole."""
        return cls(row[0], row[1], row[2], row[3], row[4], bool(row[6]), bool(row[7]))


def connect(path: Path, *, fsync: bool) -> sqlite3.Connection:
    """Open (or create) the queue database at `path` in WAL mode with the schema in place.

    `fsync` True (`synchronous=FULL`): a commit is on disk before the client's 200; False
    (`NORMAL`, in WAL mode): in the operating system's cache, which outlives the process but
    not a power loss."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
    db.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")  # what a checkpoint leaves
    # Debian and others build SQLite with secure_delete on: every delete would write the freed
    # pages again, zeroed, doubling what each request costs the log and the disk (measured:
    # 58 KB written per 24 KB request instead of 36). FAST still clears what costs no extra
    # write; the log keeps the old pages until reused either way.
    db.execute("PRAGMA secure_delete=FAST")
    db.executescript(_SCHEMA)
    return db


def chunked(
    items: Sequence[_T], values: Callable[[_T], tuple[Any, ...]]
) -> Iterator[tuple[int, tuple[Any, ...]]]:
    """`items` in order, in chunks of a power of two up to 64: (chunk size, the bound values of
    its items, joined)."""
    start = 0
    while start < len(items):
        size = _CHUNK_MAX
        while size > len(items) - start:
            size //= 2
        chunk = items[start : start + size]
        yield size, tuple(value for item in chunk for value in values(item))
        start += size


@cache
def insert_sql(rows: int) -> str:
    """The statement inserting `rows` request rows (seq left to SQLite: consecutive, in order,
    as AUTOINCREMENT gives them inside one write transaction)."""
    one = "(?, ?, ?, ?, ?, ?, ?)"
    return (
        "INSERT INTO requests (signal, content_type, items, body, crc, forward, score) VALUES "
        + ", ".join([one] * rows)
    )


@cache
def set_sql(column: str, rows: int) -> str:
    """The statement clearing `column` (`forward` or `score`) of `rows` requests by seq."""
    return f"UPDATE requests SET {column} = 0 WHERE seq IN ({', '.join(['?'] * rows)})"


def read_row(db: sqlite3.Connection, seq: int) -> Row | None:
    """Row `seq` (one query, so a damaged page spoils only its own rows); None when it is gone,
    does not read, or its body does not match its CRC-32."""
    try:
        row = db.execute(
            "SELECT seq, signal, content_type, items, body, crc, forward, score FROM requests "
            "WHERE seq = ?",
            (seq,),
        ).fetchone()
    except sqlite3.Error:
        return None
    if row is None or zlib.crc32(row[4]) != row[5]:
        return None
    return (row[0], row[1], row[2], row[3], bytes(row[4]), row[5], row[6], row[7])
