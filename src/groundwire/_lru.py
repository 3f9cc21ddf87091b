"""A bounded, thread-safe map that forgets its least recently stored entries first.

What the in-memory caches share (`groundwire.capture.LiveContentStore`, the judges'
`MemoryCache`): a bound on entries so memory cannot grow with an app's traffic, evicting the
oldest, and one lock so that threads of the app and of the runner can use it at once. Each owner
checks its own bound (its message names its own parameter) and adds its own rules.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["BoundedLru"]

K = TypeVar("K")
V = TypeVar("V")


class BoundedLru(Generic[K, V]):
    """At most `max_items` entries; storing one more drops the least recently used."""

    def __init__(self, max_items: int) -> None:
        """`max_items` (at least 1) is checked by the owner, which names it in its message."""
        self._max = max_items
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: K, value: V) -> None:
        """Store `value` under `key` as the most recent entry, evicting beyond the bound."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)

    def get(self, key: K, *, touch: bool = False) -> V | None:
        """The value under `key`, or None; `touch` marks it as the most recently used."""
        with self._lock:
            value = self._items.get(key)
            if touch and value is not None:
                self._items.move_to_end(key)
            return value

    def pop(self, key: K) -> V | None:
        """Remove and return the value under `key`, if any."""
        with self._lock:
            return self._items.pop(key, None)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        """How many entries are kept."""
        with self._lock:
            return len(self._items)
