"""Quote fidelity, the compared span: quote words that stand just outside the located span are
compared there (a trimmed span can leave out "four" of "four hundred"), within 80 characters and
never as a fragment of a word the reach cuts."""

from __future__ import annotations

import pytest

from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._normalise import fold, normalise

from .test_quote_fidelity_edits import _Edit, edit_rows

_LIBRARY = (
    "The library was stocked with four hundred volumes donated by the shipping families of "
    "the town."
)
_PLACES = "in the old kitchen cupboard, the staircase, the bookshelves and the garden"  # 74 chars

_Seen = tuple[list[_Edit], list[str]]


def _seen(quote: str, document: str, span: str) -> _Seen:
    """The edits and described changes of the quote against `span`, located in `document`."""
    norm = normalise(document)
    start = norm.text.index(span.lower())
    fidelity = compare(quote, fold(quote), document, norm, start, start + len(span))
    return edit_rows(fidelity), [change.describe() for change in fidelity.changes]


@pytest.mark.parametrize(
    ("quote", "span", "seen"),
    [
        ("four hundred volumes donated", "hundred volumes donated", ([], [])),
        ("stocked with four hundred", "stocked with four", ([], [])),
        ("with four hundred volumes", "four hundred", ([], [])),
        ("shipping families of the town", "families of the", ([], [])),
        (
            "four volumes donated",
            "hundred volumes donated",
            (
                [("dropped", "", "hundred", 4, 4, 34, 41)],
                ["number changed: 'four hundred' -> 'four'"],
            ),
        ),
        # no word in common: the span is compared as it is
        (
            "four",
            "hundred",
            (
                [("changed", "four", "hundred", 0, 4, 34, 41)],
                ["number changed: 'hundred' -> 'four'"],
            ),
        ),
        # words beside the span that are not the quote's are not drawn in
        (
            "the council with four hundred",
            "four hundred",
            ([("changed", "the council", "was stocked", 0, 11, 12, 23)], []),
        ),
        (
            "four hundred volumes for the town",
            "four hundred volumes",
            (
                [
                    ("changed", "for", "donated by", 21, 24, 50, 60),
                    ("changed", "town", "shipping", 29, 33, 65, 73),
                ],
                [],
            ),
        ),
    ],
)
def test_quote_words_just_outside_the_span_are_compared_there(
    quote: str, span: str, seen: _Seen
) -> None:
    """The quote's first or last words found beside the span are read there, so a trimmed span
    neither invents an edit nor hides one ("four" for "four hundred" is still a change)."""
    assert _seen(quote, _LIBRARY, span) == seen


def test_a_word_cut_by_the_reach_on_the_left_is_not_read() -> None:
    """80 characters before the span end inside "somewhere": its tail "here" is no word there,
    so "where" is an added word, not a typo of "here"."""
    document = f"They looked somewhere {_PLACES} for the keys."
    quote = f"where {_PLACES} for the keys"
    assert _seen(quote, document, "for the keys") == ([("added", "where", "", 0, 5, 22, 22)], [])
    whole = f"somewhere {_PLACES} for the keys"
    assert _seen(whole, document, "for the keys") == (
        [("added", "somewhere", "", 0, 9, 22, 22)],
        [],
    )


def test_a_word_cut_by_the_reach_on_the_right_is_not_read_unless_the_text_ends_there() -> None:
    """80 characters after the span end inside "somewhere": "some" is added by the quote; where
    the document itself ends there, "some" is a whole word and matches."""
    quote = f"for the keys {_PLACES} some"
    cut = f"They looked for the keys {_PLACES} somewhere else."
    assert _seen(quote, cut, "for the keys") == ([("added", "some", "", 88, 92, 99, 99)], [])
    ends = f"They looked for the keys {_PLACES} some"
    assert _seen(quote, ends, "for the keys") == ([], [])


def test_an_empty_side_is_placed_where_its_words_would_stand() -> None:
    """An empty span: the quote's words are added at the span's place in the document; a quote
    with no words: the span's words are dropped at the quote's start."""
    norm = normalise(_LIBRARY)
    at = _LIBRARY.index("volumes")
    added = compare("4%", fold("4%"), _LIBRARY, norm, at, at)
    assert [(e.kind, e.quote_text, e.source_start, e.source_end) for e in added.edits] == [
        ("added", "4%", at, at)
    ]
    assert [(c.describe(), c.source_start, c.source_end) for c in added.changes] == [
        ("number changed: '' -> '4%'", at, at)
    ]
    assert _seen("?!", _LIBRARY, "four hundred") == (
        [("dropped", "", "four hundred", 0, 0, 29, 41)],
        ["number changed: 'four hundred' -> ''"],
    )
