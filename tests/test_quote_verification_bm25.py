"""BM25 of quote verification on exact inputs: window tokens at every kind of edge, and the
inverted index's scores and idf against rank-bm25's BM25Okapi on the same tokens."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from groundwire.evaluators.quote_verification._bm25 import DocumentTokens, WindowIndex, tokenize

_TEXT = "Ab cd_e, FG"


def test_tokenize_lowercases_word_runs_and_drops_the_rest() -> None:
    """Tokens are the lower-cased `\\w+` runs (underscores and digits are word characters)."""
    assert tokenize("The  QUICK-brown fox_2, é!") == ["the", "quick", "brown", "fox_2", "é"]
    assert tokenize(" ,. ") == []


@pytest.mark.parametrize(
    ("start", "end", "tokens"),
    [
        (0, 11, ["ab", "cd_e", "fg"]),  # the whole text
        (2, 5, ["cd"]),  # starts on a separator right after a word's end, ends inside a word
        (0, 3, ["ab"]),  # ends on the separator after a word: the next word is not in it
        (3, 7, ["cd_e"]),  # exactly one word
        (1, 2, ["b"]),  # one word cut on both sides
        (4, 6, ["d_"]),
        (1, 8, ["b", "cd_e"]),  # the first word cut
        (3, 10, ["cd_e", "f"]),  # the last word cut
        (1, 10, ["b", "cd_e", "f"]),  # both end words cut
        (5, 9, ["_e"]),  # a cut word and a separator
        (7, 9, []),  # separators only
        (2, 2, []),  # empty, between words
        (4, 4, []),  # empty, inside a word
        (9, 11, ["fg"]),  # a window ending at the document's end
    ],
)
def test_window_tokens_are_the_tokens_of_the_window_text(
    start: int, end: int, tokens: list[str]
) -> None:
    """A window's tokens are exactly tokenize(text[start:end]): a word cut by an edge gives its
    part inside, a word touching an edge from outside gives nothing."""
    assert DocumentTokens(_TEXT).window(start, end) == tokens
    assert tokenize(_TEXT[start:end]) == tokens


@pytest.mark.parametrize("text", ["ab", " ab", "ab ", " ab cd ", "..ab..cd", "ab..cd..", "", " "])
def test_window_of_the_whole_text_whatever_its_ends(text: str) -> None:
    """Leading and trailing separators (or none) never add or lose a token."""
    document = DocumentTokens(text)
    assert document.window(0, len(text)) == tokenize(text)
    for start in range(len(text) + 1):
        for end in range(start, len(text) + 1):
            assert document.window(start, end) == tokenize(text[start:end]), (start, end)


def _okapi_windows() -> list[list[str]]:
    """Windows of different lengths, one empty, terms with tf up to 3, one in most windows."""
    return [
        ["river", "stone", "river", "lantern"],
        ["stone", "copper"],
        [],
        ["river", "meadow", "meadow", "meadow", "engine", "signal", "copper"],
        ["violet"],
        ["river", "stone"],
        ["harbour", "river", "engine", "engine"],
    ]


@pytest.mark.parametrize(("k1", "b"), [(1.5, 0.4), (1.2, 0.75), (0.5, 0.9), (2.0, 0.0)])
def test_index_scores_equal_bm25okapi_for_every_query_shape(k1: float, b: float) -> None:
    """Scores equal BM25Okapi.get_scores on the same windows for each term alone (the first and
    last term of the vocabulary too), repeated terms (counted each time), absent terms and
    mixed queries; idf equals BM25Okapi's for every term, including floored negative ones."""
    windows = _okapi_windows()
    okapi = BM25Okapi(windows, k1=k1, b=b)
    index = WindowIndex(windows, k1=k1, b=b)
    assert (index.size, index.k1, index.b) == (len(windows), k1, b)
    vocabulary = list(okapi.idf)
    assert {term: index.idf(term) for term in vocabulary} == okapi.idf
    queries = [
        *([term] for term in vocabulary),
        ["river", "river"],
        ["meadow", "engine", "meadow", "absent"],
        ["absent"],
        [],
        vocabulary,
        [*vocabulary, *vocabulary],
    ]
    for query in queries:
        np.testing.assert_allclose(index.scores(query), okapi.get_scores(query), rtol=1e-12)


def test_empty_window_scores_zero_where_bm25okapi_divides_zero_by_zero() -> None:
    """With b = 1 an empty window's length norm is 0 and BM25Okapi gives it NaN for a term
    with a floored idf; the index gives 0 there and BM25Okapi's scores everywhere else."""
    windows = _okapi_windows()
    query = ["river", "stone", "violet"]
    with np.errstate(invalid="ignore"):
        reference = BM25Okapi(windows, k1=0.5, b=1.0).get_scores(query)
    assert np.isnan(reference[2])
    expected = np.nan_to_num(reference, nan=0.0)
    np.testing.assert_allclose(WindowIndex(windows, k1=0.5, b=1.0).scores(query), expected)


def test_default_parameters_score_a_known_window_exactly() -> None:
    """One hand-computed score: k1 1.5, b 0.4, two windows of lengths 1 and 3 (avgdl 2)."""
    index = WindowIndex([["a"], ["b", "b", "c"]], k1=1.5, b=0.4)
    idf_b = np.log(1.5) - np.log(1.5)  # in one of two windows: log((2 - 1 + 0.5) / (1 + 0.5))
    assert index.idf("b") == pytest.approx(idf_b) == 0.0
    # all three terms have idf 0, so every idf is floored to 0.25 x their mean, 0
    assert index.scores(["b"]).tolist() == [0.0, 0.0]
    three = WindowIndex([["a"], ["b", "b", "c"], ["d"]], k1=1.5, b=0.4)
    idf = np.log(2.5) - np.log(1.5)
    norm = 1.5 * (1 - 0.4 + 0.4 * 3 / (5 / 3))
    assert three.scores(["b"]).tolist() == pytest.approx([0.0, idf * 2 * 2.5 / (2 + norm), 0.0])


def test_matches_any_needs_one_indexed_token() -> None:
    """matches_any is true when any one query token is in some window, false otherwise."""
    index = WindowIndex([["a", "b"], ["c"]], k1=1.5, b=0.4)
    assert index.matches_any(["zz", "c"])
    assert index.matches_any(["a"])
    assert not index.matches_any(["zz", "yy"])
    assert not index.matches_any([])


def test_index_without_any_token_scores_zero_everywhere() -> None:
    """Windows without tokens are allowed: every score is 0, nothing matches, idf is 0."""
    index = WindowIndex([[], [], []], k1=1.5, b=0.4)
    assert index.size == 3
    assert index.scores(["a", "b"]).tolist() == [0.0, 0.0, 0.0]
    assert not index.matches_any(["a"])
    assert index.idf("a") == 0.0
    assert WindowIndex([], k1=1.5, b=0.4).scores(["a"]).tolist() == []
