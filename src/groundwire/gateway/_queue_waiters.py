"""The requests waiting for the persistent queue's commit, and how they hear the outcome.

A request is answered 200 only once its row is committed; each receiver awaits that on the
asyncio loop while the commit runs on the queue's database thread. Handing each outcome across
on its own (a `concurrent.futures.Future` wrapped for asyncio) costs a wake-up of the loop and
two futures per request; one commit carries every request that arrived while the previous one
ran, so `answer` hands all of a commit's outcomes to the loop at once: one
`call_soon_threadsafe` per commit. An awaiting request that was cancelled meanwhile (its
connection closed at shutdown) is passed over; its row stays and is replayed at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

__all__ = ["Waiting", "answer"]


class Waiting(NamedTuple):
    """One request awaiting its commit: the future it awaits, on the loop it runs on."""

    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[int]

    @classmethod
    def here(cls) -> Waiting:
        """A new waiting future on the running loop."""
        loop = asyncio.get_running_loop()
        return cls(loop, loop.create_future())


_Outcome = int | BaseException
"""A committed request's sequence number, or why it was refused."""


def answer(waiting: Sequence[Waiting], outcomes: Iterable[_Outcome]) -> None:
    """Settle each waiting future with its outcome (in order), from any thread: one hand-off
    per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[int], _Outcome]]] = {}
    for (loop, future), outcome in zip(waiting, outcomes, strict=True):
        by_loop.setdefault(loop, []).append((future, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[tuple[asyncio.Future[int], _Outcome]]) -> None:
    """On the loop: set each future still waiting."""
    for future, outcome in settled:
        if future.done():
            continue
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
