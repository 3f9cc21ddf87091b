"""One run of the app traced by two instrumentors at once gives one turn, not two.

Two instrumentors on one app (say OpenInference and OpenLLMetry on the same LangChain chain)
record the same run twice, in one trace or in two. Within a trace the turn rule already gives one
turn (and `_build` keeps one dialect's retrievals). Across traces, a turn is a duplicate of
another when both have the same query, contexts and answer, their roots come from different
instrumentation scopes, and the roots' time spans overlap: the run happened once.
`drop_duplicates` keeps the turn whose root was read in the higher-precedence dialect;
`DuplicateFilter` (live, where turns arrive one trace at a time) keeps the first.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Final

from groundwire._types import RagTurn
from groundwire.assembly._record import SpanRecord

__all__ = ["DuplicateFilter", "drop_duplicates"]

_Key = tuple[str, tuple[str, ...], str]
_REMEMBER: Final = 256
"""Recent turns a `DuplicateFilter` compares against."""


def _key(turn: RagTurn) -> _Key:
    """What two records of one run share: query, contexts, answer."""
    return turn.query, tuple(turn.context_texts), turn.answer


def _same_run(a: SpanRecord, b: SpanRecord) -> bool:
    """Roots from different instrumentations whose time spans overlap."""
    if a.instrumentation_scope == b.instrumentation_scope:
        return False
    a_end = a.end_time_ns if a.end_time_ns is not None else a.start_time_ns
    b_end = b.end_time_ns if b.end_time_ns is not None else b.start_time_ns
    return a.start_time_ns <= b_end and b.start_time_ns <= a_end


def drop_duplicates(entries: list[tuple[RagTurn, SpanRecord, int]]) -> list[RagTurn]:
    """The turns of `(turn, root, dialect rank)` entries, duplicates of one run dropped.

    Of a set of duplicates the turn with the best (lowest) dialect rank stays, at its place.
    Linear when every root comes from one instrumentation (the usual case).
    """
    if len({root.instrumentation_scope for _, root, _ in entries}) < 2:
        return [turn for turn, _, _ in entries]
    by_key: dict[_Key, list[int]] = {}
    for index, (turn, _, _) in enumerate(entries):
        by_key.setdefault(_key(turn), []).append(index)
    dropped: set[int] = set()
    for indices in by_key.values():
        if len(indices) < 2:
            continue
        ranked = sorted(indices, key=lambda i: (entries[i][2], i))
        kept: list[int] = []
        for index in ranked:
            root = entries[index][1]
            if any(_same_run(root, entries[other][1]) for other in kept):
                dropped.add(index)
            else:
                kept.append(index)
    return [turn for index, (turn, _, _) in enumerate(entries) if index not in dropped]


class DuplicateFilter:
    """Live: drops a turn that duplicates one of the recent turns (first one wins). Thread-safe."""

    def __init__(self, remember: int = _REMEMBER) -> None:
        """Compare against the last `remember` turns."""
        self._recent: deque[tuple[_Key, SpanRecord]] = deque(maxlen=remember)
        self._keys: dict[_Key, int] = {}
        """How many of the recent turns have each key (so most turns skip the scan)."""
        self._lock = threading.Lock()
        self.dropped = 0
        """Turns dropped as duplicates."""

    def keep(self, turn: RagTurn, root: SpanRecord) -> bool:
        """True for a new turn (remembered); False for a duplicate of a recent one (counted)."""
        key = _key(turn)
        with self._lock:
            if key in self._keys and any(
                seen == key and _same_run(root, other) for seen, other in self._recent
            ):
                self.dropped += 1
                return False
            if len(self._recent) == self._recent.maxlen:
                oldest = self._recent[0][0]
                self._keys[oldest] -= 1
                if not self._keys[oldest]:
                    del self._keys[oldest]
            self._recent.append((key, root))
            self._keys[key] = self._keys.get(key, 0) + 1
            return True
