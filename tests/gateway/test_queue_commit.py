"""The persistent queue's group commit, on a real SQLite database: many requests written by one
transaction each learn their own row, and deliveries marked together delete exactly the rows
delivered."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._results import ResultRequest
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


def test_delivered_requests_leave_the_disk_and_the_held_totals(tmp_path: Path) -> None:
    """Deliveries of some of a group's requests (marked several to a statement): exactly those
    rows are deleted, the held totals count what is left, and a restart replays only that."""
    queue = DiskQueue(tmp_path)
    bodies = [bytes([65 + index % 26]) * (100 + index) for index in range(70)]
    seqs = asyncio.run(_append_all(queue, bodies))
    queue.done(seqs[::2])
    queue.sync()
    kept = bodies[1::2]
    assert (queue.held_records, queue.held_bytes) == (35, sum(len(body) for body in kept))
    queue.close()
    with sqlite3.connect(tmp_path / "queue.sqlite3") as db:
        assert [row[0] for row in db.execute("SELECT seq FROM requests ORDER BY seq")] == seqs[1::2]
    reopened = DiskQueue(tmp_path)
    assert [s.body for s in reopened.replay()] == kept
    reopened.close()


def test_a_transaction_failing_for_a_bug_answers_everyone_and_the_queue_goes_on(
    tmp_path: Path,
) -> None:
    """A transaction that fails for a reason other than SQLite's (here an evaluation result
    whose body is not bytes, so its checksum raises TypeError): its results' future fails with
    that error, and the queue keeps committing: the next request is stored and replayed, not
    left waiting forever behind a flush that never ended."""
    queue = DiskQueue(tmp_path)
    poisoned = queue.scored([], ["ab" * 16], [ResultRequest("traces", 1, "not bytes")])  # type: ignore[arg-type]
    assert isinstance(poisoned.exception(timeout=10), TypeError)

    async def append() -> int:
        return await asyncio.wait_for(
            queue.append("traces", CONTENT_PROTOBUF, 1, b"after", score=False), timeout=10
        )

    seq = asyncio.run(append())
    queue.close()
    reopened = DiskQueue(tmp_path)
    assert [(s.seq, s.body) for s in reopened.replay()] == [(seq, b"after")]
    reopened.close()
