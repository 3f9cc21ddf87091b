"""Trimming a window to the quote's bounds: fuzzy, sliding_bm25 or hybrid, snapped to words.

All three work on normalised text and return an `Alignment` in the region's coordinates whose
`ratio` is `match_ratio(quote, span)` (1.0 = identical).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from rapidfuzz import fuzz

from groundwire.evaluators.quote_verification._bm25 import tokenize

__all__ = [
    "TRIM_METHODS",
    "Alignment",
    "TrimMethod",
    "is_word",
    "match_ratio",
    "trim",
    "window_ratio",
]

TrimMethod: TypeAlias = Literal["fuzzy", "sliding_bm25", "hybrid"]
TRIM_METHODS: tuple[str, ...] = ("fuzzy", "sliding_bm25", "hybrid")

_WORD = re.compile(r"\w+")
_NON_SPACE = re.compile(r"\S+")
_MAX_CANDIDATES = 6
"""Boundary candidates tried on each side of a span."""
_MARGIN = 40
"""Characters searched beyond the tolerance so the nearest boundary outside it is found too."""


@dataclass(frozen=True, slots=True)
class Alignment:
    """A span [start, end) of a region and how closely it matches the quote (0..1)."""

    start: int
    end: int
    ratio: float

    def shifted(self, offset: int) -> Alignment:
        """The same alignment in coordinates `offset` characters further right."""
        return Alignment(self.start + offset, self.end + offset, self.ratio)


def _ratio(quote: str, span: str) -> float:
    """Character-level normalised Indel similarity, 0..1."""
    return fuzz.ratio(quote, span) / 100.0


def match_ratio(quote: str, span: str) -> float:
    """How well a span matches a quote, 0..1: the mean of the character-level and the word-level
    normalised Indel similarity. Characters forgive typos; words keep a made-up quote written
    with the documents' common words from scoring like a near miss."""
    words = fuzz.ratio(tokenize(quote), tokenize(span)) / 100.0
    return (_ratio(quote, span) + words) / 2.0


def window_ratio(quote: str, region: str) -> float:
    """How well the quote matches the best part of an untrimmed window (partial ratio, 0..1)."""
    return fuzz.partial_ratio(quote, region) / 100.0


def is_word(char: str) -> bool:
    """True for a character `\\w` matches (alphanumeric or underscore)."""
    return char.isalnum() or char == "_"


def _is_token(char: str) -> bool:
    """True for a character inside a whitespace-free run."""
    return not char.isspace()


_PATTERNS = ((_WORD, is_word), (_NON_SPACE, _is_token))


def _boundaries(region: str, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """Word and token boundaries in region[lo:hi]: where a `\\w+` or whitespace-free run starts,
    where one ends (a run cut by lo or hi has no boundary there)."""
    lo, hi = max(0, lo), min(len(region), hi)
    starts: set[int] = set()
    ends: set[int] = set()
    for pattern, inside in _PATTERNS:
        for match in pattern.finditer(region, lo, hi):
            start, end = match.start(), match.end()
            if start > lo or start == 0 or not inside(region[start - 1]):
                starts.add(start)
            if end < hi or end == len(region) or not inside(region[end]):
                ends.add(end)
    return sorted(starts), sorted(ends)


def _near(positions: list[int], target: int, tolerance: int) -> list[int]:
    """The boundaries within `tolerance` of `target`, nearest first (at least the nearest one)."""
    lo = bisect.bisect_left(positions, target - tolerance)
    hi = bisect.bisect_right(positions, target + tolerance)
    found = positions[max(0, lo - 1) : hi + 1]
    found.sort(key=lambda position: abs(position - target))
    return found[:_MAX_CANDIDATES]


def snap(quote: str, region: str, start: int, end: int, tolerance: int) -> Alignment:
    """Move [start, end) to the nearby word boundaries whose span is closest to the quote
    (character similarity; start, then end, then start again), scored with `match_ratio`."""
    reach = tolerance + _MARGIN
    starts = _near(_boundaries(region, start - reach, start + reach)[0], start, tolerance)
    ends = _near(_boundaries(region, end - reach, end + reach)[1], end, tolerance)
    if not starts or not ends:
        return Alignment(start, end, match_ratio(quote, region[start:end]))

    def best(candidates: list[int], other: int, moving_start: bool) -> int:
        """The candidate position giving the closest span (ties: nearest the aligned one)."""
        scored = []
        for position in candidates:
            lo, hi = (position, other) if moving_start else (other, position)
            if hi > lo:
                target = start if moving_start else end
                scored.append((_ratio(quote, region[lo:hi]), -abs(position - target), position))
        return max(scored)[2] if scored else candidates[0]

    best_start = best(starts, ends[0], moving_start=True)
    best_end = best(ends, best_start, moving_start=False)
    best_start = best(starts, best_end, moving_start=True)
    if best_end <= best_start:
        best_start, best_end = start, end
    return Alignment(best_start, best_end, match_ratio(quote, region[best_start:best_end]))


def _tolerance(quote: str) -> int:
    """How far (characters) snapping may move a span end: a tenth of the quote, at least 8."""
    return max(8, len(quote) // 10)


def trim_fuzzy(quote: str, region: str) -> Alignment:
    """rapidfuzz's best partial alignment of the quote in the region, snapped to word boundaries."""
    found = fuzz.partial_ratio_alignment(quote, region)
    if found is None:  # only happens with a score cutoff, which is not used here
        return Alignment(0, len(region), match_ratio(quote, region))
    return snap(quote, region, found.dest_start, found.dest_end, _tolerance(quote))


def trim_sliding_bm25(quote: str, region: str, idf: Callable[[str], float], k1: float) -> Alignment:
    """Slide a window of the quote's word count over the region's words; keep the one with the
    highest BM25 score against the quote (equal lengths, so no length normalisation)."""
    query = Counter(tokenize(quote))
    words = list(_WORD.finditer(region))
    size = sum(query.values())
    if not words or size == 0:
        return trim_fuzzy(quote, region)
    size = min(size, len(words))
    weight = {term: count * idf(term) for term, count in query.items()}

    def saturation(tf: int) -> float:
        """BM25's term-frequency saturation at window length = average length."""
        return tf * (k1 + 1.0) / (tf + k1)

    lowered = [match.group().lower() for match in words]
    counts: Counter[str] = Counter(term for term in lowered[:size] if term in weight)
    score = sum(weight[term] * saturation(tf) for term, tf in counts.items())
    best_score, best_first = score, 0
    for first in range(1, len(words) - size + 1):
        for term, delta in ((lowered[first - 1], -1), (lowered[first + size - 1], 1)):
            if term in weight:
                before = counts[term]
                counts[term] = before + delta
                score += weight[term] * (saturation(before + delta) - saturation(before))
        if score > best_score + 1e-12:
            best_score, best_first = score, first
    start = words[best_first].start()
    end = words[best_first + size - 1].end()
    return snap(quote, region, start, end, _tolerance(quote))


def trim_hybrid(quote: str, region: str, idf: Callable[[str], float], k1: float) -> Alignment:
    """sliding_bm25 finds the neighbourhood, fuzzy alignment refines it; the better one wins."""
    coarse = trim_sliding_bm25(quote, region, idf, k1)
    pad = max(16, len(quote) // 4)
    lo = max(0, coarse.start - pad)
    hi = min(len(region), coarse.end + pad)
    fine = trim_fuzzy(quote, region[lo:hi]).shifted(lo)
    return fine if fine.ratio >= coarse.ratio else coarse


def trim(
    method: TrimMethod, quote: str, region: str, idf: Callable[[str], float], k1: float
) -> Alignment:
    """Trim the region to the quote with the given method."""
    if method == "fuzzy":
        return trim_fuzzy(quote, region)
    if method == "sliding_bm25":
        return trim_sliding_bm25(quote, region, idf, k1)
    return trim_hybrid(quote, region, idf, k1)
