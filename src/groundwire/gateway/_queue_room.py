"""Room on the persistent queue's disk, and the log lines of the requests it refuses.

Recording that a request was delivered needs disk too (SQLite writes every page a delete touches
to its log first), and it is what frees the rest. So the queue refuses new requests while the
disk has less free than a reserve plus what recording the delivery of everything held can take
(`DiskRoom`); it keeps delivering, which frees space. Every refusal is answered 503 (the
receivers say so) and logged at most every 10 seconds with the count since the last such line
(`refuse`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import Final

__all__ = ["DiskRoom"]

logger = logging.getLogger("groundwire.gateway")

_PAGE_BYTES: Final = 4096
"""SQLite's default page size."""
_WARN_EVERY_S: Final = 10.0


class DiskRoom:
    """Whether the queue's disk has room for more, and the refusals when it has not."""

    def __init__(self, directory: Path, reserve_bytes: int) -> None:
        """Keep `reserve_bytes` free on the disk of `directory`, besides what is held."""
        self.directory = directory
        self.reserve_bytes = reserve_bytes
        self._checkpointed = 0.0
        self._warned = 0.0
        self._unwarned = 0

    def needed(self, held_bytes: int, held_records: int) -> int:
        """Room kept free: `reserve_bytes`, plus what recording the delivery of every held
        request can take (its bytes and a page each: a delete rewrites the pages it touches)."""
        return self.reserve_bytes + held_bytes + held_records * _PAGE_BYTES

    def low(self, db: sqlite3.Connection, held_bytes: int, held_records: int) -> bool:
        """True when less than `needed` can be written, even after moving the log into the
        database (a checkpoint, at most once a second: the log is reused only after one)."""
        needed = self.needed(held_bytes, held_records)
        if self._free(db, needed) >= needed:
            return False
        now = time.monotonic()
        if now - self._checkpointed < 1.0:
            return True
        self._checkpointed = now
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            return True
        return self._free(db, needed) < needed

    def _free(self, db: sqlite3.Connection, needed: int) -> int:
        """Bytes the queue can still write: free on its disk (for this user) plus, when that
        alone is short of `needed`, the pages its database freed and reuses before it grows
        (the file does not shrink). Asked at every commit: the disk alone usually answers."""
        try:
            stat = os.statvfs(self.directory)
            free = stat.f_bavail * stat.f_frsize
            if free >= needed:
                return int(free)
            pages = db.execute("PRAGMA freelist_count").fetchone()[0]
            size = db.execute("PRAGMA page_size").fetchone()[0]
        except (OSError, sqlite3.Error):
            return self.reserve_bytes  # cannot tell: let SQLite say
        return int(free + pages * size)

    def refuse(self, refused: int, why: str) -> str:
        """Refuse `refused` new requests: the message of the QueueWriteError to answer them
        with (the receivers say 503); logged at most every 10 s."""
        message = f"the forward queue cannot take it: {why}"
        now = time.monotonic()
        if now - self._warned < _WARN_EVERY_S:
            self._unwarned += refused
            return message
        more = (
            f" ({self._unwarned} more refused since the last such line)" if self._unwarned else ""
        )
        logger.error("forward queue: refusing new requests (503): %s%s", why, more)
        self._warned, self._unwarned = now, 0
        return message
