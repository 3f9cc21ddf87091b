"""The meaning check: a quote and its located span compared word by word, and what the edits mean.

Both sides are tokenised on their normalised text (NFC, case-folded, typographic marks unified),
words are mapped to one spelling (British -> American) and aligned with rapidfuzz's Levenshtein
opcodes over word lists. Each difference becomes a `QuoteEdit`; a word pair within one or two
letters of each other is a typo. A difference is a `MeaningChange` when it touches:

- `number`: a numeral, number word ("four hundred", "thirty-one", "third"), date, percentage,
  money amount or version whose value differs, is added or is dropped;
- `negation`: a negator (not, no, never, without, neither, nor, n't, cannot, ...) on one side only;
- `modality`: a modal verb (may, might, must, shall, should, can, could, will, would) flipped;
- `entity`: a capitalised name (not one that only starts a sentence) or an identifier (letters
  with digits, underscores, dotted or camelCase names) that differs beyond a typo.

Case, spacing, punctuation, quote-mark style, British/American spelling and typos (outside
numbers) are never meaning changes. Words dropped where the quote has an ellipsis are `elided`
and not checked.
"""

from __future__ import annotations

from rapidfuzz.distance import Levenshtein

from groundwire.evaluators.quote_verification._blocks import differences, edit, meaning_changes
from groundwire.evaluators.quote_verification._changes import Fidelity, MeaningChange
from groundwire.evaluators.quote_verification._normalise import NormalisedText
from groundwire.evaluators.quote_verification._side import Side, scan

__all__ = ["compare"]

_REACH = 80
"""Characters of document looked at beside the span for quote words found just outside it."""


def _edges(quote: list[str], source: list[str]) -> tuple[int, int]:
    """Quote words before the first word shared with the source and after the last one."""
    equal = [op for op in Levenshtein.opcodes(quote, source) if op.tag == "equal"]
    if not equal:
        return 0, 0
    return equal[0].src_start, len(quote) - equal[-1].src_end


def _source_words(
    quote: list[str], norm: NormalisedText, start: int, end: int
) -> tuple[list[str], list[tuple[int, int]]]:
    """The span's words, widened by the document's words just outside it when the quote's
    first or last words stand there (a trimmed span can leave out "four" of "four hundred")."""
    words, spans = scan(norm, start, end)
    if not quote or not words or (quote[0] == words[0] and quote[-1] == words[-1]):
        return words, spans  # the ends agree: nothing stands outside the span
    lead, trail = _edges(quote, words)
    if not (lead or trail):
        return words, spans
    left_words, left_spans = scan(norm, max(0, start - _REACH), start) if lead else ([], [])
    if left_spans and left_spans[0][0] == max(0, start - _REACH) > 0:
        left_words, left_spans = left_words[1:], left_spans[1:]  # cut by the reach
    right_words, right_spans = scan(norm, end, end + _REACH) if trail else ([], [])
    if right_spans and right_spans[-1][1] == min(len(norm.text), end + _REACH) < len(norm.text):
        right_words, right_spans = right_words[:-1], right_spans[:-1]
    keep_left = len(left_words) - min(len(left_words), lead + 1)
    wider = left_words[keep_left:] + words + right_words[: trail + 1]
    wider_spans = left_spans[keep_left:] + spans + right_spans[: trail + 1]
    ops = Levenshtein.opcodes(quote, wider)
    lo = ops[0].dest_end if ops and ops[0].tag == "insert" else 0
    hi = ops[-1].dest_start if len(ops) > 1 and ops[-1].tag == "insert" else len(wider)
    before = Levenshtein.distance(quote, words)
    after = Levenshtein.distance(quote, wider[lo:hi])
    if after < before or (after == before and hi - lo > len(words)):
        return wider[lo:hi], wider_spans[lo:hi]
    return words, spans


def compare(
    quote: str,
    quote_norm: NormalisedText,
    document: str,
    document_norm: NormalisedText,
    start: int,
    end: int,
) -> Fidelity:
    """Compare a quote with the document span at normalised [start, end) of `document_norm`.

    Offsets in the result are in the quote and in the document's original text. When the
    quote's first or last words stand just outside the span, they are compared there."""
    q_words, q_spans = scan(quote_norm, 0, len(quote_norm.text))
    s_words, s_spans = _source_words(q_words, document_norm, start, end)
    if q_words == s_words:
        return Fidelity()
    origin = int(document_norm.offsets[start]) if start < len(document_norm.offsets) else 0
    quote_side = Side(q_words, q_spans, quote_norm, quote, 0)
    source_side = Side(s_words, s_spans, document_norm, document, origin)
    blocks = differences(quote_side, source_side)
    if not blocks:
        return Fidelity()
    edits = tuple(edit(block, quote_side, source_side) for block in blocks)
    changes: list[MeaningChange] = []
    for block in blocks:
        if block.kind == "change":
            changes.extend(meaning_changes(block, quote_side, source_side))
    return Fidelity(edits, tuple(changes))
