"""Quote fidelity, edits: each difference between a quote and its span is one edit of the right
kind (typo, changed, added, dropped, elided), with the words and offsets of both sides."""

from __future__ import annotations

import pytest

from groundwire.evaluators.quote_verification._changes import Fidelity
from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._normalise import fold, normalise

_Edit = tuple[str, str, str, int, int, int, int]


def _compare(quote: str, source: str) -> Fidelity:
    """The quote compared with the whole of `source` (as the located span)."""
    norm = normalise(source)
    return compare(quote, fold(quote), source, norm, 0, len(norm.text))


def edit_rows(fidelity: Fidelity) -> list[_Edit]:
    """Each edit as (kind, quote words, source words, quote offsets, source offsets)."""
    return [
        (
            e.kind,
            e.quote_text,
            e.source_text,
            e.quote_start,
            e.quote_end,
            e.source_start,
            e.source_end,
        )
        for e in fidelity.edits
    ]


def _edits(quote: str, source: str) -> list[_Edit]:
    """The edits of `quote` against `source`, as rows."""
    return edit_rows(_compare(quote, source))


@pytest.mark.parametrize(
    ("quote", "source", "edits"),
    [
        (
            "we saw big red dogs run",
            "we saw small blue dogs run",
            [("changed", "big red", "small blue", 7, 14, 7, 17)],
        ),
        ("we saw the red dogs run", "we saw red dogs run", [("added", "the", "", 7, 10, 6, 6)]),
        ("we saw red dogs run", "we saw the red dogs run", [("dropped", "", "the", 6, 6, 7, 10)]),
        ("saw red dogs run", "we saw red dogs run", [("dropped", "", "we", 0, 0, 0, 2)]),
        ("you go", "you may go", [("dropped", "", "may", 3, 3, 4, 7)]),
        ("we saw red dogs", "we saw red dogs run", [("dropped", "", "run", 15, 15, 16, 19)]),
        ("big red dogs run", "small red dogs run", [("changed", "big", "small", 0, 3, 0, 5)]),
        ("x", "we saw red dogs", [("changed", "x", "we saw red dogs", 0, 1, 0, 15)]),
        (
            "we saw teh red dgos run",
            "we saw the red dogs run",
            [("typo", "teh", "the", 7, 10, 7, 10), ("typo", "dgos", "dogs", 15, 19, 15, 19)],
        ),
        (
            "we saw teh big dogs run",
            "we saw the red dogs run",
            [("typo", "teh", "the", 7, 10, 7, 10), ("changed", "big", "red", 11, 14, 11, 14)],
        ),
        (
            "we saw big teh dogs run",
            "we saw red the dogs run",
            [("changed", "big", "red", 7, 10, 7, 10), ("typo", "teh", "the", 11, 14, 11, 14)],
        ),
    ],
)
def test_each_difference_is_one_edit_with_offsets_in_both_texts(
    quote: str, source: str, edits: list[_Edit]
) -> None:
    """Neighbouring replaced words make one edit; a typo is an edit of its own; added and
    dropped words have an empty side placed where they would go."""
    assert _edits(quote, source) == edits


@pytest.mark.parametrize(
    ("quote", "source", "edits"),
    [
        ("we saw … dogs run", "we saw the red dogs run", [("elided", "…", "the red", 7, 8, 7, 14)]),
        ("we saw ... dogs run", "we saw red dogs run", [("elided", "...", "red", 7, 10, 7, 10)]),
        ("a well-known … man", "a well-known old man", [("elided", "…", "old", 13, 14, 13, 16)]),
        ("we … saw dogs run", "we saw dogs run", [("elided", "…", "", 3, 4, 2, 2)]),
        (
            "we saw … big dogs run",
            "we saw the red dogs run",
            [("elided", "…", "the", 7, 8, 7, 10), ("changed", "big", "red", 9, 12, 11, 14)],
        ),
        (
            "we saw … teh dogs run",
            "we saw red the dogs run",
            [("elided", "…", "red", 7, 8, 7, 10), ("typo", "teh", "the", 9, 12, 11, 14)],
        ),
    ],
)
def test_words_left_out_at_an_ellipsis_are_elided(
    quote: str, source: str, edits: list[_Edit]
) -> None:
    """Source words where the quote has an ellipsis are one elided edit, apart from a replaced
    word or a typo beside it."""
    assert _edits(quote, source) == edits


@pytest.mark.parametrize(
    ("quote", "source", "kind"),
    [
        ("go ot the shop", "go to the shop", "typo"),  # two letters swapped
        ("it is ni the shop", "it is in the shop", "typo"),
        ("it is ib the shop", "it is in the shop", "changed"),  # two letters, not swapped
        ("go on the shop", "go no the shop", "changed"),  # "no" is a negator
        ("go thw shop", "go the shop", "typo"),  # one letter in three
        ("he wlked home", "he walked home", "typo"),
        ("he wlkd home", "he walked home", "changed"),  # two letters in six
        ("the lbrery opens", "the library opens", "changed"),  # two letters in seven
        ("the bildng opens", "the building opens", "typo"),  # two letters in eight
        ("the infrmaton desk", "the information desk", "typo"),
        ("the infrmatn desk", "the information desk", "changed"),  # three letters
        ("the inofrmation desk", "the information desk", "typo"),  # a transposition is one
        ("I cold go", "I could go", "typo"),
        ("I could go", "I cold go", "changed"),  # the quote's word is a modal verb
        ("we have for cats", "we have four cats", "typo"),
        ("we have four cats", "we have for cats", "changed"),  # the quote's word is a number
        ("the build a1b fails", "the build a2b fails", "changed"),  # digits are never typos
        ("the build ab fails", "the build a2b fails", "changed"),
        ("I ever go", "I never go", "changed"),  # one letter, but the negation of it
        ("either way", "neither way", "changed"),
        ("you nought to go", "you ought to go", "changed"),
        ("the nigth sky", "the night sky", "typo"),  # an n first is no negation by itself
        ("it wont start", "it won't start", "typo"),  # a lost apostrophe is a slip
        ("the council held a vote", "the council held a veto", "changed"),
    ],
)
def test_a_typo_is_a_slip_of_one_letter_or_two_in_a_long_word(
    quote: str, source: str, kind: str
) -> None:
    """One letter apart (two from eight letters on; two swapped in a two-letter word) is a typo,
    never for digits, a number, negator or modal in the quote, or a word and its negation."""
    ((got, *_),) = _edits(quote, source)
    assert got == kind
