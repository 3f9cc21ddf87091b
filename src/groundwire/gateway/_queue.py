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
group commit: the requests arriving while one commit runs share the next, and hear of it in one
hand-off to the loop, `_queue_waiters`), and it stays until
nothing needs it any more: its forwarding is done (delivered, or given up for good) and, for a
traces request being scored, its spans' traces are scored (`scored`). The evaluation results of
scored traces are rows too, inserted by `scored` in the transaction that records their traces
as scored (so a crash keeps both or neither) and forwarded like accepted requests. On start
`replay` reads what is left, in the order it was stored. Scored trace ids are kept for a while
(`scored_recently`) so that a restarted gateway does not score a trace twice.

The schema and reading a row back are in `_queue_rows`; the room kept on disk in `_queue_room`;
what one transaction writes in `_queue_work`.

All database work happens on one thread of its own; the asyncio loop only awaits its results.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from groundwire.gateway._queue_room import DiskRoom
from groundwire.gateway._queue_rows import (
    DB_NAME,
    QueueWriteError,
    StoredRequest,
    chunked,
    connect,
    insert_sql,
    read_row,
    set_sql,
)
from groundwire.gateway._queue_waiters import Waiting, answer
from groundwire.gateway._queue_work import NewRow, Work
from groundwire.gateway._repair import salvage
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._signals import CONTENT_PROTOBUF

__all__ = ["DB_NAME", "DiskQueue", "QueueWriteError", "StoredRequest"]

logger = logging.getLogger("groundwire.gateway")

_T = TypeVar("_T")


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
        self.room = DiskRoom(directory, reserve_bytes)
        self._pruned = 0.0
        self.path = directory / DB_NAME
        self.corrupt = 0
        """Rows found damaged and skipped (since this process started)."""
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="gateway-queue")
        self._lock = threading.Lock()
        self._work = Work()
        self._flushing = False
        self._closed = False
        self._bytes = 0
        self._records = 0
        self._db: sqlite3.Connection = self._call(self._open)

    # --- the database thread ---------------------------------------------------------------------

    def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        """Run `function(*args)` on the database thread and wait for its result."""
        return self._executor.submit(function, *args).result()

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, fsync=self.fsync)

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
        """The rows `seqs`; the sequence number alone for a row that does not read back whole."""
        out: list[StoredRequest | int] = []
        for seq in seqs:
            row = read_row(self._db, seq)
            out.append(seq if row is None else StoredRequest.from_row(row))
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
        waiting = Waiting.here()
        row = (signal, content_type, items, body, int(score))
        with self._lock:
            self._work.appends.append((row, waiting))
            self._schedule()
        return await waiting.future

    def done(self, seqs: Iterable[int]) -> None:
        """Forwarding of these requests is over (delivered or given up for good)."""
        with self._lock:
            self._work.done.extend(seqs)
            self._schedule()

    def scored(
        self,
        seqs: Iterable[int],
        trace_ids: Iterable[str],
        results: Sequence[ResultRequest] = (),
    ) -> Future[list[int]]:
        """These requests' traces are scored: remember these trace ids as scored and store
        their evaluation `results` as requests to forward, all in one transaction (a crash
        keeps all of it or none). The future gives the results' sequence numbers once
        committed; a failed commit is retried (never refused: the results are already made)."""
        future: Future[list[int]] = Future()
        with self._lock:
            self._work.unscore.extend(seqs)
            self._work.scored.extend(trace_ids)
            self._work.results.append((list(results), future))
            self._schedule()
        return future

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
                work, self._work = self._work, Work()
                if not (work.appends or work.records()):
                    self._flushing = False
                    return
            if work.appends and self.room.low(self._db, self._bytes, self._records):
                needed = self.room.needed(self._bytes, self._records)
                self._refuse(
                    work,
                    f"the disk of {self.directory} is nearly full (the queue keeps "
                    f"{needed} bytes free to record deliveries)",
                )
                work.appends = []
            try:
                self._write(work)
            except sqlite3.Error as error:
                self._refuse(work, f"cannot write to {self.path}: {error}")
                records = work.take_records()
                if work.appends and records.records():
                    try:  # without the new requests: recording deliveries frees space
                        self._write(records)
                        continue
                    except sqlite3.Error:
                        pass
                with self._lock:
                    self._work.put_back(records)
                    self._flushing = False
                retry = threading.Timer(1.0, self._retry)
                retry.daemon = True
                retry.start()
                return
            except Exception as error:  # a bug, not the disk: answer all, keep the queue going
                self._abandon(work, error)

    def _abandon(self, work: Work, error: Exception) -> None:
        """A transaction failed for a reason other than SQLite's (a bug): refuse its new
        requests, fail its results' futures and drop its delivery and scoring marks (their rows
        are replayed at the next start), so no caller waits forever and the next transaction
        does not meet the same failure; logged with the counts, never the content."""
        logger.error(
            "forward queue: a transaction failed (%s: %s): %d new requests refused, %d "
            "evaluation result requests dropped, %d delivery and %d scoring marks left to the "
            "next start",
            type(error).__name__,
            error,
            len(work.appends),
            sum(len(results) for results, _ in work.results),
            len(work.done),
            len(work.unscore),
        )
        self._refuse(work, f"cannot write to {self.path}: internal error {error!r}")
        for _, committed in work.results:
            committed.set_exception(error)

    def _refuse(self, work: Work, why: str) -> None:
        """Answer the new requests of `work` with a QueueWriteError (the receivers say 503)."""
        if work.appends:
            message = self.room.refuse(len(work.appends), why)
            answer(
                [waiting for _, waiting in work.appends],
                [QueueWriteError(message) for _ in work.appends],
            )

    def _retry(self) -> None:
        """Try again what a failed commit left (deliveries, scores and results to record),
        unless the queue was closed meanwhile."""
        with self._lock:
            if self._work.records() and not self._closed:
                self._schedule()

    def _insert(self, rows: list[NewRow], forward: int) -> list[int]:
        """Insert request rows, in order; their sequence numbers."""
        seqs: list[int] = []

        def values(row: NewRow) -> tuple[Any, ...]:
            return (*row[:4], zlib.crc32(row[3]), forward, row[4])

        for size, values_of_chunk in chunked(rows, values):
            cursor = self._db.execute(insert_sql(size), values_of_chunk)
            last = int(cursor.lastrowid or 0)
            seqs.extend(range(last - size + 1, last + 1))
        return seqs

    def _write(self, work: Work) -> None:
        """One transaction: insert the new requests and the evaluation results, mark the
        delivered and scored ones, record scored trace ids, delete the rows nothing needs;
        then answer the waiting appends and results."""
        db = self._db
        new = [row for row, _ in work.appends]
        new.extend(
            (r.signal, CONTENT_PROTOBUF, r.items, r.body, 0)
            for results, _ in work.results
            for r in results
        )
        db.execute("BEGIN IMMEDIATE")
        try:
            seqs = self._insert(new, 1)
            for column, marked in (("forward", work.done), ("score", work.unscore)):
                for size, values in chunked(marked, lambda seq: (seq,)):
                    db.execute(set_sql(column, size), values)
            self._record_scored(work.scored)
            removed = 0, 0
            if work.done or work.unscore:
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
        self._records += len(new) - int(removed[0])
        self._bytes += sum(len(row[3]) for row in new) - int(removed[1])
        answer([waiting for _, waiting in work.appends], seqs[: len(work.appends)])
        result_seqs = iter(seqs[len(work.appends) :])
        for results, committed in work.results:
            committed.set_result([next(result_seqs) for _ in results])

    def _record_scored(self, trace_ids: list[str]) -> None:
        """Remember `trace_ids` as scored now; forget the old ones as we go (in the open
        transaction)."""
        now = time.time()
        self._db.executemany(
            "INSERT OR REPLACE INTO scored (trace_id, at) VALUES (?, ?)",
            [(t, now) for t in trace_ids],
        )
        if trace_ids and now - self._pruned > 10.0:
            self._pruned = now
            self._db.execute("DELETE FROM scored WHERE at < ?", (now - self.keep_scored_s,))

    def sync(self) -> None:
        """Wait until what was asked of the queue so far is committed (or has failed), and
        its waiting callbacks have run."""
        self._call(lambda: None)

    def close(self) -> None:
        """Write what is pending, checkpoint the log and close."""
        self._executor.submit(self._close).result()
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        """Write what is pending, truncate the write-ahead log, close the connection."""
        with self._lock:
            left = self._work.records()
            self._closed = True
        if left:
            self._flushing = True
            self._flush()
        try:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error as error:
            logger.warning("forward queue: checkpoint at close failed: %s", error)
        self._db.close()
