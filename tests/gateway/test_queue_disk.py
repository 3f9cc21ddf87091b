"""`DiskQueue` in-process on a real SQLite file: its defaults, opening (a new directory, a damaged
database), replay in order past damaged rows, the scored trace ids it keeps and forgets, a full
disk and failed commits (new requests refused with a clear message, records kept and retried),
and closing (the log checkpointed). Fast: no gateway process (the process-level tests are in
test_queue.py)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundwire.gateway._queue import DB_NAME, DiskQueue, QueueWriteError
from groundwire.gateway._results import ResultRequest
from groundwire.gateway._signals import CONTENT_PROTOBUF


class _Column:
    """A value SQLite stores as `text`, that first waits for `go` and raises SQLite's disk I/O
    error while `broken` is set: a slow or failing disk, at the moment a row is written."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.go = threading.Event()
        self.go.set()
        self.broken = threading.Event()
        self.waiting = threading.Event()

        self.calls = 0

    def __conform__(self, protocol: object) -> str:
        self.calls += 1
        self.waiting.set()
        self.go.wait(10)
        if self.broken.is_set():
            raise sqlite3.OperationalError("disk I/O error")
        return self.text


def _close(queue: DiskQueue) -> None:
    """Close the queue, failing (not hanging) when it does not close within 10 s."""
    closing = threading.Thread(target=queue.close, daemon=True)
    closing.start()
    closing.join(10)
    assert not closing.is_alive(), "the queue did not close"


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[DiskQueue]:
    """A queue in a fresh directory, closed after the test."""
    opened = DiskQueue(tmp_path, fsync=False)
    yield opened
    _close(opened)


def _append(
    queue: DiskQueue, body: bytes, *, signal: object = "traces", score: bool = False
) -> int:
    """Append one request on a loop of its own; its sequence number."""
    return asyncio.run(
        asyncio.wait_for(queue.append(signal, CONTENT_PROTOBUF, 1, body, score=score), 10)  # type: ignore[arg-type]
    )


def _rows(directory: Path, sql: str) -> list[tuple[object, ...]]:
    """What a second connection reads from the queue's database."""
    with sqlite3.connect(directory / DB_NAME) as db:
        return db.execute(sql).fetchall()


def test_the_defaults_keep_scored_ids_two_minutes_a_megabyte_free_and_sync_to_disk(
    tmp_path: Path,
) -> None:
    """Unless told otherwise the queue syncs each commit to disk, keeps scored trace ids 120 s
    and a MiB free, runs its database work on one thread named for it, and has seen no damage."""
    opened = DiskQueue(tmp_path)
    try:
        assert opened.fsync is True
        assert opened.keep_scored_s == 120.0
        assert opened.room.reserve_bytes == 1 << 20
        assert opened.corrupt == 0
        assert (opened.held_records, opened.held_bytes) == (0, 0)
        assert opened.path == tmp_path / DB_NAME
        names = {thread.name for thread in threading.enumerate()}
        assert "gateway-queue_0" in names
    finally:
        _close(opened)


def test_a_queue_directory_is_created_with_its_parents(tmp_path: Path) -> None:
    """A queue directory that does not exist yet, nor its parent, is created."""
    directory = tmp_path / "not" / "yet"
    opened = DiskQueue(directory, fsync=False)
    _close(opened)
    assert (directory / DB_NAME).is_file()


def test_the_held_totals_are_read_back_at_open(tmp_path: Path) -> None:
    """A reopened queue counts the requests and body bytes an earlier one left."""
    first = DiskQueue(tmp_path, fsync=False)
    _append(first, b"abc")
    _append(first, b"defgh", score=True)
    _close(first)
    again = DiskQueue(tmp_path, fsync=False)
    try:
        assert (again.held_records, again.held_bytes) == (2, 8)
        stored = list(again.replay())
        assert [(s.body, s.forward, s.score) for s in stored] == [
            (b"abc", True, False),
            (b"defgh", True, True),
        ]
    finally:
        _close(again)


def test_a_file_that_is_no_database_is_set_aside_and_the_queue_starts_empty(
    tmp_path: Path,
) -> None:
    """A queue file that is not a database is moved aside, counted as damaged, and a new,
    empty queue takes requests."""
    (tmp_path / DB_NAME).write_bytes(b"this is not a database" * 200)
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        assert opened.corrupt == 1
        assert (opened.held_records, opened.held_bytes) == (0, 0)
        seq = _append(opened, b"fresh")
        assert [(s.seq, s.body) for s in opened.replay()] == [(seq, b"fresh")]
        assert len([p for p in tmp_path.iterdir() if ".damaged-" in p.name]) == 1
    finally:
        _close(opened)


def test_a_database_failing_sqlites_check_is_set_aside_and_the_whole_rows_are_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A database that opens but that SQLite's own check finds damaged (a page's free-space
    header overwritten) is set aside, with the check's finding as the reason: the queue starts
    from the rows that read back whole, never from the damaged file."""
    first = DiskQueue(tmp_path, fsync=False)
    for index in range(40):
        _append(first, bytes([65 + index % 26]) * 3000)
    _close(first)
    path = tmp_path / DB_NAME
    data = bytearray(path.read_bytes())
    data[9 * 4096 + 1 : 9 * 4096 + 3] = b"\xff\xff"  # page 10's first free block
    path.write_bytes(bytes(data))
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        assert [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
        assert "Page 10: free space corruption" in caplog.records[0].getMessage()
        kept = list(opened.replay())
        assert opened.held_records == len(kept) <= 40
        assert all(s.body == s.body[:1] * 3000 for s in kept)
    finally:
        _close(opened)


def test_replay_reads_every_row_in_order_past_many_batches(queue: DiskQueue) -> None:
    """More rows than one read fetches (256): every one comes back once, oldest first."""

    async def fill() -> list[int]:
        return list(
            await asyncio.gather(
                *(
                    queue.append("traces", CONTENT_PROTOBUF, 1, b"%d" % index, score=False)
                    for index in range(600)
                )
            )
        )

    seqs = asyncio.run(fill())
    stored = list(queue.replay())
    assert [s.seq for s in stored] == seqs
    assert [s.body for s in stored] == [b"%d" % index for index in range(600)]


def test_a_damaged_row_is_skipped_counted_logged_and_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A row whose body no longer matches its checksum is not replayed: it is counted, logged
    by number, deleted, and no longer held; the rows around it come back."""
    first = DiskQueue(tmp_path, fsync=False)
    seqs = [_append(first, body) for body in (b"one", b"two!", b"three")]
    _close(first)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE requests SET crc = 1 WHERE seq = ?", (seqs[1],))
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        assert [s.body for s in opened.replay()] == [b"one", b"three"]
        assert opened.corrupt == 1
        assert (opened.held_records, opened.held_bytes) == (2, 8)
        assert [r.getMessage() for r in caplog.records] == [
            f"forward queue: request #{seqs[1]} is damaged (checksum mismatch); skipped and removed"
        ]
        opened.sync()
        assert _rows(tmp_path, "SELECT seq FROM requests ORDER BY seq") == [
            (seqs[0],),
            (seqs[2],),
        ]
        assert [s.body for s in opened.replay()] == [b"one", b"three"]
    finally:
        _close(opened)


def test_scored_ids_are_kept_for_keep_scored_s_then_forgotten(tmp_path: Path) -> None:
    """`scored_recently` names the trace ids scored within `keep_scored_s` and forgets (deletes)
    older ones."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        opened.scored([], ["recent", "old"]).result(10)
        with sqlite3.connect(tmp_path / DB_NAME) as db:
            db.execute("UPDATE scored SET at = ? WHERE trace_id = 'old'", (time.time() - 130,))
            db.execute("UPDATE scored SET at = ? WHERE trace_id = 'recent'", (time.time() - 110,))
        assert opened.scored_recently() == {"recent"}
        assert _rows(tmp_path, "SELECT trace_id FROM scored") == [("recent",)]
    finally:
        _close(opened)


def test_recording_scored_ids_forgets_old_ones_at_most_every_10_seconds(tmp_path: Path) -> None:
    """The first scored ids recorded forget the ones older than `keep_scored_s` in the same
    transaction; the next, within 10 s, leave that to later (it costs a statement)."""
    opened = DiskQueue(tmp_path, keep_scored_s=60.0, fsync=False)
    try:
        opened.scored([], ["first"]).result(10)
        with sqlite3.connect(tmp_path / DB_NAME) as db:
            db.execute("INSERT INTO scored VALUES ('stale', ?)", (time.time() - 61,))
        opened.scored([], ["second"]).result(10)
        assert sorted(_rows(tmp_path, "SELECT trace_id FROM scored")) == [
            ("first",),
            ("second",),
            ("stale",),
        ]
    finally:
        _close(opened)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE scored SET at = ? WHERE trace_id = 'first'", (time.time() - 59,))
    again = DiskQueue(tmp_path, keep_scored_s=60.0, fsync=False)
    try:
        again.scored([], ["third"]).result(10)
        assert sorted(_rows(tmp_path, "SELECT trace_id FROM scored")) == [
            ("first",),
            ("second",),
            ("third",),
        ]
    finally:
        _close(again)


def test_a_scored_request_stays_until_delivered_and_a_delivered_one_until_scored(
    queue: DiskQueue, tmp_path: Path
) -> None:
    """A request being scored leaves the disk only once both its delivery and its scoring are
    recorded, whichever comes first; the held totals follow."""
    first = _append(queue, b"aaaa", score=True)
    second = _append(queue, b"bb", score=True)
    queue.done([first])
    queue.scored([second], ["t2"]).result(10)
    assert (queue.held_records, queue.held_bytes) == (2, 6)
    assert _rows(tmp_path, "SELECT seq, forward, score FROM requests ORDER BY seq") == [
        (first, 0, 1),
        (second, 1, 0),
    ]
    queue.scored([first], ["t1"]).result(10)
    assert (queue.held_records, queue.held_bytes) == (1, 2)
    queue.done([second])
    queue.sync()
    assert (queue.held_records, queue.held_bytes) == (0, 0)
    assert _rows(tmp_path, "SELECT COUNT(*) FROM requests") == [(0,)]


def test_a_full_disk_refuses_new_requests_and_still_records_deliveries(
    tmp_path: Path,
) -> None:
    """With less free than the reserve, a new request is answered with a QueueWriteError that
    says why; a delivery asked for in the same transaction is recorded all the same (it frees
    space)."""
    first = DiskQueue(tmp_path, fsync=False)
    held = _append(first, b"held")
    _close(first)
    full = DiskQueue(tmp_path, reserve_bytes=1 << 62, fsync=False)
    try:
        slow = _Column("slow-trace")
        slow.go.clear()
        scoring = full.scored([], [slow])  # type: ignore[list-item]
        assert slow.waiting.wait(10)  # the database thread is in that commit

        async def both() -> BaseException | int:
            full.done([held])
            pending = asyncio.ensure_future(
                full.append("traces", CONTENT_PROTOBUF, 1, b"new", score=False)
            )
            await asyncio.sleep(0.05)  # both wait for the next commit
            slow.go.set()
            try:
                return await asyncio.wait_for(pending, 10)
            except QueueWriteError as error:
                return error

        outcome = asyncio.run(both())
        assert scoring.result(10) == []
        assert isinstance(outcome, QueueWriteError)
        needed = (1 << 62) + 4 + 4096
        assert str(outcome) == (
            f"the forward queue cannot take it: the disk of {tmp_path} is nearly full (the "
            f"queue keeps {needed} bytes free to record deliveries)"
        )
        full.sync()
        assert (full.held_records, full.held_bytes) == (0, 0)
        assert _rows(tmp_path, "SELECT trace_id FROM scored") == [("slow-trace",)]
    finally:
        _close(full)


def _stall(queue: DiskQueue, trace_id: str = "slow-trace") -> _Column:
    """Hold the database thread in a commit until the returned column's `go` is set (the
    requests asked for meanwhile share the next commit)."""
    slow = _Column(trace_id)
    slow.go.clear()
    queue.scored([], [slow])  # type: ignore[list-item]
    assert slow.waiting.wait(10)
    return slow


def test_a_failed_commit_refuses_the_new_requests_and_records_the_rest_without_them(
    tmp_path: Path,
) -> None:
    """SQLite fails the transaction (a disk I/O error while a new request is written): the new
    requests of it are answered with a QueueWriteError naming the file and the error, and the
    deliveries asked for with them are recorded in a transaction of their own."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        held = _append(opened, b"held")
        slow = _stall(opened)
        bad = _Column("traces")
        bad.broken.set()

        async def both() -> BaseException | int:
            opened.done([held])
            pending = asyncio.ensure_future(
                opened.append(bad, CONTENT_PROTOBUF, 1, b"new", score=False)  # type: ignore[arg-type]
            )
            await asyncio.sleep(0.05)
            slow.go.set()
            try:
                return await asyncio.wait_for(pending, 10)
            except QueueWriteError as error:
                return error

        outcome = asyncio.run(both())
        assert str(outcome) == (
            f"the forward queue cannot take it: cannot write to {tmp_path / DB_NAME}: disk I/O "
            "error"
        )
        opened.sync()
        assert (opened.held_records, opened.held_bytes) == (0, 0)
        assert _rows(tmp_path, "SELECT COUNT(*) FROM requests") == [(0,)]
        assert _append(opened, b"after") > held  # the queue goes on
    finally:
        _close(opened)


def test_records_of_a_failed_commit_are_kept_and_written_a_second_later(tmp_path: Path) -> None:
    """A commit of records only (a scored trace) that SQLite fails is not lost: it is tried
    again about a second later, and its future then gives the results' sequence numbers."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        flaky = _Column("trace-1")
        flaky.broken.set()
        started = time.monotonic()
        committed = opened.scored([], [flaky])  # type: ignore[list-item]
        assert flaky.waiting.wait(10)
        time.sleep(0.2)
        flaky.broken.clear()
        assert committed.result(10) == []
        elapsed = time.monotonic() - started
        assert 0.9 <= elapsed < 1.9, elapsed
        assert _rows(tmp_path, "SELECT trace_id FROM scored") == [("trace-1",)]
    finally:
        _close(opened)


def test_a_failed_commit_keeps_its_records_ahead_of_what_came_since(tmp_path: Path) -> None:
    """Records put back after a failed commit are written, with those asked for meanwhile, in
    the next commit (and new requests go on being answered once the disk works)."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        flaky = _Column("first")
        flaky.broken.set()
        earlier = opened.scored([], [flaky])  # type: ignore[list-item]
        assert flaky.waiting.wait(10)
        time.sleep(0.1)
        later = opened.scored([], ["second"])
        flaky.broken.clear()
        assert earlier.result(10) == [] and later.result(10) == []
        assert sorted(_rows(tmp_path, "SELECT trace_id FROM scored")) == [
            ("first",),
            ("second",),
        ]
    finally:
        _close(opened)


def test_a_transaction_failing_for_a_bug_is_logged_with_its_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A transaction that fails for a reason other than SQLite's: its new requests are refused
    with the error named, its results' futures fail, and one line gives the counts, never the
    content."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        held = _append(opened, b"held", score=True)
        slow = _stall(opened)
        caplog.set_level(logging.ERROR, logger="groundwire.gateway")

        async def together() -> BaseException | int:
            opened.done([held])
            poisoned = opened.scored([held], ["t"], [ResultRequest("traces", 1, "not bytes")])  # type: ignore[arg-type]
            pending = asyncio.ensure_future(
                opened.append("traces", CONTENT_PROTOBUF, 1, b"new", score=False)
            )
            await asyncio.sleep(0.05)
            slow.go.set()
            assert isinstance(poisoned.exception(10), TypeError)
            try:
                return await asyncio.wait_for(pending, 10)
            except QueueWriteError as error:
                return error

        outcome = asyncio.run(together())
        assert str(outcome).startswith(
            f"the forward queue cannot take it: cannot write to {tmp_path / DB_NAME}: internal "
            "error TypeError("
        )
        lines = [r.getMessage() for r in caplog.records if "a transaction failed" in r.getMessage()]
        assert len(lines) == 1
        assert lines[0].startswith("forward queue: a transaction failed (TypeError: ")
        assert lines[0].endswith(
            "): 1 new requests refused, 1 evaluation result requests dropped, 1 delivery and 1 "
            "scoring marks left to the next start"
        )
        opened.sync()
        assert [s.seq for s in opened.replay()] == [held]  # its marks were dropped
    finally:
        _close(opened)


def test_close_writes_what_is_pending_and_empties_the_log(tmp_path: Path) -> None:
    """`close` commits the records still pending and checkpoints the write-ahead log into the
    database, leaving the log empty."""
    opened = DiskQueue(tmp_path, fsync=False)
    seq = _append(opened, b"held")
    slow = _stall(opened)
    opened.done([seq])
    slow.go.set()
    _close(opened)
    wal = tmp_path / (DB_NAME + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert _rows(tmp_path, "SELECT COUNT(*) FROM requests") == [(0,)]


def test_every_damaged_row_counts_and_an_empty_one_frees_no_bytes(tmp_path: Path) -> None:
    """Two damaged rows count two; a damaged row with an empty body takes nothing from the
    held bytes when it is removed."""
    first = DiskQueue(tmp_path, fsync=False)
    seqs = [_append(first, body) for body in (b"", b"kept", b"gone")]
    _close(first)
    with sqlite3.connect(tmp_path / DB_NAME) as db:
        db.execute("UPDATE requests SET crc = 1 WHERE seq IN (?, ?)", (seqs[0], seqs[2]))
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        assert [s.body for s in opened.replay()] == [b"kept"]
        assert opened.corrupt == 2
        assert (opened.held_records, opened.held_bytes) == (1, 4)
    finally:
        _close(opened)


def test_the_log_line_of_a_failed_transaction_names_the_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The line logged for a transaction that failed for a bug gives the error's type and
    message (here: a result body that is not bytes)."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        poisoned = opened.scored([], ["t"], [ResultRequest("traces", 1, "text")])  # type: ignore[arg-type]
        assert isinstance(poisoned.exception(10), TypeError)
        (line,) = [r.getMessage() for r in caplog.records]
        assert line.startswith(
            "forward queue: a transaction failed (TypeError: a bytes-like object is required, "
            "not 'str'): 0 new requests refused, 1 evaluation result requests dropped"
        )
    finally:
        _close(opened)


def test_a_failed_commit_of_records_waits_a_second_on_a_daemon_timer(tmp_path: Path) -> None:
    """Records whose commit failed are not tried again at once (the disk that failed them is
    given a second), and the timer that retries them does not hold up the process's exit."""
    opened = DiskQueue(tmp_path, fsync=False)
    try:
        flaky = _Column("trace-1")
        flaky.broken.set()
        committed = opened.scored([], [flaky])  # type: ignore[list-item]
        assert flaky.waiting.wait(10)
        time.sleep(0.3)
        assert flaky.calls == 1
        timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
        assert timers and all(t.daemon for t in timers)
        flaky.broken.clear()
        assert committed.result(10) == []
        assert flaky.calls == 2
    finally:
        _close(opened)


def test_each_new_request_on_a_full_disk_is_refused(tmp_path: Path) -> None:
    """Requests refused one after another (the second within the room's 10 s between log
    lines) are each answered with the reason."""
    full = DiskQueue(tmp_path, reserve_bytes=1 << 62, fsync=False)
    try:
        for _ in range(2):
            with pytest.raises(QueueWriteError, match="is nearly full"):
                _append(full, b"x")
    finally:
        _close(full)


def test_old_scored_ids_are_forgotten_once_more_than_10_seconds_after_the_last_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the wall clock: scored ids recorded 10.5 s after the last forgetting forget the old
    ones again (9.5 s after, they do not)."""
    clock = [1_000_000.0]
    monkeypatch.setattr(time, "time", lambda: clock[0])
    opened = DiskQueue(tmp_path, keep_scored_s=60.0, fsync=False)
    try:
        opened.scored([], ["first"]).result(10)
        with sqlite3.connect(tmp_path / DB_NAME) as db:
            db.execute("INSERT INTO scored VALUES ('stale', ?)", (clock[0] - 100,))
        clock[0] += 9.5
        opened.scored([], ["second"]).result(10)
        assert ("stale",) in _rows(tmp_path, "SELECT trace_id FROM scored")
        clock[0] += 1.0
        opened.scored([], ["third"]).result(10)
        assert sorted(_rows(tmp_path, "SELECT trace_id FROM scored")) == [
            ("first",),
            ("second",),
            ("third",),
        ]
    finally:
        _close(opened)


def test_a_closed_queue_leaves_no_thread_behind(tmp_path: Path) -> None:
    """`close` returns once the queue's database thread has ended."""
    before = set(threading.enumerate())
    opened = DiskQueue(tmp_path / "own", fsync=False)
    _append(opened, b"x")
    threads = [t for t in set(threading.enumerate()) - before if t.name.startswith("gateway-queue")]
    assert threads
    opened.close()
    assert not any(t.is_alive() for t in threads)


def test_a_queue_that_syncs_to_disk_opens_its_database_with_full_sync(tmp_path: Path) -> None:
    """`fsync` True (the default) is SQLite's `synchronous=FULL` on the queue's connection
    (2); False is NORMAL (1)."""
    for fsync, level in ((True, 2), (False, 1)):
        opened = DiskQueue(tmp_path / str(fsync), fsync=fsync)
        try:
            opened.sync()
            assert opened._db.execute("PRAGMA synchronous").fetchone()[0] == level
        finally:
            _close(opened)


def test_close_writes_records_a_failed_commit_left_and_retries_nothing_after(
    tmp_path: Path,
) -> None:
    """Records waiting for their retry (their commit failed) are written by `close`, without
    waiting for the timer; a retry timer still running when the queue is closed does
    nothing (no error on its thread)."""
    errors: list[BaseException | None] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    try:
        opened = DiskQueue(tmp_path, fsync=False)
        flaky = _Column("late")
        flaky.broken.set()
        committed = opened.scored([], [flaky])  # type: ignore[list-item]
        assert flaky.waiting.wait(10)
        time.sleep(0.2)
        flaky.broken.clear()
        _close(opened)
        assert committed.result(1) == []
        assert _rows(tmp_path, "SELECT trace_id FROM scored") == [("late",)]

        again = DiskQueue(tmp_path / "again", fsync=False)
        stuck = _Column("never")
        stuck.broken.set()
        again.scored([], [stuck])  # type: ignore[list-item]
        assert stuck.waiting.wait(10)
        time.sleep(0.2)
        _close(again)  # fails once more at close: its timer fires after
        time.sleep(1.5)
        assert errors == []
    finally:
        threading.excepthook = hook
