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
