"""Citations of one claim resolved to the context spans they point at (`citation_support` step 2).

`[n]`, `[n, m]` and `[^n]` markers name the n-th context; quoted text is located with
`verify_quotes` (no embeddings). A marker past the last context, a quote found nowhere, or a quote
that changes its source's meaning is a citation with a `problem` and no span: the evaluator then
rules its pair `not_supported` without asking the judge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from groundwire.evaluators.quoted_spans import find_quotes

__all__ = [
    "FLAG_OUT_OF_RANGE",
    "FLAG_QUOTE_MISQUOTED",
    "FLAG_QUOTE_NOT_FOUND",
    "Citation",
    "QuoteStyle",
    "has_citations",
    "resolve_citations",
]

FLAG_OUT_OF_RANGE: Final = "citation_out_of_range"
"""A marker names a context the turn does not have."""
FLAG_QUOTE_NOT_FOUND: Final = "quote_not_found"
"""A quote was not found (with confidence) in any context."""
FLAG_QUOTE_MISQUOTED: Final = "quote_misquoted"
"""A quote was found, but it changes its source's meaning (a number, negation, modal or name)."""
_MARKER = re.compile(r"\[\^?\s*(\d+(?:\s*[,;]\s*\^?\s*\d+)*)\s*\]")
_NUMBER = re.compile(r"\d+")

QuoteStyle = Literal["typographic", "ragas"]


@dataclass(frozen=True, slots=True)
class Citation:
    """One citation of a claim, resolved to the span it points at."""

    kind: Literal["marker", "quote"]
    ref: str
    """The marker (`[2]`) or the quoted text as written in the claim."""
    context_index: int | None
    """0-based index of the cited context; None when it could not be resolved."""
    span: str
    """The text the claim is audited against (empty when unresolved)."""
    problem: str | None = None
    """`citation_out_of_range`, `quote_not_found` or `quote_misquoted` when unresolved."""
    reason: str | None = None
    """What a misquote changed ("number changed: '30' -> '60'")."""


def _markers(claim: str, contexts: Sequence[str], index_base: int) -> list[Citation]:
    """Citations from `[n]`, `[n, m]` and `[^n]` markers."""
    citations: list[Citation] = []
    for match in _MARKER.finditer(claim):
        for number in _NUMBER.findall(match.group(1)):
            index = int(number) - index_base
            ref = f"[{number}]"
            if 0 <= index < len(contexts):
                citations.append(Citation("marker", ref, index, contexts[index]))
            else:
                citations.append(Citation("marker", ref, None, "", FLAG_OUT_OF_RANGE))
    return citations


def _quotes(
    claim: str, contexts: Sequence[str], style: QuoteStyle, min_words: int
) -> list[Citation]:
    """Citations from quoted text, located with `verify_quotes` (no embeddings)."""
    quotes = [quote.text for quote in find_quotes(claim, style=style, min_len=min_words)]
    if not quotes:
        return []
    from groundwire.evaluators.quote_verification import verify_quotes

    documents = {str(index): text for index, text in enumerate(contexts)}
    citations: list[Citation] = []
    for row in verify_quotes(quotes, documents, embedder=None):
        if row.source_doc is not None and row.meaning_changes:
            reason = row.low_confidence_reason
            citations.append(
                Citation("quote", row.quote, None, "", FLAG_QUOTE_MISQUOTED, reason=reason)
            )
        elif row.source_doc is None or row.low_confidence:
            citations.append(Citation("quote", row.quote, None, "", FLAG_QUOTE_NOT_FOUND))
        else:
            citations.append(Citation("quote", row.quote, int(row.source_doc), row.context_window))
    return citations


def resolve_citations(
    claim: str,
    contexts: Sequence[str],
    *,
    index_base: int = 1,
    quote_style: QuoteStyle = "typographic",
    min_quote_words: int = 3,
) -> list[Citation]:
    """The claim's citations (markers first, then quotes), duplicates removed."""
    found = _markers(claim, contexts, index_base)
    if contexts:
        found += _quotes(claim, contexts, quote_style, min_quote_words)
    unique: dict[tuple[str, str], Citation] = {}
    for citation in found:
        unique.setdefault((citation.kind, citation.ref), citation)
    return list(unique.values())


def has_citations(
    answer: str, *, quote_style: QuoteStyle = "typographic", min_words: int = 3
) -> bool:
    """True when the answer has a citation marker or a quote of at least `min_words` words."""
    if _MARKER.search(answer):
        return True
    return bool(find_quotes(answer, style=quote_style, min_len=min_words))
