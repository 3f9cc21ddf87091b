"""Reading back a persistent queue whose database is damaged beyond what SQLite repairs itself.

SQLite rolls back a torn write at the end of its log by itself. What it cannot fix, a file that is
no longer a database or a damaged page, `salvage` handles: the file is moved aside (kept for a
post-mortem, never deleted), a new database is started, and every row that still reads back whole
(its CRC-32 matching) is copied into it, in order; the others are counted.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from groundwire.gateway._queue_rows import Row, read_row

__all__ = ["salvage"]

logger = logging.getLogger("groundwire.gateway")


def salvage(
    path: Path, error: Exception, connect: Callable[[], sqlite3.Connection]
) -> tuple[sqlite3.Connection, tuple[int, int], int]:
    """Move the damaged database at `path` aside, open a new one with `connect` and copy the
    readable rows: (the new connection, (rows kept, body bytes kept), rows unreadable)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    moved = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = Path(str(path) + suffix)
        if source.exists():
            source.replace(Path(str(moved) + suffix))
    logger.error(
        "the forward queue %s is damaged (%s); moved to %s, reading back what it can",
        path,
        error,
        moved.name,
    )
    db = connect()
    kept = size = unreadable = 0
    for row in _readable_rows(moved):
        if row is None:
            unreadable += 1
            continue
        db.execute(
            "INSERT INTO requests (seq, signal, content_type, items, body, crc, forward, "
            "score) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )
        kept += 1
        size += len(row[4])
    logger.error("kept %d requests from the damaged queue; %d unreadable", kept, unreadable)
    return db, (kept, size), unreadable


def _readable_rows(path: Path) -> Iterator[Row | None]:
    """The rows of a damaged database that still read back whole (None for each that does not)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        seqs = [row[0] for row in db.execute("SELECT seq FROM requests ORDER BY seq")]
    except sqlite3.Error:
        yield None
        return
    for seq in seqs:
        yield read_row(db, seq)
    db.close()
