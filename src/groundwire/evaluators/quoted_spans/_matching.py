"""Decide whether each quoted span of an answer occurs in its contexts, per quote style.

Ragas style reproduces Ragas 0.4.3: contexts joined with one space, whitespace collapsed and
lower-cased only when `casefold`; with `normalize_unicode` both sides are first put in Unicode
NFC (off by default, for parity: Ragas compares code points as given). Typographic style
normalises both sides the same way (NFC, quotation marks folded, whitespace collapsed, optional
Unicode casefolding) and looks in each context separately, so a span never matches across two
contexts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from groundwire.evaluators.quoted_spans._finder import Quote, QuoteStyle, find_quotes

__all__ = ["SpanMatch", "match_spans"]

_WHITESPACE = re.compile(r"\s+")
# Curly and low quotation marks and apostrophes compare equal to their straight forms.
_FOLD_MARKS = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"'}
)


class SpanMatch(NamedTuple):
    """One quoted span of an answer and where (if anywhere) the contexts contain it."""

    quote: Quote
    matched: bool
    context_index: int | None
    """The first context containing the span; None when unmatched (or, in Ragas style, when the
    span only occurs across the boundary of two joined contexts)."""


def match_spans(
    answer: str,
    contexts: Sequence[str],
    *,
    casefold: bool,
    min_len: int,
    style: QuoteStyle,
    normalize_unicode: bool = False,
) -> list[SpanMatch]:
    """Find the answer's quoted spans of at least `min_len` words; match each against contexts.

    `normalize_unicode` puts both sides in NFC in Ragas style (typographic style always does)."""
    if style == "ragas":
        return _match_ragas(
            answer, contexts, casefold=casefold, min_len=min_len, nfc=normalize_unicode
        )
    # An empty quote ("") says nothing about the sources, so it never counts in this style.
    quotes = find_quotes(answer, style="typographic", min_len=max(min_len, 1))
    if not quotes:
        return []
    haystacks = [_typographic_normal(context, casefold) for context in contexts]
    matches: list[SpanMatch] = []
    for quote in quotes:
        needle = _typographic_normal(quote.text, casefold)
        where = next((i for i, hay in enumerate(haystacks) if needle in hay), None)
        matches.append(SpanMatch(quote, where is not None, where))
    return matches


def _ragas_normal(text: str) -> str:
    """Ragas' normalisation: runs of whitespace to one space, stripped, `str.lower`."""
    return _WHITESPACE.sub(" ", text).strip().lower()


def _typographic_normal(text: str, casefold: bool) -> str:
    """NFC, quotation marks folded to straight ones, whitespace collapsed, optionally casefolded."""
    text = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text).translate(_FOLD_MARKS)).strip()
    return text.casefold() if casefold else text


def _match_ragas(
    answer: str, contexts: Sequence[str], *, casefold: bool, min_len: int, nfc: bool = False
) -> list[SpanMatch]:
    """Ragas 0.4.3's matching: one haystack of the contexts joined with a space (NFC first when
    `nfc`)."""
    quotes = find_quotes(answer, style="ragas", min_len=min_len)
    if not quotes:
        return []
    # Without casefold, Ragas compares raw text: no whitespace collapsing either.
    plain = _ragas_normal if casefold else _identity

    def normal(text: str) -> str:
        """Ragas' normalisation, after NFC when asked."""
        return plain(unicodedata.normalize("NFC", text) if nfc else text)

    haystack = normal(" ".join(contexts))
    per_context: list[str] | None = None  # built only when a span matched, for its index
    matches: list[SpanMatch] = []
    for quote in quotes:
        needle = normal(quote.text)
        where = None
        found = bool(needle) and needle in haystack
        if found:
            per_context = per_context or [normal(context) for context in contexts]
            where = next((i for i, hay in enumerate(per_context) if needle in hay), None)
        matches.append(SpanMatch(quote, found, where))
    return matches


def _identity(text: str) -> str:
    """No normalisation (Ragas style without casefold)."""
    return text
