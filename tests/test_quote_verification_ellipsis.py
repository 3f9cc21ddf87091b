"""Ellipsis quotes ("head ... tail"): which head/tail pair `verify_quotes` spans, and the gap."""

from __future__ import annotations

import pytest

from groundwire.evaluators import QuoteMatch, verify_quotes


def _span(row: QuoteMatch) -> tuple[str | None, int | None, int | None, float, str]:
    """Where a row's span is, its match ratio (3 places) and how it was found."""
    return row.source_doc, row.doc_start, row.doc_end, round(row.match_ratio, 3), row.match_kind


def test_ellipsis_inside_a_word_pairs_a_tail_that_starts_where_the_head_ends() -> None:
    """An ellipsis that omits nothing ("gam...ma") still pairs head and tail: the tail may start
    exactly where the head ends."""
    doc = "Our findings: alpha beta gamma delta were all observed in the field."
    (row,) = verify_quotes(["alpha beta gam...ma delta"], [doc], embedder=None)
    assert _span(row) == ("doc_0", 14, 36, 1.0, "ellipsis")
    assert row.span_text == "alpha beta gamma delta"


def test_ellipsis_pairs_the_nearest_tail_and_the_first_of_equal_pairs() -> None:
    """Of equally good tails the nearest wins; of equally good pairs, the first in the text."""
    doc = "Start alpha beta then gamma delta, later gamma delta again and gamma delta."
    (row,) = verify_quotes(["alpha beta ... gamma delta"], [doc], embedder=None)
    assert row.span_text == "alpha beta then gamma delta"
    twice = "First alpha beta x gamma delta; then alpha beta x gamma delta."
    (row,) = verify_quotes(["alpha beta ... gamma delta"], [twice], embedder=None)
    assert _span(row) == ("doc_0", 6, 30, 1.0, "ellipsis")


@pytest.mark.parametrize(
    ("max_gap", "expected"),
    [
        (5, ("doc_0", 22, 33, 0.524, "ellipsis")),
        (6, ("doc_0", 6, 33, 1.0, "ellipsis")),
        (7, ("doc_0", 6, 33, 1.0, "ellipsis")),
    ],
)
def test_gap_limit_counts_original_characters_between_head_end_and_tail_start(
    max_gap: int, expected: tuple[object, ...]
) -> None:
    """The gap is the original text between head end and tail start (here " then ", 6
    characters): a limit of 6 keeps the pair, 5 leaves the better part alone, weighted by its
    share of the quote's length."""
    doc = "Start alpha beta then gamma delta, later gamma delta again and gamma delta."
    (row,) = verify_quotes(
        ["alpha beta ... gamma delta"], [doc], embedder=None, ellipsis_max_gap=max_gap
    )
    assert _span(row) == expected


def test_tail_in_another_document_does_not_stop_the_search() -> None:
    """A tail found in a document without the head is skipped, and the pair in the head's
    document is found."""
    documents = [
        "Only the tail: gamma delta epsilon here.",
        "Here alpha beta zeta and then gamma delta epsilon.",
    ]
    (row,) = verify_quotes(["alpha beta zeta ... gamma delta epsilon"], documents, embedder=None)
    assert _span(row) == ("doc_1", 5, 49, 1.0, "ellipsis")


def test_a_tail_beyond_the_gap_limit_does_not_hide_a_nearer_one() -> None:
    """A near fuzzy tail within the gap limit is paired even when a better-matching copy of the
    tail, too far away, ranks first."""
    filler = " ".join(f"w{i}" for i in range(120))
    doc = (
        "Intro alpha beta gamma then delta epsilon zeta here. "
        + filler
        + " Far deltx epsilon zeta end."
    )
    (row,) = verify_quotes(
        ["alpha beta gamma ... deltx epsilon zetx"], [doc], embedder=None, ellipsis_max_gap=30
    )
    assert _span(row) == ("doc_0", 6, 46, 0.794, "ellipsis")
    assert row.span_text == "alpha beta gamma then delta epsilon zeta"


_HARBOUR = (
    "The harbour master opened the gates at dawn and the fishing boats left for the open sea."
)


@pytest.mark.parametrize(
    ("quote", "max_gap", "expected", "bm25"),
    [
        # fuzzy head, exact tail: the BM25 figures are the head's
        (
            "the harbour mastr opened ... the open sea",
            None,
            ("doc_0", 0, 87, 0.91, "ellipsis"),
            (-0.2540806289869248, 0.979695435327926),
        ),
        # exact head, fuzzy tail: the BM25 figures are the tail's
        (
            "the harbour master opened ... fishing boatz left",
            None,
            ("doc_0", 0, 70, 0.919, "ellipsis"),
            (-0.14814973230959666, 0.9637462298343337),
        ),
        # no pair within the gap: the fuzzy head alone, with its BM25 figures
        (
            "the harbour mastr opened the gates ... open sea",
            0,
            ("doc_0", 0, 35, 0.736, "ellipsis"),
            (-0.6618840209659389, 0.975991224612019),
        ),
    ],
)
def test_ellipsis_rows_carry_the_bm25_figures_of_the_fuzzy_part(
    quote: str,
    max_gap: int | None,
    expected: tuple[object, ...],
    bm25: tuple[float, float],
) -> None:
    """An ellipsis quote's bm25_score and bm25_ratio are those of the part found by BM25."""
    (row,) = verify_quotes([quote], [_HARBOUR], embedder=None, ellipsis_max_gap=max_gap)
    assert _span(row) == expected
    assert (row.bm25_score, row.bm25_ratio) == (pytest.approx(bm25[0]), pytest.approx(bm25[1]))


def test_unpaired_longer_head_stands_alone_weighted_by_its_share() -> None:
    """Without a pair, a head longer than the tail is kept, its ratio scaled by its share."""
    doc = "Start alpha beta then gamma delta, later gamma delta again and gamma delta."
    (row,) = verify_quotes(
        ["alpha beta then gamma ... delta"], [doc], embedder=None, ellipsis_max_gap=0
    )
    assert _span(row) == ("doc_0", 6, 27, round(21 / 26, 3), "ellipsis")
    assert (row.bm25_score, row.bm25_ratio) == (None, None)


_COMMON = " ".join(["gamma delta x."] * 20)


def test_a_tail_too_common_to_rank_is_searched_right_after_each_head() -> None:
    """A tail whose first 16 occurrences all precede the head is found by looking right after
    the head: the nearest occurrence, and for each head, so the closest pair wins."""
    doc = _COMMON + " Then alpha beta and gamma delta, and gamma delta again."
    (row,) = verify_quotes(["alpha beta ... gamma delta"], [doc], embedder=None)
    assert _span(row) == ("doc_0", 305, 331, 1.0, "ellipsis")
    assert row.span_text == "alpha beta and gamma delta"
    doc = (
        _COMMON + " Then alpha beta one two three four five six gamma delta, then alpha beta "
        "seven gamma delta."
    )
    (row,) = verify_quotes(["alpha beta ... gamma delta"], [doc], embedder=None)
    assert _span(row) == ("doc_0", 362, 390, 1.0, "ellipsis")
    assert row.span_text == "alpha beta seven gamma delta"


def test_every_occurrence_of_the_head_is_tried() -> None:
    """The head's later occurrence, nearer the tail, is the one paired."""
    doc = "alpha beta one. Later alpha beta two gamma delta."
    (row,) = verify_quotes(["alpha beta ... gamma delta"], [doc], embedder=None)
    assert row.span_text == "alpha beta two gamma delta"
    assert (row.doc_start, row.match_ratio) == (22, 1.0)


@pytest.mark.parametrize(
    ("quote", "exact"),
    [
        ("...ta gamma delta", True),  # the ellipsis side may cut "beta"
        ("alpha beta gamma del...", True),  # and "delta"
        ("alpha beta ... gamma del", False),  # the quote's own end may not: "del" is not "delta"
        ("pha beta ... gamma delta", False),  # nor its own start: "pha" is not "alpha"
    ],
)
def test_only_a_side_facing_an_ellipsis_may_stop_inside_a_word(quote: str, exact: bool) -> None:
    """An ellipsis marks left-out text, so the part next to it may stop inside a word; the
    quote's own first and last words must be whole, or the match is below 1 (found fuzzily)."""
    doc = "Our findings: alpha beta gamma delta were all observed in the field."
    (row,) = verify_quotes([quote], [doc], embedder=None)
    assert (row.match_ratio == 1.0) is exact, row


@pytest.mark.parametrize(
    ("quote", "span"),
    [
        ("…pha beta … gamma delta", "pha beta gamma delta"),  # head cut on its ellipsis side
        ("alpha beta … gamma del…", "alpha beta gamma del"),  # tail cut on its ellipsis side
        (  # a long tail cut where the ellipsis is: found exactly, not as a near-perfect fuzzy span
            "alpha beta gam...ma delta were all observed in the field",
            "alpha beta gamma delta were all observed in the field",
        ),
        ("alpha ... gamma ... were all observed", "alpha beta gamma delta were all observed"),
    ],
)
def test_ellipsis_parts_cut_on_their_ellipsis_sides_and_the_last_part_is_the_tail(
    quote: str, span: str
) -> None:
    """Head and tail of several-part quotes may stop inside a word where they meet an ellipsis,
    at either end of the quote; the span runs from the first part to the last."""
    doc = "Our findings: alpha beta gamma delta were all observed in the field."
    (row,) = verify_quotes([quote], [doc], embedder=None)
    assert (row.match_kind, row.match_ratio, row.span_text) == ("ellipsis", 1.0, span)


@pytest.mark.parametrize(
    "quote",
    [
        "alpha beta gam...ma delta",
        "alpha be...ma delta",  # the tail cut on its ellipsis side, further than the head's end
        "alpha beta ... gamma del…",
        "alpha beta ... gamma delta",
    ],
)
def test_a_tail_beyond_the_first_occurrences_is_found_right_after_the_head(quote: str) -> None:
    """The tail occurs 20 times before the head (more than the occurrences paired), so it is
    found by the search right after the head, with the same word-edge rules."""
    doc = "gamma delta. " * 20 + "Then alpha beta gamma delta."
    (row,) = verify_quotes([quote], [doc], embedder=None)
    assert (row.match_kind, row.match_ratio, row.doc_start) == ("ellipsis", 1.0, 265)


@pytest.mark.parametrize("quote", ["…", "[...]", "... …"])
def test_a_quote_of_only_an_ellipsis_is_not_found(quote: str) -> None:
    """Nothing but an ellipsis: no part to look for, nothing found, no error."""
    (row,) = verify_quotes([quote], ["Our findings: alpha beta."], embedder=None)
    assert (row.match_kind, row.match_ratio, row.span_text) == ("none", 0.0, "")
