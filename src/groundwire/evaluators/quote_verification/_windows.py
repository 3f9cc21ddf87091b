"""Overlapping fixed-size character windows over each document (the units BM25 ranks)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_WINDOW",
    "MIN_WINDOW",
    "Window",
    "default_overlap",
    "default_window_size",
    "make_windows",
]

MAX_WINDOW = 500
"""The card's cap on the derived window size, in characters."""
MIN_WINDOW = 64
"""Our floor on the derived window size: a few words, so that a two-letter quote does not cut a
long document into hundreds of thousands of two-letter windows."""
_SIZE_FACTOR = 1.1
_OVERLAP_SHARE = 0.3


@dataclass(frozen=True, slots=True)
class Window:
    """One window: document index and [start, end) in that document's normalised text."""

    doc: int
    start: int
    end: int


def default_window_size(longest_quote: int) -> int:
    """1.1 x the longest quote, capped at 500 characters (the card's rule), at least 64."""
    # round first: 1.1 * 90 is 99.00000000000001 in floating point, which must not become 100
    size = math.ceil(round(_SIZE_FACTOR * longest_quote, 6))
    return max(MIN_WINDOW, min(MAX_WINDOW, size))


def default_overlap(window_size: int) -> int:
    """30% of the window, in characters."""
    return round(_OVERLAP_SHARE * window_size)


def make_windows(doc_lengths: Sequence[int], size: int, overlap: int) -> list[Window]:
    """Windows of `size` characters every `size - overlap`, per document; the last one ends at the
    document's end so nothing is left uncovered. Windows never span two documents."""
    step = size - overlap
    windows: list[Window] = []
    for doc, length in enumerate(doc_lengths):
        if length == 0:
            continue
        start = 0
        while start + size < length:
            windows.append(Window(doc, start, start + size))
            start += step
        windows.append(Window(doc, max(0, length - size), length))
    return windows
