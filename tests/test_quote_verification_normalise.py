"""Matching normalisation of quote verification on exact inputs: every typographic mark, lone
surrogates, combining marks that NFC cannot join, and mapping empty spans back to the original."""

from __future__ import annotations

import pytest

from groundwire.evaluators import verify_quotes
from groundwire.evaluators.quote_verification import _normalise
from groundwire.evaluators.quote_verification._normalise import (
    fold,
    nfc_with_offsets,
    normalise,
    normalise_quote,
)

_MARKS = "\u2018\u2019\u201a\u201b\u2032\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"
_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"


def test_every_typographic_quote_and_dash_becomes_its_plain_mark() -> None:
    """Each curly or angled quote, prime and dash is one plain ' or " or - after normalising."""
    norm = normalise(_MARKS + _DASHES)
    assert norm.text == "'''''" + '"""""""' + "-------"
    assert norm.offsets.tolist() == list(range(19))
    assert normalise_quote(_MARKS + _DASHES) == norm.text
    assert fold(_MARKS + _DASHES).text == norm.text


def test_quote_with_any_typographic_mark_is_found_exactly_in_plain_text() -> None:
    """A quote typed with typographic marks is an exact hit on text written with plain ones."""
    document = "He said 'it is' \"done\" - twice, 9' and 6\" apart."
    quote = "said \u2018it is\u2019 \u201cdone\u201d \u2014 twice, 9\u2032 and 6\u2033"
    (row,) = verify_quotes([quote], [document], embedder=None)
    assert (row.match_kind, row.span_text) == ("exact", "said 'it is' \"done\" - twice, 9' and 6\"")


def test_lone_surrogates_pass_through_with_their_offsets() -> None:
    """A lone surrogate (left by a bad JSON escape) is kept as it is; spaces around it still
    collapse and every offset stays that of the original text."""
    norm = normalise("a\ud800  B")
    assert norm.text == "a\ud800 b"
    assert (norm.offsets.tolist(), norm.ends.tolist()) == ([0, 1, 2, 4], [1, 2, 3, 5])
    composed = normalise("e\u0301\ud800  B")
    assert composed.text == "\u00e9\ud800 b"
    assert (composed.offsets.tolist(), composed.ends.tolist()) == ([0, 2, 3, 5], [2, 3, 4, 6])
    assert normalise_quote(" \ud800  X ") == "\ud800 x"


def test_a_combining_mark_nfc_cannot_join_stays_with_its_base_letter() -> None:
    """x + acute has no composed form: the pair is one cluster, so both characters map to the
    whole original pair (a span never splits a letter from its accent)."""
    assert nfc_with_offsets("x\u0301") == ("x\u0301", None, None)
    text, starts, ends = nfc_with_offsets("e\u0301 x\u0301")
    assert text == "\u00e9 x\u0301"
    assert starts is not None and ends is not None
    assert (starts.tolist(), ends.tolist()) == ([0, 2, 3, 3], [2, 3, 5, 5])
    norm = normalise("e\u0301 x\u0301")
    assert norm.to_original(2, 3) == (3, 5)


def test_already_composed_text_keeps_identity_offsets() -> None:
    """Text already in NFC is returned as it is, with no offset arrays (the identity)."""
    assert nfc_with_offsets("caf\u00e9 au lait") == ("caf\u00e9 au lait", None, None)


def test_empty_span_maps_to_where_the_next_character_came_from() -> None:
    """An empty normalised span maps to an empty original span at the next kept character,
    after a collapsed run of spaces too; at the very end it maps to the original length."""
    norm = normalise("plain  text")
    assert norm.to_original(6, 6) == (7, 7)
    assert norm.to_original(0, 0) == (0, 0)
    assert norm.to_original(5, 6) == (5, 6)
    assert norm.to_original(10, 10) == (11, 11)
    composed = normalise("e\u0301  x")
    assert composed.text == "\u00e9 x"
    assert composed.to_original(1, 1) == (2, 2)
    assert composed.to_original(2, 2) == (4, 4)
    assert composed.to_original(3, 3) == (5, 5)


def test_every_kind_of_whitespace_is_one_space() -> None:
    """Tabs, newlines, no-break and ideographic spaces are spaces; runs of them are one."""
    norm = normalise("a\t\n\u00a0\u3000\u2009b\x0bc")
    assert norm.text == "a b c"
    assert norm.offsets.tolist() == [0, 1, 6, 7, 8]
    assert fold("a\t\u3000b").text == "a  b"


def test_fold_maps_its_end_to_the_original_length() -> None:
    """fold keeps the original length: an empty span at the end maps to the original end, for
    composed and already-NFC text alike."""
    plain = fold("ab  c")
    assert (plain.text, plain.original_length, plain.to_original(5, 5)) == ("ab  c", 5, (5, 5))
    assert (plain.to_original(0, 2), plain.to_original(3, 5)) == ((0, 2), (3, 5))
    composed = fold("e\u0301x")
    assert (composed.text, composed.original_length) == ("\u00e9x", 3)
    assert composed.to_original(2, 2) == (3, 3)
    assert composed.to_original(0, 1) == (0, 2)


def test_a_freshly_built_fold_table_folds_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-to-one table is built once per process on first use: built again from scratch it
    lower-cases one-to-one, leaves expanding folds (ß, İ) and caseless characters alone, maps
    every whitespace character to a space and typographic marks to plain ones."""
    monkeypatch.setattr(_normalise, "_table", None)
    assert fold("A\u00c9\u03a3\u0130\u00df\t\u3000\u2019\u2014\U0001e900x").text == (
        "a\u00e9\u03c3\u0130\u00df  '-\U0001e922x"
    )
    assert _normalise._table is not None
    assert normalise("Big  \u201cDeal\u201d").text == 'big "deal"'
