"""The in-memory caches stay within their bound and forget the least recently used first."""

from __future__ import annotations

import pytest

from groundwire.capture import LiveContent, LiveContentStore
from groundwire.judges import MemoryCache


def test_judge_cache_evicts_the_least_recently_used_reply() -> None:
    """A reply read since it was stored outlives one stored later but never read."""
    cache = MemoryCache(max_entries=2)
    cache.set("a", "1")
    cache.set("b", "2")
    assert cache.get("a") == "1"  # "a" is now the most recently used
    cache.set("c", "3")
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == ("1", None, "3", 2)


def test_live_content_store_keeps_the_newest_spans_and_reading_does_not_refresh() -> None:
    """The store drops the oldest stored span past its bound; `get` leaves the order alone."""
    store = LiveContentStore(max_spans=2)
    store.enabled = True
    first, second, third = (LiveContent(input=text) for text in ("one", "two", "three"))
    store.put((1, 1), first)
    store.put((1, 2), second)
    assert store.get((1, 1)) is first
    store.put((1, 3), third)
    assert (store.get((1, 1)), store.get((1, 2)), len(store)) == (None, second, 2)
    assert store.pop((1, 3)) is third and store.pop((1, 3)) is None
    store.clear()
    assert len(store) == 0


def test_live_content_store_ignores_puts_while_disabled() -> None:
    """Nothing is kept until the online runner enables the store."""
    store = LiveContentStore()
    store.put((1, 1), LiveContent(input="x"))
    assert len(store) == 0 and store.get((1, 1)) is None


def test_bounds_below_one_are_refused_with_the_parameter_named() -> None:
    """A bound of 0 is a mistake, named in the message."""
    with pytest.raises(ValueError, match="max_entries"):
        MemoryCache(max_entries=0)
    with pytest.raises(ValueError, match="max_spans"):
        LiveContentStore(max_spans=0)
