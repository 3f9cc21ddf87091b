"""Trimming of quote verification on exact inputs: word and token boundaries, boundary
candidates, snapping, the three trim methods, and sliding BM25 against a brute-force BM25."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from groundwire.evaluators.quote_verification._bm25 import tokenize
from groundwire.evaluators.quote_verification._trim import (
    TRIM_METHODS,
    Alignment,
    _boundaries,
    _near,
    match_ratio,
    snap,
    trim,
    trim_fuzzy,
    trim_hybrid,
    trim_sliding_bm25,
)

_REGION = "The cat_2 sat, on-the mat."


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        # every \w+ and whitespace-free run: "sat" ends at 13, "sat," at 14; "on-the" is two words
        (0, 26, ([0, 4, 10, 15, 18, 22], [3, 9, 13, 14, 17, 21, 25, 26])),
        (-5, 100, ([0, 4, 10, 15, 18, 22], [3, 9, 13, 14, 17, 21, 25, 26])),
        # lo cuts "cat_2": no start there
        (5, 26, ([10, 15, 18, 22], [9, 13, 14, 17, 21, 25, 26])),
        # exactly one word: both of its ends
        (4, 9, ([4], [9])),
        # lo right after an underscore (inside the word), hi right before a comma (a word end)
        (8, 13, ([10], [9, 13])),
        # a word starting right after a hyphen is a word start but not a token start
        (18, 21, ([18], [21])),
        # lo and hi both cut words
        (6, 20, ([10, 15, 18], [9, 13, 14, 17])),
        # hi cuts "cat_2": no end there, but its start is one
        (0, 5, ([0, 4], [3])),
    ],
)
def test_boundaries_are_where_runs_start_and_end_unless_cut(
    lo: int, hi: int, expected: tuple[list[int], list[int]]
) -> None:
    """Word (`\\w+`) and token (whitespace-free) boundaries inside [lo, hi): a run cut by lo or
    hi has no boundary at the cut."""
    assert _boundaries(_REGION, lo, hi) == expected


@pytest.mark.parametrize(
    ("positions", "target", "tolerance", "expected"),
    [
        ([2, 5], 50, 0, [5]),  # nothing within: the nearest one
        ([6, 45], 1, 0, [6]),
        ([2, 34], 28, 2, [34, 2]),  # the nearest on each side, nearest first
        ([0, 10, 20], 10, 0, [10, 0, 20]),  # equal distances: the lower first
        ([0, 3, 5, 8, 10, 11, 13, 20], 9, 4, [8, 10, 11, 5, 13, 3]),  # at most six
        ([], 5, 3, []),
    ],
)
def test_near_gives_boundaries_within_tolerance_and_the_next_ones_nearest_first(
    positions: list[int], target: int, tolerance: int, expected: list[int]
) -> None:
    """Boundary candidates: those within the tolerance plus the nearest one beyond it on each
    side, nearest first (ties: lower first), at most six."""
    assert _near(positions, target, tolerance) == expected


def test_snap_prefers_the_closest_span_to_the_nearest_boundary() -> None:
    """Snapping picks the boundaries whose span is most like the quote, even when another
    boundary is nearer the aligned position."""
    assert snap("aa brown", "aa brown fox", 2, 8, 8) == Alignment(0, 8, 1.0)
    assert snap("a", "a on", 0, 4, 1) == Alignment(0, 1, 1.0)


@pytest.mark.parametrize(
    ("quote", "region", "start", "end", "tolerance", "span"),
    [
        ("on", "a a", 2, 3, 1, (2, 3)),
        ("on", "a a", 1, 2, 8, (2, 3)),
        ("on", "a a", 1, 3, 8, (2, 3)),
        ("a", "on on", 0, 4, 2, (0, 5)),
    ],
)
def test_snap_moves_ends_least_among_equally_poor_spans(
    quote: str, region: str, start: int, end: int, tolerance: int, span: tuple[int, int]
) -> None:
    """When no boundary gives a closer span than another (none shares a character with the
    quote), each end moves to the boundary nearest where it was."""
    found = snap(quote, region, start, end, tolerance)
    assert (found.start, found.end) == span


def test_snap_keeps_the_span_when_no_boundary_pair_is_usable() -> None:
    """Without a word start near the start (or a word end near the end), or when every start
    lies after every end, the span is kept as given and scored as it is."""
    spaced = " " * 60 + "fox"
    assert snap("fox", spaced, 0, 63, 8) == Alignment(0, 63, match_ratio("fox", spaced))
    trailing = "fox" + " " * 60
    assert snap("fox", trailing, 0, 63, 8) == Alignment(0, 63, match_ratio("fox", trailing))
    apart = "a" * 50 + " " * 10 + "b" * 50
    assert snap("ab", apart, 55, 55, 0) == Alignment(55, 55, 0.0)
    assert snap("a", "a a", 1, 3, 8) == Alignment(2, 3, 1.0)


_NIGHT = (
    "Night fell. The harbour lantern glowed over the copper roofs and the harbour walls. "
    "Lanterns glowed."
)
_TYPED = "harbour lanterns glowed ovr the coper roofs"


def _one(term: str) -> float:
    """The same idf for every term."""
    return 1.0


def test_each_method_name_runs_its_own_method() -> None:
    """The three methods give three different spans here: fuzzy alignment finds the passage
    despite the typos, sliding BM25 the window sharing most exact words, hybrid refines that
    window's neighbourhood."""
    spans = {
        method: trim(method, _TYPED, _NIGHT, _one, 1.5)  # type: ignore[arg-type]
        for method in TRIM_METHODS
    }
    assert spans["fuzzy"] == trim_fuzzy(_TYPED, _NIGHT)
    assert spans["sliding_bm25"] == trim_sliding_bm25(_TYPED, _NIGHT, _one, 1.5)
    assert spans["hybrid"] == trim_hybrid(_TYPED, _NIGHT, _one, 1.5)
    texts = {method: _NIGHT[a.start : a.end] for method, a in spans.items()}
    assert texts == {
        "fuzzy": "harbour lantern glowed over the copper roofs",
        "sliding_bm25": "the harbour walls. Lanterns glowed",
        "hybrid": "harbour walls. Lanterns glowed",
    }


def test_sliding_bm25_falls_back_to_fuzzy_without_words() -> None:
    """A quote without any word, or a region without any, is aligned by characters."""
    assert trim("sliding_bm25", "--", "ab cd -- ef gh", _one, 1.5) == Alignment(6, 8, 1.0)
    assert trim("sliding_bm25", "ab cd", "-- ; --", _one, 1.5) == trim_fuzzy("ab cd", "-- ; --")


def test_sliding_bm25_single_word_quote_and_region() -> None:
    """A one-word quote slides one word at a time; a region of one word is that word."""
    assert trim("sliding_bm25", "beta", "betas and beta", _one, 1.5) == Alignment(10, 14, 1.0)
    assert trim("sliding_bm25", "river stone", "stone", _one, 1.5) == Alignment(
        0, 5, match_ratio("river stone", "stone")
    )


def test_sliding_bm25_weights_terms_by_idf() -> None:
    """Terms count by their idf: the window with the rarer word wins, and a term whose idf is 0
    (in half of the windows) adds nothing and breaks nothing."""
    idf = {"copper": 2.0, "stone": 0.5, "mill": 0.0}
    region = "stone stone wall " + "x " * 30 + "copper wall"
    found = trim("sliding_bm25", "stone copper mill", region, lambda t: idf.get(t, 0.0), 1.5)
    assert region[found.start : found.end] == "x copper wall"  # three words, as the quote


def test_a_later_window_must_score_more_than_1e_12_higher() -> None:
    """Scores within 1e-12 of the best are float noise: the first window stays; a larger gain
    moves the window."""
    region = "x" + " " * 60 + "alpha"
    for gain, span in ((0.8e-12, (0, 1)), (1e-12, (0, 1)), (2e-12, (61, 66))):
        found = trim_sliding_bm25("alpha", region, lambda t, g=gain: g, 1.5)  # type: ignore[misc]
        assert (found.start, found.end) == span, gain


_VOCABULARY = ["river", "stone", "mill", "copper", "harbour", "lantern", "roof", "wall", "the"]


def _brute_force_window(quote: str, words: list[str], idf: dict[str, float], k1: float) -> int:
    """Index of the first window of the quote's word count with the highest BM25 score, each
    window scored from scratch (term-frequency saturation at average length)."""
    query = Counter(tokenize(quote))
    size = min(sum(query.values()), len(words))
    scores = []
    for first in range(len(words) - size + 1):
        counts = Counter(words[first : first + size])
        scores.append(
            sum(
                n * idf[t] * counts[t] * (k1 + 1) / (counts[t] + k1)
                for t, n in query.items()
                if counts[t]
            )
        )
    best = max(scores)
    return next(i for i, s in enumerate(scores) if s > best - 1e-9)


def test_sliding_bm25_keeps_the_best_window_of_a_brute_force_bm25() -> None:
    """On many word sequences, the kept window is the brute-force BM25 argmax (first of equal),
    then snapped to the quote as snap does."""
    rng = random.Random(11)
    for _ in range(300):
        words = rng.choices(_VOCABULARY, k=rng.randint(1, 14))
        region = " ".join(words)
        quote = " ".join(rng.choices(_VOCABULARY, k=rng.randint(1, 4)))
        idf = {t: rng.choice([0.0, 0.3, 1.0, 2.5]) for t in _VOCABULARY}
        k1 = rng.choice([0.5, 1.2, 2.0])
        first = _brute_force_window(quote, words, idf, k1)
        size = min(len(tokenize(quote)), len(words))
        start = sum(len(w) + 1 for w in words[:first])
        end = start + len(" ".join(words[first : first + size]))
        expected = snap(quote, region, start, end, max(8, len(quote) // 10))
        assert trim_sliding_bm25(quote, region, idf.__getitem__, k1) == expected, (quote, region)


_LONG_SOURCE = (
    "Before the storm the fishermen pulled their boats high onto the shingle, tied the nets "
    "to the iron rings on the harbour wall and walked up the hill to the chapel, where the "
    "lanterns were already lit. Nobody spoke."
)
_LONG_QUOTE = (
    "the fishermen pulled their boats high onto the shingle, tied the nets to the iron rings "
    "on the harbor wall and walked up the hill"
)


@pytest.mark.parametrize("method", TRIM_METHODS)
def test_long_quote_is_trimmed_to_whole_words(method: str) -> None:
    """A quote of more than 80 characters (a wider snapping tolerance and hybrid neighbourhood)
    is trimmed to the source passage, word for word."""
    found = trim(method, _LONG_QUOTE, _LONG_SOURCE, _one, 1.5)  # type: ignore[arg-type]
    assert _LONG_SOURCE[found.start : found.end] == (
        "the fishermen pulled their boats high onto the shingle, tied the nets to the iron "
        "rings on the harbour wall and walked up the hill"
    )
    assert found.ratio == pytest.approx(
        match_ratio(_LONG_QUOTE, _LONG_SOURCE[found.start : found.end])
    )


def test_hybrid_keeps_the_better_of_the_word_window_and_its_refinement() -> None:
    """Hybrid returns the fuzzy refinement only when it matches at least as well: a one-word
    quote that is also part of a longer word keeps the whole-word span sliding BM25 found."""
    assert trim_hybrid("a", "cat a", _one, 1.5) == Alignment(4, 5, 1.0)
    assert trim_fuzzy("a", "cat a") == Alignment(0, 3, match_ratio("a", "cat"))


def test_hybrid_refinement_reaches_the_region_start() -> None:
    """The neighbourhood searched by the refinement starts at the region's first character when
    the word window is near it, so the first of two equal words is kept."""
    assert trim_hybrid("a", "a a", _one, 1.5) == Alignment(0, 1, 1.0)
