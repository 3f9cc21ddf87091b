"""Identifiers written with superscript or subscript digits ("x²", "H₂O") are names like "x2":
a quote that swaps one for another word is refused, as it is for ASCII digits. The cheap
pre-check before the entity test (`Side.may_name`) must never rule out a word that `entity`
counts as a name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwire.evaluators import verify_quotes
from groundwire.evaluators.quote_verification._normalise import normalise
from groundwire.evaluators.quote_verification._side import Side, scan

SENTENCE = "Set the counter {} to zero before every nightly batch run"


@pytest.mark.parametrize("name", ["x2", "x\u00b2", "h\u2082o", "v\u2460"])
@pytest.mark.parametrize("direction", ["quote swaps it out", "quote swaps it in"])
def test_an_identifier_with_any_kind_of_digit_swapped_for_a_word_is_refused(
    name: str, direction: str
) -> None:
    named, plain = SENTENCE.format(name), SENTENCE.format("y")
    source, quote = (named, plain) if direction == "quote swaps it out" else (plain, named)
    (row,) = verify_quotes([quote], [source], embedder=None)
    assert not row.verified
    assert [change.kind for change in row.meaning_changes] == ["entity"]


def _side(text: str) -> Side:
    norm = normalise(text)
    words, spans = scan(norm, 0, len(norm.text))
    return Side(words, spans, norm, text, 0)


_WORDS = st.text(
    alphabet=st.sampled_from("ab xyZ_.2\u00b2\u2082\u2460\u0663\u00e9\u00c9-'"),
    min_size=1,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=6))
def test_the_pre_check_never_rules_out_a_word_entity_counts(words: list[str]) -> None:
    side = _side("so " + " ".join(words))
    for index in range(len(side.words)):
        if side.entity(index):
            assert side.may_name(range(index, index + 1)), (side.words, index)
