"""`DiskQueue`: the opt-in persistent forward queue (`queue_dir`), one SQLite database in WAL mode.

Why SQLite: it ships with Python (no new dependency), its write-ahead log is checksummed frame by
frame (a torn write at the tail after a crash is detected and rolled back by SQLite itself), a
commit with `synchronous=FULL` is on disk before it returns (`fsync` False: in the operating
system's cache, which outlives the process but not a power loss), and decades of use make it the
best-kept embedded store there is. An append-only file of our own would have to re-solve each of
these. On top of SQLite every row keeps a CRC-32 of its body, so a row damaged on disk (a flipped
sector, a file edited by hand) is detected when it is read back, skipped, counted and logged, and
never stops the replay.

A row is one accepted request: it is committed before the client gets its 200 (`append`, with
group commit: the requests arriving while one commit runs share the next), and it stays until
nothing needs it any more: its forwarding is done (delivered, or given up for good) and, for a
traces request being scored, its spans' traces are scored (`scored`). On start `replay` reads
what is left, in the order it was accepted. Scored trace ids are kept for a while (`scored_since`)
so that a restarted gateway does not score a trace twice.

All database work happens on one thread of its own; the asyncio loop only awaits its results.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from groundwire.gateway._repair import salvage

__all__ = ["DB_NAME", "DiskQueue", "QueueWriteError", "StoredRequest"]

logger = logging.getLogger("groundwire.gateway")

_T = TypeVar("_T")

_PAGE_BYTES: Final = 4096
"""SQLite's default page size."""
_WAL_KEEP_BYTES: Final = 4 << 20
"""The write-ahead log is cut back to this size after a checkpoint (it is reused, not grown)."""

DB_NAME: Final = "queue.sqlite3"
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


class DiskQueue:
    """Accepted requests on disk until delivered (and scored), replayed in order on start."""

    def __init__(
        self,
        directory: Path,
        *,
        keep_scored_s: float = 120.0,
        reserve_bytes: int = 1 << 20,
        fsync: bool = True,
    ) -> None:
        """Open (or create) the queue in `directory`; a damaged database is moved aside and what
        can be read from it is kept. Scored trace ids are kept `keep_scored_s` seconds. New
        requests are refused while the disk has less free than `reserve_bytes` plus what the
        held requests take, so that there is always room to record their delivery (which is
        what frees space). `fsync` False: a commit reaches the operating system, not the disk
        (it survives the process being killed, not the machine losing power)."""
        self.directory = directory
        self.fsync = fsync
        self.keep_scored_s = keep_scored_s
        self.reserve_bytes = reserve_bytes
        self._pruned = 0.0
        self._warned = self._checkpointed = 0.0
        self._unwarned = 0
        self.path = directory / DB_NAME
        self.corrupt = 0
        """Rows found damaged and skipped (since this process started)."""
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="gateway-queue")
        self._lock = threading.Lock()
        self._pending: list[tuple[tuple[str, str, int, bytes, int, int], Future[int]]] = []
        self._done: list[int] = []
        self._unscore: list[int] = []
        self._scored: list[str] = []
        self._flushing = False
        self._bytes = 0
        self._records = 0
        self._db: sqlite3.Connection = self._call(self._open)

    # --- the database thread ---------------------------------------------------------------------

    def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run `function(*args)` on the database thread and wait for its result."""
        return self._executor.submit(function, *args).result()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before the client's 200; NORMAL (in WAL mode): it is in the
        # operating system's cache, which outlives the process but not a power loss
        db.execute(f"PRAGMA synchronous={'FULL' if self.fsync else 'NORMAL'}")
        db.execute(f"PRAGMA journal_size_limit={_WAL_KEEP_BYTES}")  # what a checkpoint leaves
        db.executescript(_SCHEMA)
        return db

    def _open(self) -> sqlite3.Connection:
        """Connect, check the database (`quick_check`) and read the held totals."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            db = self._connect()
            check = db.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                db.close()
                raise sqlite3.DatabaseError(str(check[0] if check else "no answer"))
        except sqlite3.DatabaseError as error:
            return self._salvage(error)
        row = db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM requests").fetchone()
        self._records, self._bytes = int(row[0]), int(row[1])
        return db

    def _salvage(self, error: Exception) -> sqlite3.Connection:
        """Move a damaged database aside, start a new one and copy every row still readable."""
        db, kept, unreadable = salvage(self.path, error, self._connect)
        self.corrupt += unreadable
        self._records, self._bytes = kept
        return db

    # --- state -----------------------------------------------------------------------------------

    @property
    def held_bytes(self) -> int:
        """Body bytes held on disk."""
        return self._bytes

    @property
    def held_records(self) -> int:
        """Requests held on disk."""
        return self._records

    # --- reading back ----------------------------------------------------------------------------

    def replay(self) -> Iterator[StoredRequest]:
        """Every request held, oldest first; damaged rows are logged, counted, deleted, skipped."""
        seqs = [row[0] for row in self._call(self._all_seqs)]
        for start in range(0, len(seqs), 256):
            for row in self._call(self._read_rows, seqs[start : start + 256]):
                if isinstance(row, int):
                    self._count_corrupt(row)
                    continue
                yield row

    def _all_seqs(self) -> list[tuple[int]]:
        return self._db.execute("SELECT seq FROM requests ORDER BY seq").fetchall()

    def _read_rows(self, seqs: list[int]) -> list[StoredRequest | int]:
        """The rows `seqs` (one query each, so a damaged page spoils only its own rows); the
        sequence number alone for a row that does not read back whole."""
        out: list[StoredRequest | int] = []
        for seq in seqs:
            try:
                row = self._db.execute(
                    "SELECT signal, content_type, items, body, crc, forward, score FROM requests "
                    "WHERE seq = ?",
                    (seq,),
                ).fetchone()
            except sqlite3.DatabaseError:
                row = None
            if row is None or zlib.crc32(row[3]) != row[4]:
                out.append(seq)
                continue
            out.append(
                StoredRequest(
                    seq, row[0], row[1], row[2], bytes(row[3]), bool(row[5]), bool(row[6])
                )
            )
        return out

    def _count_corrupt(self, seq: int) -> None:
        self.corrupt += 1
        logger.error(
            "forward queue: request #%d is damaged (checksum mismatch); skipped and removed", seq
        )
        self._call(self._delete_damaged, seq)

    def _delete_damaged(self, seq: int) -> None:
        row = self._db.execute("SELECT LENGTH(body) FROM requests WHERE seq = ?", (seq,)).fetchone()
        self._db.execute("DELETE FROM requests WHERE seq = ?", (seq,))
        if row is not None:
            self._records -= 1
            self._bytes -= int(row[0] or 0)

    def scored_recently(self) -> set[str]:
        """Trace ids (hex) scored in the last `keep_scored_s`; older ones are forgotten."""
        return self._call(self._scored_recently)

    def _scored_recently(self) -> set[str]:
        self._db.execute("DELETE FROM scored WHERE at < ?", (time.time() - self.keep_scored_s,))
        return {row[0] for row in self._db.execute("SELECT trace_id FROM scored").fetchall()}

    # --- writing ---------------------------------------------------------------------------------

    async def append(
        self, signal: str, content_type: str, items: int, body: bytes, *, score: bool
    ) -> int:
        """Store one request durably; its sequence number. QueueWriteError when it cannot be."""
        future: Future[int] = Future()
        row = (signal, content_type, items, body, zlib.crc32(body), int(score))
        with self._lock:
            self._pending.append((row, future))
            self._schedule()
        return await asyncio.wrap_future(future)

    def done(self, seqs: Iterable[int]) -> None:
        """Forwarding of these requests is over (delivered or given up for good)."""
        with self._lock:
            self._done.extend(seqs)
            self._schedule()

    def scored(self, seqs: Iterable[int], trace_ids: Iterable[str]) -> None:
        """These requests' traces are scored; remember these trace ids as scored."""
        with self._lock:
            self._unscore.extend(seqs)
            self._scored.extend(trace_ids)
            self._schedule()

    def _schedule(self) -> None:
        """Start a flush unless one is running (it picks up what is pending when it ends)."""
        if not self._flushing:
            self._flushing = True
            self._executor.submit(self._flush)

    def _flush(self) -> None:
        """One transaction for everything pending; repeated while more arrives. After a failed
        commit it stops, and tries what is left again a second later."""
        while True:
            with self._lock:
                pending, self._pending = self._pending, []
                done, self._done = self._done, []
                unscore, self._unscore = self._unscore, []
                scored, self._scored = self._scored, []
                if not (pending or done or unscore or scored):
                    self._flushing = False
                    return
            if pending and self._low_on_disk():
                self._refuse(
                    pending,
                    f"the disk of {self.directory} is nearly full (the queue keeps "
                    f"{self._needed_bytes()} bytes free to record deliveries)",
                )
                pending = []
            try:
                self._write(pending, done, unscore, scored)
            except sqlite3.Error as error:
                self._refuse(pending, f"cannot write to {self.path}: {error}")
                if pending and (done or unscore or scored):
                    try:  # without the new requests: recording deliveries frees space
                        self._write([], done, unscore, scored)
                        continue
                    except sqlite3.Error:
                        pass
                with self._lock:
                    self._done[:0] = done
                    self._unscore[:0] = unscore
                    self._scored[:0] = scored
                    self._flushing = False
                retry = threading.Timer(1.0, self._retry)
                retry.daemon = True
                retry.start()
                return

    def _retry(self) -> None:
        """Try again what a failed commit left (deliveries and scores to record)."""
        with self._lock:
            if self._done or self._unscore or self._scored:
                self._schedule()

    def _needed_bytes(self) -> int:
        """Room kept free: `reserve_bytes`, plus what recording the delivery of every held
        request can take (its bytes and a page each: a delete rewrites the pages it touches)."""
        return self.reserve_bytes + self._bytes + self._records * _PAGE_BYTES

    def _low_on_disk(self) -> bool:
        """True when less than `_needed_bytes` can be written, even after moving the log into
        the database (a checkpoint, at most once a second: the log is reused only after one)."""
        if self._free_bytes() >= self._needed_bytes():
            return False
        now = time.monotonic()
        if now - self._checkpointed < 1.0:
            return True
        self._checkpointed = now
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            return True
        return self._free_bytes() < self._needed_bytes()

    def _free_bytes(self) -> int:
        """Bytes the queue can still write: free on its disk (for this user) plus the pages its
        database freed and reuses before it grows (the file does not shrink)."""
        try:
            stat = os.statvfs(self.directory)
            pages = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            size = self._db.execute("PRAGMA page_size").fetchone()[0]
        except (OSError, sqlite3.Error):
            return self.reserve_bytes  # cannot tell: let SQLite say
        return int(stat.f_bavail * stat.f_frsize + pages * size)

    def _write(
        self,
        pending: list[tuple[tuple[str, str, int, bytes, int, int], Future[int]]],
        done: list[int],
        unscore: list[int],
        scored: list[str],
    ) -> None:
        """One transaction: insert the new requests, mark the delivered and scored ones, record
        scored trace ids, delete the rows nothing needs; then answer the waiting appends."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            seqs = []
            for row, _ in pending:
                cursor = db.execute(
                    "INSERT INTO requests (signal, content_type, items, body, crc, forward, "
                    "score) VALUES (?, ?, ?, ?, ?, 1, ?)",
                    row,
                )
                seqs.append(int(cursor.lastrowid or 0))
            db.executemany("UPDATE requests SET forward = 0 WHERE seq = ?", [(s,) for s in done])
            db.executemany("UPDATE requests SET score = 0 WHERE seq = ?", [(s,) for s in unscore])
            now = time.time()
            db.executemany(
                "INSERT OR REPLACE INTO scored (trace_id, at) VALUES (?, ?)",
                [(t, now) for t in scored],
            )
            if scored and now - self._pruned > 10.0:  # forget old scored ids as we go
                self._pruned = now
                db.execute("DELETE FROM scored WHERE at < ?", (now - self.keep_scored_s,))
            removed = 0, 0
            if done or unscore:
                removed = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(LENGTH(body)), 0) FROM requests "
                    "WHERE forward = 0 AND score = 0"
                ).fetchone()
                db.execute("DELETE FROM requests WHERE forward = 0 AND score = 0")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._records += len(pending) - int(removed[0])
        self._bytes += sum(len(row[3]) for row, _ in pending) - int(removed[1])
        for (_, future), seq in zip(pending, seqs, strict=True):
            future.set_result(seq)

    def _refuse(
        self, pending: list[tuple[tuple[str, str, int, bytes, int, int], Future[int]]], why: str
    ) -> None:
        """Refuse new requests (the receivers answer 503); logged at most every 10 seconds."""
        for _, future in pending:
            future.set_exception(QueueWriteError(f"the forward queue cannot take it: {why}"))
        if not pending:
            return
        now = time.monotonic()
        if now - self._warned < 10.0:
            self._unwarned += len(pending)
            return
        more = (
            f" ({self._unwarned} more refused since the last such line)" if self._unwarned else ""
        )
        logger.error("forward queue: refusing new requests (503): %s%s", why, more)
        self._warned, self._unwarned = now, 0

    def close(self) -> None:
        """Write what is pending, checkpoint the log and close."""
        self._executor.submit(self._close).result()
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        """Write what is pending, truncate the write-ahead log, close the connection."""
        with self._lock:
            left = bool(self._done or self._unscore or self._scored)
        if left:
            self._flushing = True
            self._flush()
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as error:
            logger.warning("forward queue: checkpoint at close failed: %s", error)
        self._db.close()
