"""What one transaction of the persistent queue writes (`Work`) and how the requests waiting for
it hear the outcome (`answer`), on real asyncio loops: records are taken apart from the new
requests and put back ahead of what came since; each waiting future gets its own outcome, with
one hand-off per loop, and a closed loop or a cancelled request is passed over."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future

import pytest

from groundwire.gateway._queue_waiters import Waiting, answer
from groundwire.gateway._queue_work import Work
from groundwire.gateway._results import ResultRequest


def test_a_new_work_is_empty_and_each_one_has_lists_of_its_own() -> None:
    """Two fresh `Work`s share no list: what one is asked does not show in the other."""
    first, second = Work(), Work()
    assert first.records() is False
    first.done.append(1)
    first.unscore.append(2)
    first.scored.append("ab")
    first.results.append(([], Future()))
    assert (second.appends, second.done, second.unscore, second.scored, second.results) == (
        [],
        [],
        [],
        [],
        [],
    )
    assert second.records() is False


@pytest.mark.parametrize("field", ["done", "unscore", "scored", "results"])
def test_any_one_kind_of_record_counts_as_records(field: str) -> None:
    """A delivery, an unscore mark, a scored trace or results, each alone, is a record."""
    work = Work()
    getattr(work, field).append(object())
    assert work.records() is True


def test_new_requests_alone_are_not_records() -> None:
    """New requests may be refused; they are not records."""
    work = Work()
    loop = asyncio.new_event_loop()
    try:
        work.appends.append((("traces", "p", 1, b"x", 0), Waiting(loop, loop.create_future())))
        assert work.records() is False
    finally:
        loop.close()


def test_take_records_moves_every_record_and_leaves_the_new_requests() -> None:
    """The taken `Work` holds each kind of record in its own field and no new request; the
    one taken from keeps its new requests and holds no record any more."""
    loop = asyncio.new_event_loop()
    try:
        append = (("traces", "p", 1, b"x", 0), Waiting(loop, loop.create_future()))
        future: Future[list[int]] = Future()
        results = ([ResultRequest("traces", 1, b"r")], future)
        work = Work([append], [1, 2], [3], ["ab"], [results])
        taken = work.take_records()
        assert (taken.appends, taken.done, taken.unscore, taken.scored, taken.results) == (
            [],
            [1, 2],
            [3],
            ["ab"],
            [results],
        )
        assert (work.appends, work.done, work.unscore, work.scored, work.results) == (
            [append],
            [],
            [],
            [],
            [],
        )
        assert work.records() is False
        work.done.append(9)
        assert taken.done == [1, 2]  # new lists, not the taken ones emptied
    finally:
        loop.close()


def test_put_back_puts_the_earlier_records_ahead_of_what_came_since() -> None:
    """Each kind of record of a failed transaction goes back in front, in its own order."""
    first: Future[list[int]] = Future()
    later: Future[list[int]] = Future()
    earlier = Work([], [1, 2], [3, 4], ["a", "b"], [([], first)])
    work = Work([], [5, 6], [7], ["c"], [([], later)])
    work.put_back(earlier)
    assert work.done == [1, 2, 5, 6]
    assert work.unscore == [3, 4, 7]
    assert work.scored == ["a", "b", "c"]
    assert [future for _, future in work.results] == [first, later]


class _CountingLoop(asyncio.SelectorEventLoop):
    """A real event loop that counts the hand-offs from other threads."""

    def __init__(self) -> None:
        super().__init__()
        self.handoffs = 0

    def call_soon_threadsafe(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.handoffs += 1
        return super().call_soon_threadsafe(*args, **kwargs)


def test_waiting_here_makes_a_pending_future_on_the_running_loop() -> None:
    """`Waiting.here` is a new, pending future of the loop it is called on."""

    async def make() -> tuple[Waiting, asyncio.AbstractEventLoop]:
        return Waiting.here(), asyncio.get_running_loop()

    loop = asyncio.new_event_loop()
    try:
        waiting, running = loop.run_until_complete(make())
        assert waiting.loop is running is loop
        assert waiting.future.get_loop() is loop and not waiting.future.done()
    finally:
        loop.close()


def test_each_future_gets_its_own_outcome_in_one_handoff_per_loop() -> None:
    """Outcomes from another thread, for futures of two loops: each future gets the outcome
    at its own place (a number, or an exception raised from it), and each loop is woken once."""
    loops = [_CountingLoop(), _CountingLoop()]
    try:
        waiting = [Waiting(loops[i % 2], loops[i % 2].create_future()) for i in range(5)]
        refused = OSError("disk full")
        outcomes: list[int | BaseException] = [10, 11, refused, 13, 14]
        thread = threading.Thread(target=answer, args=(waiting, outcomes))
        thread.start()
        thread.join()
        assert [loop.handoffs for loop in loops] == [1, 1]
        for loop in loops:
            loop.run_until_complete(asyncio.sleep(0))
        assert [w.future.result() for i, w in enumerate(waiting) if i != 2] == [10, 11, 13, 14]
        assert waiting[2].future.exception() is refused
    finally:
        for loop in loops:
            loop.close()


def test_a_cancelled_request_is_passed_over_and_the_others_still_answered() -> None:
    """A future cancelled meanwhile (its connection closed) is left as it is; the ones after
    it still get their outcomes."""
    loop = asyncio.new_event_loop()
    try:
        waiting = [Waiting(loop, loop.create_future()) for _ in range(3)]
        waiting[0].future.cancel()
        answer(waiting, [1, 2, 3])
        loop.run_until_complete(asyncio.sleep(0))
        assert waiting[0].future.cancelled()
        assert [w.future.result() for w in waiting[1:]] == [2, 3]
    finally:
        loop.close()


def test_a_closed_loop_is_passed_over_without_an_error() -> None:
    """Nobody waits on a closed loop any more: answering its futures raises nothing, and the
    futures of another loop are still answered."""
    closed, open_loop = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        gone = Waiting(closed, closed.create_future())
        closed.close()
        live = Waiting(open_loop, open_loop.create_future())
        answer([gone, live], [1, 2])
        open_loop.run_until_complete(asyncio.sleep(0))
        assert live.future.result() == 2 and not gone.future.done()
    finally:
        open_loop.close()


def test_outcomes_must_match_the_waiting_one_for_one() -> None:
    """A count of outcomes other than of the waiting is a bug, raised, never a future left
    unanswered in silence."""
    loop = asyncio.new_event_loop()
    try:
        waiting = [Waiting(loop, loop.create_future()) for _ in range(2)]
        with pytest.raises(ValueError, match="shorter"):
            answer(waiting, [1])
    finally:
        loop.close()
