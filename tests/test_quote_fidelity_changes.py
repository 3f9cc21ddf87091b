"""Quote fidelity, meaning changes: which words a change names on each side (a dropped or added
word is shown with its neighbour), with offsets in the quote and the source."""

from __future__ import annotations

import pytest

from groundwire.evaluators.quote_verification._changes import Fidelity
from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._normalise import fold, normalise

_Change = tuple[str, int, int, int, int]


def _compare(quote: str, source: str) -> Fidelity:
    """The quote compared with the whole of `source` (as the located span)."""
    norm = normalise(source)
    return compare(quote, fold(quote), source, norm, 0, len(norm.text))


def _changes(quote: str, source: str) -> list[_Change]:
    """Each meaning change described, with its quote and source offsets."""
    return [
        (c.describe(), c.quote_start, c.quote_end, c.source_start, c.source_end)
        for c in _compare(quote, source).changes
    ]


@pytest.mark.parametrize(
    ("quote", "source", "changes"),
    [
        # a dropped negator is shown with the word before it, or after it at the start
        ("you may go", "you may not go", [("negation changed: 'may not' -> 'may'", 4, 7, 4, 11)]),
        ("we will", "we will not", [("negation changed: 'will not' -> 'will'", 3, 7, 3, 11)]),
        (
            "remove books",
            "not remove books",
            [("negation changed: 'not remove' -> 'remove'", 0, 6, 0, 10)],
        ),
        ("not", "yes", [("negation changed: 'yes' -> 'not'", 0, 3, 0, 3)]),
        # after a leading ellipsis, the added negator is shown with the word after it
        (
            "… not remove books",
            "remove books",
            [("negation changed: 'remove' -> 'not remove'", 2, 12, 0, 6)],
        ),
        # a modal verb added or dropped, swapped for another, or two swapped
        ("you may go", "you go", [("modality changed: 'you' -> 'you may'", 0, 7, 0, 3)]),
        ("you go", "you may go", [("modality changed: 'you may' -> 'you'", 0, 3, 0, 7)]),
        (
            "you must not go",
            "you may go",
            [
                ("negation changed: 'may' -> 'must not'", 4, 12, 4, 7),
                ("modality changed: 'may' -> 'must not'", 4, 12, 4, 7),
            ],
        ),
        (
            "you can or must go",
            "you must or can go",
            [
                ("modality changed: 'must' -> 'can'", 4, 7, 4, 8),
                ("modality changed: 'can' -> 'must'", 11, 15, 12, 15),
            ],
        ),
        # a name: the quote's side is only what it wrote
        (
            "the report by was late",
            "the report by Smith was late",
            [("entity changed: 'by Smith' -> ''", 13, 13, 11, 19)],
        ),
        (
            "the report by Smith was late",
            "the report by was late",
            [("entity changed: 'by' -> 'Smith'", 14, 19, 11, 13)],
        ),
        (
            "we saw Smith and Jones",
            "we saw Jones and Smith",
            [
                ("entity changed: 'Jones' -> 'Smith'", 7, 12, 7, 12),
                ("entity changed: 'Smith' -> 'Jones'", 17, 22, 17, 22),
            ],
        ),
        # a number: the whole phrase on the side that has one, the neighbour on the other
        ("three of them", "of them", [("number changed: 'of' -> 'three'", 0, 5, 0, 2)]),
        ("of them", "three of them", [("number changed: 'three' -> 'of'", 0, 2, 0, 5)]),
        ("they paid", "they paid 5", [("number changed: '5' -> 'paid'", 5, 9, 10, 11)]),
        (
            "they paid 5 dollars",
            "they paid 5",
            [("number changed: '5' -> '5 dollars'", 10, 19, 10, 11)],
        ),
        (
            "they paid 5",
            "they paid 5 dollars",
            [("number changed: '5 dollars' -> '5'", 10, 11, 10, 19)],
        ),
        (
            "5 dollars they paid",
            "5 they paid",
            [("number changed: '5' -> '5 dollars'", 0, 9, 0, 1)],
        ),
    ],
)
def test_a_change_names_the_words_that_differ_on_both_sides(
    quote: str, source: str, changes: list[_Change]
) -> None:
    """Each meaning change gives its kind, both sides' words and their offsets."""
    assert _changes(quote, source) == changes


def test_a_word_starting_with_v_is_no_version_number() -> None:
    """ "vote" for "veto" is a changed word, not a changed number (only "v2.1" is a version)."""
    assert _changes("the council held a vote", "the council held a veto") == []


def test_against_a_span_without_words_a_change_names_no_source_neighbour() -> None:
    """A quote compared with a span that has no words (here: an empty one): each stretch of
    the quote is added, and its meaning changes name the quote's words alone, at the span's
    start, since the source has no word to show beside them."""
    assert [(e.kind, e.quote_text) for e in _compare("never … 3 bars", "").edits] == [
        ("added", "never"),
        ("elided", "…"),
        ("added", "3 bars"),
    ]
    assert _changes("never … 3 bars", "") == [
        ("negation changed: '' -> 'never'", 0, 5, 0, 0),
        ("number changed: '' -> '3'", 8, 9, 0, 0),
    ]


def test_each_part_of_a_hyphenated_number_keeps_its_own_offsets() -> None:
    """ "twenty-one" is read as two words: the changed part is named with its own offsets on
    both sides, and the number change covers the whole hyphenated number."""
    (edit,) = _compare("we saw twenty-one cats", "we saw twenty-two cats").edits
    assert (edit.kind, edit.quote_text, edit.source_text) == ("changed", "one", "two")
    assert (edit.quote_start, edit.quote_end, edit.source_start, edit.source_end) == (
        14,
        17,
        14,
        17,
    )
    assert _changes("we saw twenty-one cats", "we saw twenty-two cats") == [
        ("number changed: 'twenty-two' -> 'twenty-one'", 7, 17, 7, 17)
    ]
