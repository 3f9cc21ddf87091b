"""The room the persistent queue keeps on its disk, in-process on a real SQLite database: what it
keeps free, when it counts the database's free pages, the checkpoint at most once a second, and
the refusal lines at most every 10 seconds (the process-level full disk is in test_queue.py)."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest

from groundwire.gateway._queue_room import DiskRoom
from groundwire.gateway._queue_rows import DB_NAME, connect, insert_sql

_HUGE = 1 << 62
"""More bytes than any disk here has."""


def _disk_free(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _fill(db: sqlite3.Connection, rows: int, size: int) -> None:
    """Insert `rows` requests of `size` bytes each."""
    for _ in range(rows):
        db.execute(insert_sql(1), ("traces", "c", 1, b"x" * size, 0, 1, 1))


def test_needed_is_the_reserve_plus_the_held_bytes_and_a_page_per_request(tmp_path: Path) -> None:
    """Room kept free: the reserve, the held body bytes, and 4096 bytes for each held request."""
    room = DiskRoom(tmp_path, 1000)
    assert room.needed(0, 0) == 1000
    assert room.needed(500, 3) == 1000 + 500 + 3 * 4096


def test_free_is_the_disk_alone_when_it_has_enough(tmp_path: Path) -> None:
    """With enough free on the disk the database is not asked (a closed connection does not
    matter) and the answer is what the disk has free for this user."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    db.close()
    room = DiskRoom(tmp_path, 1 << 20)
    before = _disk_free(tmp_path)
    free = room._free(db, 0)
    assert abs(free - before) < 64 << 20
    assert free != room.reserve_bytes


def test_free_adds_the_pages_the_database_reuses_when_the_disk_is_short(tmp_path: Path) -> None:
    """When the disk alone is short of what is needed, the pages the database freed (and reuses
    before it grows) count as room too."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    _fill(db, 200, 100_000)
    db.execute("DELETE FROM requests")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = db.execute("PRAGMA freelist_count").fetchone()[0]
    reused = pages * 4096
    assert reused > 16 << 20
    room = DiskRoom(tmp_path, 0)
    before = _disk_free(tmp_path)
    free = room._free(db, _HUGE)
    assert abs(free - reused - before) < 4 << 20
    db.close()


def test_free_is_the_reserve_when_it_cannot_be_told(tmp_path: Path) -> None:
    """A disk that cannot be asked (a directory gone) or a database that cannot (closed) when
    the disk is short: the reserve, so that SQLite says whether the write fits."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    db.close()
    assert DiskRoom(tmp_path, 12345)._free(db, _HUGE) == 12345
    assert DiskRoom(tmp_path / "gone", 777)._free(db, 0) == 777


def test_a_disk_with_room_is_not_low(tmp_path: Path) -> None:
    """Nothing held and no reserve: not low."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    assert DiskRoom(tmp_path, 0).low(db, 0, 0) is False
    assert DiskRoom(tmp_path, 0).low(db, 100, 1) is False
    db.close()


def test_a_short_disk_is_low_and_checkpoints_at_most_once_a_second(tmp_path: Path) -> None:
    """Short of room: low; the log is moved into the database (checkpoint) on the first such
    answer, not again within a second, and again once a second has passed."""
    path = tmp_path / DB_NAME
    db = connect(path, fsync=False)
    wal = Path(str(path) + "-wal")
    room = DiskRoom(tmp_path, _HUGE)
    _fill(db, 3, 1000)
    assert wal.stat().st_size > 0
    assert room.low(db, 0, 0) is True
    assert wal.stat().st_size == 0  # checkpointed (TRUNCATE)
    _fill(db, 3, 1000)
    assert room.low(db, 0, 0) is True
    assert wal.stat().st_size > 0  # not within a second
    room._checkpointed -= 1.5
    assert room.low(db, 0, 0) is True
    assert wal.stat().st_size == 0
    db.close()


def test_exactly_the_room_needed_is_not_low(tmp_path: Path) -> None:
    """Free space equal to what is needed is enough: a database that cannot say what it reuses
    counts the reserve as free, and with nothing held that is exactly what is needed."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    db.close()
    assert DiskRoom(tmp_path, _HUGE).low(db, 0, 0) is False


def test_a_disk_with_exactly_what_is_needed_answers_alone(tmp_path: Path) -> None:
    """The disk's free space equal to what is needed: the disk alone answers (a closed database
    is not asked, so the answer is not the reserve)."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    db.close()
    room = DiskRoom(tmp_path, 12345)
    for _ in range(50):  # other writers on this disk may change its free space meanwhile
        before = _disk_free(tmp_path)
        free = room._free(db, before)
        if _disk_free(tmp_path) == before:
            break
    assert free == before


def test_a_checkpoint_that_fails_answers_low(tmp_path: Path) -> None:
    """A database that cannot checkpoint (closed) while the disk is short: low (the reserve
    counts as free when the database cannot say, short of the page the held request needs)."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    db.close()
    assert DiskRoom(tmp_path, _HUGE).low(db, 0, 1) is True


def test_a_checkpoint_that_frees_enough_answers_not_low(tmp_path: Path) -> None:
    """Short at first, but the check after the checkpoint finds room (the database can say
    nothing, so the reserve counts as free, which is what is needed): not low."""
    db = connect(tmp_path / DB_NAME, fsync=False)
    room = DiskRoom(tmp_path, _HUGE)
    answers = iter([0, _HUGE])
    room._free = lambda _db, _needed: next(answers)  # type: ignore[method-assign]
    assert room.low(db, 0, 0) is False
    db.close()


def test_refusals_are_logged_at_most_every_10_seconds_with_the_count_since(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each refusal gets the message to answer with; the first is logged, those within 10 s are
    only counted, and the next line says how many were refused since the last one."""
    caplog.set_level(logging.ERROR, logger="groundwire.gateway")
    room = DiskRoom(tmp_path, 0)
    assert (
        room.refuse(1, "the disk is full") == "the forward queue cannot take it: the disk is full"
    )
    assert room.refuse(3, "again") == "the forward queue cannot take it: again"
    assert room.refuse(2, "again") == "the forward queue cannot take it: again"
    assert [r.getMessage() for r in caplog.records] == [
        "forward queue: refusing new requests (503): the disk is full"
    ]
    room._warned -= 10.5
    room.refuse(1, "still full")
    room._warned -= 10.5
    room.refuse(1, "still full")
    assert [r.getMessage() for r in caplog.records][1:] == [
        "forward queue: refusing new requests (503): still full (5 more refused since the last "
        "such line)",
        "forward queue: refusing new requests (503): still full",
    ]
