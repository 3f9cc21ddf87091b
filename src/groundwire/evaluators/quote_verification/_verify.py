"""`verify_quotes`: locate each quote in a set of documents (the VerifyQuotes algorithm)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Unpack

from groundwire.embeddings import DEFAULT_EMBEDDER, Embedder
from groundwire.evaluators.quote_verification._changes import Fidelity
from groundwire.evaluators.quote_verification._corpus import Corpus, Documents, coerce_documents
from groundwire.evaluators.quote_verification._cosine import with_cosine
from groundwire.evaluators.quote_verification._ellipsis import Located
from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._locate import Locator
from groundwire.evaluators.quote_verification._normalise import (
    NormalisedText,
    fold,
    normalise_quote,
)
from groundwire.evaluators.quote_verification._options import (
    OptionArgs,
    Options,
    signature_with_options,
)
from groundwire.evaluators.quote_verification._rows import QuoteMatch
from groundwire.evaluators.quote_verification._windows import default_overlap, default_window_size

__all__ = ["CONTEXT_CHARS", "verify_quotes", "verify_with"]

CONTEXT_CHARS = 300
"""Characters of document kept on each side of the span in `context_window`."""
_NEAR = 80
"""Characters beside a runner-up span searched for what the quote says instead."""
_RUNNER_UP_MARGIN = 0.05
"""How much lower a runner-up span's match ratio may be when it changes no meaning."""


def _check_quotes(quotes: object) -> list[str]:
    """The quotes as a list, after checking each is a non-empty string."""
    if isinstance(quotes, str | bytes) or not isinstance(quotes, Iterable):
        raise TypeError(
            f"quotes must be a list of strings, got {type(quotes).__name__}"
            + (" (wrap a single quote in a list)" if isinstance(quotes, str) else "")
        )
    checked: list[str] = []
    for index, quote in enumerate(quotes):
        if not isinstance(quote, str):
            raise TypeError(f"quotes[{index}] must be a str, got {type(quote).__name__}")
        if not quote.strip():
            raise ValueError(f"quotes[{index}] is empty or whitespace only")
        checked.append(quote)
    return checked


def verify_quotes(
    quotes: Iterable[str],
    documents: Documents,
    *,
    embedder: Embedder | None = DEFAULT_EMBEDDER,
    **options: Unpack[OptionArgs],
) -> list[QuoteMatch]:
    """Locate each quote in the documents; one `QuoteMatch` per quote, in order.

    - `documents`: a mapping name -> text, or a list of texts (named doc_0, doc_1, ...).
    - `embedder`: computes `cosine_similarity` of quote and span; None skips it. The default is
      the local e5 model of the `embeddings` extra (skipped with one warning when missing).
    - `cosine`: which located quotes get a cosine: "fuzzy" (default: a span with the quote's
      very words gets 1.0 without the model, the others are embedded), "always" (every one is
      embedded) or "off" (none). The verdicts are the same under every policy.
    - `window_size` / `overlap`: BM25 window and overlap in characters (default 1.1 x the longest
      quote, capped at 500, and 30% of the window).
    - `bm25_k1` (1.5), `bm25_b` (0.4): BM25 parameters. `ellipsis_max_gap`: the most characters
      allowed between the head and the tail of a quote with an ellipsis (None: any).
    - `trim_spans` (True): trim the best window to the quote (else the span is the whole
      window), with `trim_method` "fuzzy" (default), "sliding_bm25" or "hybrid";
      `expand_window_neighbors` (1): windows added on a side where the trimmed span touches the
      window edge.
    - `min_fuzzy_ratio` (0.6): a `match_ratio` below it sets `low_confidence`.
    - `meaning_check` (True): compare each located quote with its span word by word; a changed
      number, negation, modal verb or name sets `low_confidence` whatever the ratio (False:
      ratio only).

    Quotes and documents are compared in Unicode NFC; offsets are those of the original text.
    """
    quote_list = _check_quotes(quotes)
    named = coerce_documents(documents)
    checked = Options.checked(**options)
    if embedder is not None and not isinstance(embedder, Embedder):
        raise TypeError(
            f"embedder must have an embed(texts) method or be None, got {type(embedder).__name__}"
        )
    return verify_with(quote_list, named, embedder, checked)


verify_quotes.__signature__ = signature_with_options(verify_quotes)  # type: ignore[attr-defined]


def verify_with(
    quote_list: list[str],
    named: list[tuple[str, str]],
    embedder: Embedder | None,
    options: Options,
) -> list[QuoteMatch]:
    """`verify_quotes` on checked input: quotes, named documents and validated options."""
    if not quote_list:
        return []
    normalised = [normalise_quote(quote) for quote in quote_list]
    size = options.window_size or default_window_size(max(len(q) for q in normalised))
    overlap_chars = options.overlap if options.overlap is not None else default_overlap(size)
    if overlap_chars >= size:
        raise ValueError(
            f"overlap must be smaller than the window size ({size}), got {options.overlap}"
        )
    corpus = Corpus(named)
    locator = Locator(corpus, options, size, overlap_chars)
    rows = [
        _row(quote, locator.candidates(norm, quote), corpus, options)
        for quote, norm in zip(quote_list, normalised, strict=True)
    ]
    if embedder is None:
        return rows
    return with_cosine(rows, embedder, options.cosine)


def _reason(ratio: float, min_ratio: float, fidelity: Fidelity) -> str | None:
    """Why a located quote is not verified (None when it is)."""
    reasons = [f"match ratio {ratio:.2f} is below {min_ratio:g}"] if ratio < min_ratio else []
    reasons += [change.describe() for change in fidelity.changes]
    return "; ".join(reasons) or None


def _checked(
    quote: str, candidates: list[Located], corpus: Corpus, options: Options
) -> tuple[Located | None, Fidelity]:
    """The best candidate span and its comparison with the quote. When the best one would change
    the quote's meaning, a runner-up that matches well enough and changes nothing wins (the same
    passage often stands in several documents, with one word different), if its match ratio is
    within 0.05 of the best one's."""
    if not candidates:
        return None, Fidelity()
    best = candidates[0]
    if not options.meaning_check or best.kind == "exact" or best.ratio < options.min_fuzzy_ratio:
        return best, Fidelity()  # verbatim, or not found: there is nothing to compare
    quote_norm = fold(quote)
    fidelity = compare(quote, quote_norm, corpus.texts[best.doc], *_span(corpus, best))
    if not fidelity.changes:
        return best, fidelity
    said = [normalise_quote(change.quote_text) for change in fidelity.changes]
    for located in candidates[1:]:
        if located.ratio < max(options.min_fuzzy_ratio, best.ratio - _RUNNER_UP_MARGIN):
            break
        norm, start, end = _span(corpus, located)
        near = norm.text[max(0, start - _NEAR) : end + _NEAR]
        if not all(words in near for words in said):
            continue  # it lacks what the quote says instead: it would not read any better
        compared = compare(quote, quote_norm, corpus.texts[located.doc], norm, start, end)
        if not compared.changes:
            return located, compared
    return best, fidelity


def _span(corpus: Corpus, located: Located) -> tuple[NormalisedText, int, int]:
    """The located span as (normalised document, start, end)."""
    return corpus.norms[located.doc], located.start, located.end


def _row(quote: str, candidates: list[Located], corpus: Corpus, options: Options) -> QuoteMatch:
    """Build the output row for one quote from where it was located (or not)."""
    located, fidelity = _checked(quote, candidates, corpus, options)
    if located is None:
        return QuoteMatch(
            quote=quote,
            source_doc=None,
            span_text="",
            context_window="",
            bm25_score=None,
            bm25_ratio=None,
            global_start=None,
            global_end=None,
            match_ratio=0.0,
            cosine_similarity=None,
            doc_start=None,
            doc_end=None,
            low_confidence=True,
            match_kind="none",
            low_confidence_reason="not found: no document shares a word with the quote",
        )
    text = corpus.texts[located.doc]
    norm = corpus.norms[located.doc]
    start, end = norm.to_original(located.start, located.end)
    reason = _reason(located.ratio, options.min_fuzzy_ratio, fidelity)
    offset = corpus.global_starts[located.doc]
    return QuoteMatch(
        quote=quote,
        source_doc=corpus.names[located.doc],
        span_text=text[start:end],
        context_window=text[max(0, start - CONTEXT_CHARS) : end + CONTEXT_CHARS],
        bm25_score=located.bm25_score,
        bm25_ratio=located.bm25_ratio,
        global_start=offset + start,
        global_end=offset + end,
        match_ratio=located.ratio,
        cosine_similarity=None,
        doc_start=start,
        doc_end=end,
        low_confidence=reason is not None,
        match_kind=located.kind,
        edits=fidelity.edits,
        meaning_changes=fidelity.changes,
        low_confidence_reason=reason,
    )
