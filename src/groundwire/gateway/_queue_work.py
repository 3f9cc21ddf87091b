"""What one transaction of the persistent queue writes (`Work`): the new requests, with the
futures awaiting their rows, and the records of deliveries, scores and evaluation results that
arrived since the last commit. Records are never refused; new requests may be (disk full)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

from groundwire.gateway._queue_waiters import Waiting
from groundwire.gateway._results import ResultRequest

__all__ = ["NewRow", "Work"]

NewRow = tuple[str, str, int, bytes, int]
"""(signal, content_type, items, body, score) of a request to insert (its CRC-32 is computed on
the database thread, off the event loop)."""


@dataclass
class Work:
    """What one transaction writes: everything asked for since the last one."""

    appends: list[tuple[NewRow, Waiting]] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    unscore: list[int] = field(default_factory=list)
    scored: list[str] = field(default_factory=list)
    results: list[tuple[list[ResultRequest], Future[list[int]]]] = field(default_factory=list)
    """Evaluation results to store with their traces' scored mark, as requests to forward."""

    def records(self) -> bool:
        """True when it records anything besides new requests (nothing of it may be refused)."""
        return bool(self.done or self.unscore or self.scored or self.results)

    def take_records(self) -> Work:
        """The records, leaving the new requests here."""
        taken = Work([], self.done, self.unscore, self.scored, self.results)
        self.done, self.unscore, self.scored, self.results = [], [], [], []
        return taken

    def put_back(self, earlier: Work) -> None:
        """Put the records of a failed transaction back ahead of what came since."""
        self.done[:0] = earlier.done
        self.unscore[:0] = earlier.unscore
        self.scored[:0] = earlier.scored
        self.results[:0] = earlier.results
