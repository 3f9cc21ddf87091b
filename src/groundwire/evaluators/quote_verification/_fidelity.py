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

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from rapidfuzz.distance import OSA, Levenshtein

from groundwire.evaluators.quote_verification._normalise import NormalisedText
from groundwire.evaluators.quote_verification._words import (
    CURRENCY_WORDS,
    MODALS,
    MONTHS,
    PERCENT_WORDS,
    SCALES,
    STOPWORDS,
    canonical,
    negations,
    number_word,
)

__all__ = [
    "CHANGE_KINDS",
    "ChangeKind",
    "EditKind",
    "Fidelity",
    "MeaningChange",
    "QuoteEdit",
    "compare",
]

EditKind: TypeAlias = Literal["typo", "changed", "added", "dropped", "elided"]
"""One edit: a word with a typo, words replaced, words only in the quote, words only in the
source, or source words left out where the quote has an ellipsis."""
ChangeKind: TypeAlias = Literal["number", "negation", "modality", "entity"]
"""What a meaning-changing edit changed."""
CHANGE_KINDS: tuple[ChangeKind, ...] = ("number", "negation", "modality", "entity")

_TOKEN = re.compile(r"(\.{3,}|…)|([$€£¥]?\w+(?:[-'.,:/]\w+)*%?)")
_NUMERAL = re.compile(r"[$€£¥]?v?\d+(?:[.,:/-]\d+)*(?:%|[a-z]{1,3})?")
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_CAMEL = re.compile(r"[a-z][A-Z]")
_DOTTED = re.compile(r"[A-Za-z]\.[A-Za-z]")
_SENTENCE_END = frozenset(".!?:;)\n")
_OPENERS = frozenset(" \t\r\"'“”‘’«»([{*-–—•")
_ELLIPSIS = "…"


@dataclass(frozen=True, slots=True)
class QuoteEdit:
    """One difference between a quote and its source span, with offsets in both."""

    kind: EditKind
    quote_text: str
    """The quote's words, as written ("" when the source words were dropped)."""
    source_text: str
    """The source's words, as written ("" when the quote added words)."""
    quote_start: int
    """Start of `quote_text` in the quote (for an empty side: where the words would go)."""
    quote_end: int
    source_start: int
    """Start of `source_text` in the source document (like `doc_start`)."""
    source_end: int


@dataclass(frozen=True, slots=True)
class MeaningChange:
    """An edit that changes what the quote says: its kind and the two sides, as written."""

    kind: ChangeKind
    source_text: str
    """What the source says (with a neighbouring word when the quote dropped something)."""
    quote_text: str
    """What the quote says instead."""
    quote_start: int
    quote_end: int
    source_start: int
    source_end: int

    def describe(self) -> str:
        """One line: "number changed: 'four hundred' -> 'four'"."""
        source, quote = " ".join(self.source_text.split()), " ".join(self.quote_text.split())
        return f"{self.kind} changed: '{source}' -> '{quote}'"


@dataclass(frozen=True, slots=True)
class Fidelity:
    """The word-level comparison of one quote with its span."""

    edits: tuple[QuoteEdit, ...] = ()
    changes: tuple[MeaningChange, ...] = ()


@dataclass(slots=True)
class _Token:
    """One word (or ellipsis) of a side: its compared form, and where it is in the original."""

    word: str
    """The spelling-canonical, case-folded word (what the diff compares)."""
    start: int
    end: int
    capital: bool
    acronym: bool
    initial: bool
    ellipsis: bool
    sense: str = field(default="")
    """The word its meaning is read from: `word`, or the source's word for a typo of it."""


def _starts_sentence(original: str, start: int, floor: int) -> bool:
    """True when nothing but openers stands between `floor` (or a sentence end) and `start`."""
    position = start - 1
    while position >= floor and original[position] in _OPENERS:
        position -= 1
    return position < floor or original[position] in _SENTENCE_END


def _tokens(norm: NormalisedText, lo: int, hi: int, original: str, floor: int) -> list[_Token]:
    """The words of normalised [lo, hi), with offsets and case read from the original text."""
    tokens: list[_Token] = []
    offsets, ends = norm.offsets, norm.ends
    for match in _TOKEN.finditer(norm.text, lo, hi):
        a, b = match.span()
        start, end = int(offsets[a]), int(ends[b - 1])
        if match.group(1):
            tokens.append(_Token(_ELLIPSIS, start, end, False, False, False, True, _ELLIPSIS))
            continue
        text = match.group(2)
        parts = text.split("-")
        if len(parts) > 1 and all(number_word(part) is not None for part in parts):
            at = a  # "thirty-one" is read as "thirty one"
            for part in parts:
                tokens.append(_word(part, norm, at, at + len(part), original, floor))
                at += len(part) + 1
        else:
            tokens.append(_word(text, norm, a, b, original, floor))
    return tokens


def _word(text: str, norm: NormalisedText, a: int, b: int, original: str, floor: int) -> _Token:
    """The token for the word at normalised [a, b)."""
    start, end = int(norm.offsets[a]), int(norm.ends[b - 1])
    raw = original[start:end].lstrip("$€£¥")
    word = canonical(text)
    letters = [c for c in raw if c.isalpha()]
    return _Token(
        word,
        start,
        end,
        capital=raw[:1].isupper(),
        acronym=len(letters) >= 2 and all(c.isupper() for c in letters),
        initial=_starts_sentence(original, start, floor),
        ellipsis=False,
        sense=word,
    )


def _special(word: str) -> bool:
    """True for a word whose change changes meaning by itself (number, negator, modal)."""
    return number_word(word) is not None or negations(word) > 0 or word in MODALS


def _is_typo(quoted: _Token, source: _Token) -> bool:
    """True when the quote's word is a slip for the source's (one or two letters apart).

    Never for numerals, nor when the quote's word is itself a number, negator or modal."""
    a, b = quoted.word, source.word
    longest = max(len(a), len(b))
    allowed = 0 if longest <= 3 else 1 if longest <= 7 else 2
    if allowed == 0 or any(c.isdigit() for c in a) or any(c.isdigit() for c in b):
        return False
    if _special(a):
        return False
    return OSA.distance(a, b, score_cutoff=allowed) <= allowed


# --- numbers ------------------------------------------------------------------------------------


def _is_numeral(word: str) -> bool:
    """Digits, with separators, a currency sign, a %, an ordinal or unit suffix, or a v prefix."""
    return _NUMERAL.fullmatch(word) is not None


def _is_month(tokens: Sequence[_Token], index: int) -> bool:
    """A capitalised month name; "May" only next to a numeral (else it is the modal verb)."""
    token = tokens[index]
    if token.sense not in MONTHS or not token.capital:
        return False
    if token.sense != "may":
        return True
    near = [tokens[i] for i in (index - 1, index + 1) if 0 <= i < len(tokens)]
    return any(_is_numeral(t.sense) for t in near)


def _numeric(tokens: Sequence[_Token], index: int) -> bool:
    """True when the token is part of a number, date, amount or version."""
    sense = tokens[index].sense
    return _is_numeral(sense) or number_word(sense) is not None or _is_month(tokens, index)


def _joins(tokens: Sequence[_Token], index: int) -> bool:
    """True for a word that continues the number before it ("and", "per cent", "dollars")."""
    sense = tokens[index].sense
    if sense in CURRENCY_WORDS or sense in PERCENT_WORDS:
        return True
    if sense == "per":
        return index + 1 < len(tokens) and tokens[index + 1].sense == "cent"
    if sense == "cent":
        return index > 0 and tokens[index - 1].sense == "per"
    if sense == "and":
        return (
            index + 1 < len(tokens)
            and number_word(tokens[index + 1].sense) is not None
            and number_word(tokens[index - 1].sense) is not None
        )
    return False


def _numeral_parts(word: str) -> list[str]:
    """A numeral's comparable parts: "$1,200" -> ["$", "1200"], "3rd" -> ["3th"], "4%"."""
    parts: list[str] = []
    if word[0] in "$€£¥":
        parts.append(word[0])
        word = word[1:]
    if word.endswith("%"):
        parts.append("%")
        word = word[:-1]
    if word.startswith("v"):
        word = word[1:]
    ordinal = _ORDINAL_SUFFIX.match(word)
    if ordinal:
        parts.append(ordinal.group(1) + "th")
        return parts
    parts.append(re.sub(r"(?<=\d),(?=\d{3})", "", word))
    return parts


def _number_key(phrase: Sequence[_Token]) -> tuple[str, ...]:
    """What a number phrase means, as sorted parts: "four hundred" and "400" both ("400",)."""
    parts: list[str] = []
    total = current = 0.0
    pending = after_per = False

    def flush(ordinal: bool = False) -> None:
        """Close the run of number words read so far."""
        nonlocal total, current, pending
        if pending:
            parts.append(f"{total + current:g}" + ("th" if ordinal else ""))
        total = current = 0.0
        pending = False

    for token in phrase:
        sense = token.sense
        word = number_word(sense)
        if word is not None:
            value, ordinal = word
            if sense in SCALES or sense in ("hundredth", "thousandth", "millionth"):
                if value == 100:
                    current = (current or 1.0) * value
                else:
                    total += (current or 1.0) * value
                    current = 0.0
            else:
                current += value
            pending = True
            if ordinal:
                flush(ordinal=True)
        elif _is_numeral(sense):
            flush()
            parts.extend(_numeral_parts(sense))
        elif sense in MONTHS:
            flush()
            parts.append(f"month{MONTHS[sense]}")
        elif sense in PERCENT_WORDS or (sense == "cent" and after_per):
            flush()
            parts.append("%")
        elif sense in CURRENCY_WORDS:
            flush()
            parts.append(CURRENCY_WORDS[sense])
        after_per = sense == "per"
    flush()
    return tuple(sorted(parts))


def _phrases(tokens: Sequence[_Token]) -> list[tuple[int, int, tuple[str, ...]]]:
    """The number phrases of a side: (first token, end token, meaning)."""
    found: list[tuple[int, int, tuple[str, ...]]] = []
    index = 0
    while index < len(tokens):
        if not _numeric(tokens, index):
            index += 1
            continue
        end = index + 1
        while end < len(tokens) and (_numeric(tokens, end) or _joins(tokens, end)):
            end += 1
        found.append((index, end, _number_key(tokens[index:end])))
        index = end
    return found


# --- the comparison -----------------------------------------------------------------------------


def _is_entity(token: _Token) -> bool:
    """A name or identifier: capitalised mid-sentence (not a function word), an acronym, or an
    identifier (letters and digits, underscores, dotted or camelCase)."""
    sense = token.sense
    if token.ellipsis or _is_numeral(sense) or number_word(sense) is not None:
        return False
    if sense in MONTHS and token.capital:
        return False  # a date's part: the number check covers it
    if any(c.isdigit() for c in sense) or "_" in sense:
        return True
    if token.acronym and sense not in STOPWORDS:
        return True
    return token.capital and not token.initial and sense not in STOPWORDS


def _modal(token: _Token) -> str | None:
    """The modal verb a token is, by its base ("can't" -> "can")."""
    return MODALS.get(token.sense)


@dataclass(slots=True)
class _Block:
    """A stretch of differences: quote tokens [i1, i2) against source tokens [j1, j2)."""

    kind: Literal["change", "typo", "elided"]
    i1: int
    i2: int
    j1: int
    j2: int


def _blocks(quote: list[_Token], source: list[_Token]) -> list[_Block]:
    """Differences from the word alignment: typo pairs and ellipsis gaps apart, the rest merged."""
    pieces: list[_Block] = []
    for op in Levenshtein.opcodes([t.word for t in quote], [t.word for t in source]):
        tag, i1, i2, j1, j2 = op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end
        if tag == "equal":
            continue
        if tag == "replace":
            for k in range(i2 - i1):
                q, s = quote[i1 + k], source[j1 + k]
                if q.ellipsis:
                    kind: Literal["change", "typo", "elided"] = "elided"
                elif _is_typo(q, s):
                    kind = "typo"
                    q.sense = s.sense
                else:
                    kind = "change"
                pieces.append(_Block(kind, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
        elif tag == "insert":  # in the source only
            pieces.append(_Block("change", i1, i1, j1, j2))
        else:  # in the quote only
            for k in range(i1, i2):
                kind = "elided" if quote[k].ellipsis else "change"
                pieces.append(_Block(kind, k, k + 1, j1, j1))
    merged: list[_Block] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        adjacent = last is not None and last.i2 == piece.i1 and last.j2 == piece.j1
        if last is not None and adjacent:
            dropped = piece.i1 == piece.i2 or last.i1 == last.i2
            if last.kind == piece.kind == "change" or (
                "elided" in (last.kind, piece.kind)
                and "typo" not in (last.kind, piece.kind)
                and dropped
            ):
                if piece.kind == "elided":
                    last.kind = "elided"
                last.i2, last.j2 = piece.i2, piece.j2
                continue
        merged.append(piece)
    return merged


class _Side:
    """One side's tokens and original text, for slicing what an edit covers."""

    def __init__(self, tokens: list[_Token], original: str, origin: int) -> None:
        """`origin`: the offset reported for an empty side at the very start."""
        self.tokens = tokens
        self.original = original
        self.origin = origin
        self.phrases = _phrases(tokens)

    def span(self, i1: int, i2: int) -> tuple[str, int, int]:
        """The text covered by tokens [i1, i2) and its offsets (an empty range: a position)."""
        if i2 > i1:
            start, end = self.tokens[i1].start, self.tokens[i2 - 1].end
            return self.original[start:end], start, end
        if i1 > 0:
            at = self.tokens[i1 - 1].end
        elif self.tokens:
            at = self.tokens[0].start
        else:
            at = self.origin
        return "", at, at

    def numbers(self, i1: int, i2: int) -> list[tuple[int, int, tuple[str, ...]]]:
        """The number phrases inside or touching tokens [i1, i2)."""
        return [p for p in self.phrases if p[0] <= i2 and p[1] >= i1]


def _widened(block: _Block, quote: _Side, source: _Side) -> tuple[int, int, int, int]:
    """A block with one shared neighbouring word when one side is empty ("shall not" -> "shall")."""
    i1, i2, j1, j2 = block.i1, block.i2, block.j1, block.j2
    if i1 == i2 or j1 == j2:
        if i1 > 0 and j1 > 0:
            return i1 - 1, i2, j1 - 1, j2
        if i2 < len(quote.tokens) and j2 < len(source.tokens):
            return i1, i2 + 1, j1, j2 + 1
    return i1, i2, j1, j2


def _change(
    kind: ChangeKind, quote: _Side, qi: tuple[int, int], source: _Side, sj: tuple[int, int]
) -> MeaningChange:
    """A meaning change covering quote tokens `qi` and source tokens `sj`."""
    q_text, q_start, q_end = quote.span(*qi)
    s_text, s_start, s_end = source.span(*sj)
    return MeaningChange(kind, s_text, q_text, q_start, q_end, s_start, s_end)


def _meaning(block: _Block, quote: _Side, source: _Side) -> list[MeaningChange]:
    """The meaning changes one block of differences makes."""
    said = quote.tokens[block.i1 : block.i2]
    wrote = source.tokens[block.j1 : block.j2]
    i1, i2, j1, j2 = _widened(block, quote, source)
    changes: list[MeaningChange] = []
    q_numbers = quote.numbers(block.i1, block.i2)
    s_numbers = source.numbers(block.j1, block.j2)
    if sorted(p[2] for p in q_numbers) != sorted(p[2] for p in s_numbers):
        qi = (min(p[0] for p in q_numbers), max(p[1] for p in q_numbers)) if q_numbers else None
        sj = (min(p[0] for p in s_numbers), max(p[1] for p in s_numbers)) if s_numbers else None
        changes.append(_change("number", quote, qi or (i1, i2), source, sj or (j1, j2)))
    if sum(negations(t.sense) for t in said) != sum(negations(t.sense) for t in wrote):
        changes.append(_change("negation", quote, (i1, i2), source, (j1, j2)))
    q_modals = Counter(m for t in said if (m := _modal(t)) is not None)
    s_modals = Counter(m for t in wrote if (m := _modal(t)) is not None)
    if q_modals != s_modals:
        changes.append(_change("modality", quote, (i1, i2), source, (j1, j2)))
    q_names = Counter(t.sense for t in said if _is_entity(t))
    s_names = Counter(t.sense for t in wrote if _is_entity(t))
    if q_names != s_names:
        changes.append(_change("entity", quote, (block.i1, block.i2), source, (j1, j2)))
    return changes


def _edit(block: _Block, quote: _Side, source: _Side) -> QuoteEdit:
    """The edit a block of differences is."""
    q_text, q_start, q_end = quote.span(block.i1, block.i2)
    s_text, s_start, s_end = source.span(block.j1, block.j2)
    if block.kind != "change":
        kind: EditKind = block.kind
    elif not q_text:
        kind = "dropped"
    elif not s_text:
        kind = "added"
    else:
        kind = "changed"
    return QuoteEdit(kind, q_text, s_text, q_start, q_end, s_start, s_end)


def _edge_only(quote: list[_Token], source: list[_Token]) -> tuple[int, int, int]:
    """(quote words before the first shared word, after the last one, edit cost) of the
    alignment: words the quote has beyond its span's ends."""
    ops = Levenshtein.opcodes([t.word for t in quote], [t.word for t in source])
    equal = [op for op in ops if op.tag == "equal"]
    if not equal:
        return 0, 0, len(quote) + len(source)
    matched = sum(op.src_end - op.src_start for op in equal)
    cost = len(quote) + len(source) - 2 * matched
    return equal[0].src_start, len(quote) - equal[-1].src_end, cost


_REACH = 80
"""Characters of document looked at beside the span for quote words found just outside it."""


def _beside(
    norm: NormalisedText, document: str, start: int, end: int, before: int, after: int
) -> tuple[list[_Token], list[_Token]]:
    """Up to `before` whole words just before normalised `start` and `after` just after `end`."""
    left: list[_Token] = []
    right: list[_Token] = []
    if before:
        lo = max(0, start - _REACH)
        left = _tokens(norm, lo, start, document, 0)
        if lo > 0 and left and left[0].start == int(norm.offsets[lo]):
            left = left[1:]  # cut by the reach: not a whole word
        left = left[-before:]
    if after:
        hi = min(len(norm.text), end + _REACH)
        right = _tokens(norm, end, hi, document, 0)
        if hi < len(norm.text) and right and right[-1].end == int(norm.ends[hi - 1]):
            right = right[:-1]
        right = right[:after]
    return left, right


def _source_tokens(
    q_tokens: list[_Token], norm: NormalisedText, document: str, start: int, end: int
) -> list[_Token]:
    """The span's words, widened by the document's words just outside it when the quote's
    first or last words stand there (a trimmed span can leave out "four" of "four hundred")."""
    tokens = _tokens(norm, start, end, document, 0)
    lead, trail, cost = _edge_only(q_tokens, tokens)
    if not (lead or trail):
        return tokens
    left, right = _beside(norm, document, start, end, lead + 1, trail + 1)
    wider = [*left, *tokens, *right]
    ops = Levenshtein.opcodes([t.word for t in q_tokens], [t.word for t in wider])
    first = ops[0] if ops and ops[0].tag == "insert" else None  # source words before the quote
    last = ops[-1] if len(ops) > 1 and ops[-1].tag == "insert" else None
    lo = first.dest_end if first is not None else 0
    hi = last.dest_start if last is not None else len(wider)
    trimmed = wider[lo:hi]
    if _edge_only(q_tokens, trimmed)[2] < cost or (
        _edge_only(q_tokens, trimmed)[2] == cost and len(trimmed) > len(tokens)
    ):
        return trimmed
    return tokens


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
    q_tokens = _tokens(quote_norm, 0, len(quote_norm.text), quote, 0)
    s_tokens = _source_tokens(q_tokens, document_norm, document, start, end)
    origin = int(document_norm.offsets[start]) if start < len(document_norm.offsets) else 0
    quote_side = _Side(q_tokens, quote, 0)
    source_side = _Side(s_tokens, document, origin)
    blocks = _blocks(q_tokens, s_tokens)
    if not blocks:
        return Fidelity()
    quote_side.phrases = _phrases(q_tokens)  # typo pairs now read as the source's words
    edits = tuple(_edit(block, quote_side, source_side) for block in blocks)
    changes: list[MeaningChange] = []
    for block in blocks:
        if block.kind == "change":
            changes.extend(_meaning(block, quote_side, source_side))
    return Fidelity(edits, tuple(changes))
