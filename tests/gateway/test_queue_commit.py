"""The persistent queue's group commit, on a real SQLite database: many requests written by one
transaction each learn their own row, deliveries are recorded without a transaction of their
own, and nothing of a delivered request is left on disk."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

from groundwire.gateway._queue import DONE_DELAY_S, DiskQueue
from groundwire.gateway._signals import CONTENT_PROTOBUF


async def _append_all(queue: DiskQueue, bodies: list[bytes]) -> list[int]:
    """Append every body at once (they share commits); their sequence numbers, in order."""
    return list(
        await asyncio.gather(
            *(queue.append("traces", CONTENT_PROTOBUF, 1, body, score=False) for body in bodies)
        )
    )


def test_each_request_of_a_group_commit_gets_its_own_row_in_order(tmp_path: Path) -> None:
    """71 requests appended together (chunks of 64, 4, 2 and 1 rows per statement): each is
    answered with the sequence number of the row holding its own body, in the order appended,
    and a restart replays them in that order."""
    queue = DiskQueue(tmp_path)
    bodies = [f"request-{index}".encode() * (index + 1) for index in range(71)]
    seqs = asyncio.run(_append_all(queue, bodies))
    assert seqs == sorted(seqs) and len(set(seqs)) == 71
    queue.close()
    reopened = DiskQueue(tmp_path)
    stored = list(reopened.replay())
    assert [(s.seq, s.body) for s in stored] == list(zip(seqs, bodies, strict=True))
    assert reopened.held_records == 71
    assert reopened.held_bytes == sum(len(body) for body in bodies)
    reopened.close()


def test_deliveries_are_recorded_with_the_next_commit_or_on_their_own(tmp_path: Path) -> None:
    """A delivery waits for the next transaction (new requests) and is written with it; with no
    new request it is written on its own shortly after; either way the delivered rows are
    deleted and the held totals go back to what is still held."""
    queue = DiskQueue(tmp_path)
    first = asyncio.run(_append_all(queue, [b"a" * 100, b"b" * 200]))
    queue.done(first[:1])
    second = asyncio.run(_append_all(queue, [b"c" * 300]))  # its commit records the delivery
    assert (queue.held_records, queue.held_bytes) == (2, 500)
    queue.done([first[1], *second])  # nothing new arrives: written on its own
    deadline = time.monotonic() + 5.0
    while queue.held_records and time.monotonic() < deadline:
        time.sleep(DONE_DELAY_S)
    assert (queue.held_records, queue.held_bytes) == (0, 0)
    queue.close()
    with sqlite3.connect(tmp_path / "queue.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 0
