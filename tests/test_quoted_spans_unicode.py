"""quoted_spans and Unicode forms: Ragas' exact behaviour by default, NFC on request."""

from __future__ import annotations

import unicodedata

import pytest

from groundwire import Context, RagTurn
from groundwire.evaluators.quoted_spans import QuotedSpans, quoted_spans_alignment
from tests.test_quoted_spans_parity import _ORACLE

SOURCE = unicodedata.normalize("NFC", "The café serves crème brûlée every Friday evening.")
ANSWER = 'It says "' + unicodedata.normalize("NFD", "serves crème brûlée every Friday") + '".'


def test_ragas_style_default_keeps_ragas_code_point_comparison() -> None:
    """By default a decomposed quote does not match a composed source (as in Ragas)."""
    result = quoted_spans_alignment([ANSWER], [[SOURCE]])
    assert result["citation_alignment_quoted_spans"] == 0.0 and result["total"] == 1.0


@pytest.mark.skipif(_ORACLE is None, reason="the Ragas 0.4.3 oracle is not installed")
def test_ragas_style_default_equals_the_oracle_on_mixed_forms() -> None:
    """Parity holds on NFD/NFC mixes too: the default gives Ragas' own numbers."""
    assert _ORACLE is not None
    answers = [ANSWER, 'He said "' + SOURCE[4:30] + '".']
    sources = [[SOURCE], [unicodedata.normalize("NFD", SOURCE)]]
    assert quoted_spans_alignment(answers, sources) == _ORACLE.quoted_spans_alignment(
        answers, sources
    )


def test_normalize_unicode_matches_composed_and_decomposed_forms() -> None:
    """normalize_unicode=True compares NFC forms, in both directions."""
    assert quoted_spans_alignment([ANSWER], [[SOURCE]], normalize_unicode=True)["matched"] == 1.0
    nfd_source = unicodedata.normalize("NFD", SOURCE)
    composed = 'It says "serves crème brûlée every Friday".'
    result = quoted_spans_alignment([composed], [[nfd_source]], normalize_unicode=True)
    assert result["citation_alignment_quoted_spans"] == 1.0
    with pytest.raises(TypeError, match="normalize_unicode must be a bool"):
        quoted_spans_alignment([ANSWER], [[SOURCE]], normalize_unicode="yes")  # type: ignore[arg-type]


def test_evaluator_option_in_ragas_style_and_typographic_always_nfc() -> None:
    """The evaluator takes the option for Ragas style; its typographic style always uses NFC."""
    turn = RagTurn(query="q", contexts=[Context(text=SOURCE)], answer=ANSWER)
    assert QuotedSpans(quote_style="ragas").evaluate(turn).value == 0.0
    nfc = QuotedSpans(quote_style="ragas", normalize_unicode=True)
    assert nfc.evaluate(turn).value == 1.0
    assert "normalize_unicode=True" in repr(nfc)
    assert QuotedSpans().evaluate(turn).value == 1.0
    with pytest.raises(TypeError, match="normalize_unicode must be a bool"):
        QuotedSpans(normalize_unicode=1)  # type: ignore[arg-type]
