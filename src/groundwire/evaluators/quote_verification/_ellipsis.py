"""Ellipsis quotes ("head ... tail"): splitting, and choosing the best head/tail pair."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from groundwire.evaluators.quote_verification._normalise import NormalisedText
from groundwire.evaluators.quote_verification._rows import MatchKind

__all__ = ["ELLIPSIS", "Located", "best_pair", "has_ellipsis", "split_ellipsis", "weighted_ratio"]

ELLIPSIS = re.compile(r"[\[(]?\s*(?:\.{3,}|…)\s*[\])]?")
"""What marks an omission in a quote: three or more dots or the ellipsis character (the card's
`\\.{3,}|…`), with the brackets of an editorial "[...]" or "(…)" taken along."""


@dataclass(frozen=True, slots=True)
class Located:
    """A span found for a quote or part: document, normalised [start, end), match and BM25."""

    doc: int
    start: int
    end: int
    ratio: float
    bm25_score: float | None
    bm25_ratio: float | None
    kind: MatchKind


def has_ellipsis(quote: str) -> bool:
    """True when the quote marks an omission."""
    return ELLIPSIS.search(quote) is not None


def split_ellipsis(quote: str) -> list[str]:
    """The non-empty parts between ellipses, stripped (one part when the ellipsis is at an end)."""
    return [part.strip() for part in ELLIPSIS.split(quote) if part.strip()]


def weighted_ratio(head: str, head_ratio: float, tail: str, tail_ratio: float) -> float:
    """Head and tail match ratios averaged by their lengths."""
    return (len(head) * head_ratio + len(tail) * tail_ratio) / (len(head) + len(tail))


def best_pair(
    head: str,
    tail: str,
    heads: Sequence[Located],
    tails: Sequence[Located],
    gap_of: GapFunction,
    max_gap: int | None,
) -> tuple[Located, Located] | None:
    """The head/tail pair in one document, tail after head and within the gap limit, with the
    best length-weighted match ratio (ties: the smallest gap)."""
    best: tuple[Located, Located] | None = None
    best_key = (-1.0, 0)
    for first in heads:
        for second in tails:
            if second.doc != first.doc or second.start < first.end:
                continue
            gap = gap_of(first, second)
            if max_gap is not None and gap > max_gap:
                continue
            key = (weighted_ratio(head, first.ratio, tail, second.ratio), -gap)
            if key > best_key:
                best_key, best = key, (first, second)
    return best


class GapFunction:
    """Characters between a head's end and a tail's start in the original document text."""

    def __init__(self, norms: Sequence[NormalisedText]) -> None:
        """`norms[doc]` maps a normalised span of that document back to original offsets."""
        self._norms = norms

    def __call__(self, head: Located, tail: Located) -> int:
        """The original-text gap between head and tail (same document)."""
        norm = self._norms[head.doc]
        head_end = norm.to_original(head.start, head.end)[1]
        tail_start = norm.to_original(tail.start, tail.end)[0]
        return tail_start - head_end
