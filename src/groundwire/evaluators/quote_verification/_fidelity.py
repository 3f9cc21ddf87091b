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
from collections.abc import Sequence
from dataclasses import dataclass
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
_NUMERAL_START = frozenset("0123456789$€£¥v")
_MAYBE_IDENTIFIER = re.compile(r"[\d_.]")
_CAMEL = re.compile(r"[a-z][A-Z][a-z]|[a-z]{2}[A-Z]")
_DOTTED = re.compile(r"[a-z]{2,}\.[a-z]{2,}")
_NAME_PARTS = re.compile(r"[._/]")
"""Where dotted, snake_case and path names divide into parts."""
_SENTENCE_END = frozenset(".!?:;)")
_OPENERS = frozenset(" \t\r\n\"'“”‘’«»([{*-–—•")
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


def _starts_sentence(original: str, start: int, floor: int) -> bool:
    """True when only openers (spaces, quote marks, brackets) stand between a sentence end, a
    blank line or `floor` and `start` (a line break alone is only wrapping)."""
    position = start - 1
    breaks = 0
    while position >= floor and original[position] in _OPENERS:
        breaks += original[position] == "\n"
        position -= 1
    return position < floor or breaks >= 2 or original[position] in _SENTENCE_END


def _scan(norm: NormalisedText, lo: int, hi: int) -> tuple[list[str], list[tuple[int, int]]]:
    """The words of normalised [lo, hi) in their compared form, and their normalised spans.

    An ellipsis is the word "…"; "thirty-one" is read as "thirty one"."""
    matches = list(_TOKEN.finditer(norm.text, lo, hi))
    if "-" not in norm.text[lo:hi]:  # the common case, in one pass
        words = [canonical(m[2]) if m[2] is not None else _ELLIPSIS for m in matches]
        return words, [m.span() for m in matches]
    words = []
    spans: list[tuple[int, int]] = []
    for match in matches:
        a, b = match.span()
        text = match[2]
        if text is None:
            words.append(_ELLIPSIS)
            spans.append((a, b))
            continue
        parts = text.split("-")
        if len(parts) > 1 and all(number_word(part) is not None for part in parts):
            for part in parts:
                words.append(part)
                spans.append((a, a + len(part)))
                a += len(part) + 1
            continue
        words.append(canonical(text))
        spans.append((a, b))
    return words, spans


class _Side:
    """One side's words, with what the meaning check needs read lazily from the original text
    (most words are never looked at: only those in or next to a difference)."""

    def __init__(
        self,
        words: list[str],
        spans: list[tuple[int, int]],
        norm: NormalisedText,
        original: str,
        origin: int,
    ) -> None:
        """`origin`: the offset reported for an empty side at the very start."""
        self.words = words
        self.spans = spans
        self.norm = norm
        self.original = original
        self.origin = origin
        self.sense: dict[int, str] = {}
        """Words read as another (a typo of the source's word is read as that word)."""
        self._numeric: dict[int, bool] = {}

    def __len__(self) -> int:
        """How many words."""
        return len(self.words)

    def meaning(self, index: int) -> str:
        """The word its meaning is read from."""
        return self.sense.get(index, self.words[index])

    def bounds(self, index: int) -> tuple[int, int]:
        """The word's [start, end) in the original text."""
        a, b = self.spans[index]
        return int(self.norm.offsets[a]), int(self.norm.ends[b - 1])

    def raw(self, index: int) -> str:
        """The word as written (currency sign dropped)."""
        start, end = self.bounds(index)
        return self.original[start:end].lstrip("$€£¥")

    def acronym(self, index: int) -> bool:
        """Written in capitals (two letters or more)."""
        letters = [c for c in self.raw(index) if c.isalpha()]
        return len(letters) >= 2 and all(c.isupper() for c in letters)

    def loud(self, index: int) -> bool:
        """In a stretch written in capitals ("THERE IS NO WARRANTY"): capitals mark no name."""
        near = [i for i in (index - 2, index - 1, index + 1, index + 2) if 0 <= i < len(self)]
        return sum(self.acronym(i) for i in near) >= 2

    def entity(self, index: int) -> bool:
        """A name or identifier: capitalised mid-sentence (not a function word), an acronym, or
        an identifier (letters with digits, underscores, dotted or camelCase names)."""
        sense = self.meaning(index)
        if sense == _ELLIPSIS or self.numeric(index):
            return False
        if any(c.isdigit() for c in sense) or "_" in sense or _DOTTED.search(sense):
            return True
        raw = self.raw(index)
        if _CAMEL.search(raw):
            return True
        if sense in STOPWORDS or self.loud(index):
            return False
        if self.acronym(index):
            return True
        if not raw[:1].isupper():
            return False
        return not _starts_sentence(self.original, self.bounds(index)[0], 0)

    def may_name(self, indexes: range) -> bool:
        """False when no word in `indexes` can be a name or identifier (no capital, digit,
        underscore or dot): a cheap test before `entity`."""
        if not indexes:
            return False
        text = self.span(indexes.start, indexes.stop)[0]
        return text != text.lower() or _MAYBE_IDENTIFIER.search(text) is not None

    def numeric(self, index: int) -> bool:
        """Part of a number, date, amount or version."""
        known = self._numeric.get(index)
        if known is None:
            sense = self.meaning(index)
            known = _is_numeral(sense) or number_word(sense) is not None or self._month(index)
            self._numeric[index] = known
        return known

    def _month(self, index: int) -> bool:
        """A capitalised month name; "May" only next to a numeral (else it is the modal verb)."""
        sense = self.meaning(index)
        if sense not in MONTHS or not self.raw(index)[:1].isupper():
            return False
        if sense != "may":
            return True
        near = [i for i in (index - 1, index + 1) if 0 <= i < len(self)]
        return any(_is_numeral(self.meaning(i)) for i in near)

    def joins(self, index: int) -> bool:
        """A word that continues the number before it ("and" after a scale word as in "a hundred
        and five", but not in "five and six"; "per cent", "dollars")."""
        sense = self.meaning(index)
        if sense in CURRENCY_WORDS or sense in PERCENT_WORDS:
            return True
        if sense == "per":
            return index + 1 < len(self) and self.meaning(index + 1) == "cent"
        if sense == "cent":
            return index > 0 and self.meaning(index - 1) == "per"
        if sense == "and":
            return (
                0 < index < len(self) - 1
                and number_word(self.meaning(index + 1)) is not None
                and self.meaning(index - 1) in SCALES
            )
        return False

    def numbers(self, i1: int, i2: int) -> list[tuple[int, int, tuple[str, ...]]]:
        """The number phrases inside or touching words [i1, i2): (first, end, meaning)."""
        found: dict[tuple[int, int], tuple[str, ...]] = {}
        for index in range(max(0, i1 - 1), min(len(self), i2 + 1)):
            if not (self.numeric(index) or self.joins(index)):
                continue
            first = index
            while first > 0 and (self.numeric(first - 1) or self.joins(first - 1)):
                first -= 1
            while first < index and not self.numeric(first):
                first += 1
            if not self.numeric(first):
                continue
            end = first + 1
            while end < len(self) and (self.numeric(end) or self.joins(end)):
                end += 1
            if (first, end) not in found:
                found[first, end] = _number_key([self.meaning(i) for i in range(first, end)])
        return [(a, b, key) for (a, b), key in found.items()]

    def span(self, i1: int, i2: int) -> tuple[str, int, int]:
        """The text covered by words [i1, i2) and its offsets (an empty range: a position)."""
        if i2 > i1:
            start, end = self.bounds(i1)[0], self.bounds(i2 - 1)[1]
            return self.original[start:end], start, end
        if i1 > 0:
            at = self.bounds(i1 - 1)[1]
        elif self.words:
            at = self.bounds(0)[0]
        else:
            at = self.origin
        return "", at, at


def _special(word: str) -> bool:
    """True for a word whose change changes meaning by itself (number, negator, modal)."""
    return number_word(word) is not None or negations(word) > 0 or word in MODALS


def _negated(word: str, other: str) -> bool:
    """True when `word` is `other` negated: "never"/"ever", "neither"/"either", "don't"/"do"."""
    return (word.startswith("n") and word[1:] == other) or (
        word.endswith("n't") and word[:-3] == other
    )


def _is_typo(a: str, b: str) -> bool:
    """True when the quote's word `a` is a slip for the source's `b` (one letter apart, two from
    eight letters on). Never for numerals, nor when `a` is itself a number, negator or modal,
    nor when one word is the other negated ("either" for "neither"). In a dotted, snake_case or
    path name the allowance is per part, and only one part may slip: "config.yaml" is not a
    slip for "config.toml", though the whole names are two letters apart; names that differ only
    in their separators ("U.S." and "US") are the same name."""
    if any(c.isdigit() for c in a) or any(c.isdigit() for c in b):
        return False
    if _special(a) or _negated(a, b) or _negated(b, a):
        return False
    parts_a, parts_b = _NAME_PARTS.split(a), _NAME_PARTS.split(b)
    if len(parts_a) > 1 or len(parts_b) > 1:
        if "".join(parts_a) == "".join(parts_b):
            return True  # only the dots or underscores differ: "U.S." for "US", "e.g." for "eg"
        slips = [(x, y) for x, y in zip(parts_a, parts_b, strict=False) if x != y]
        return len(parts_a) == len(parts_b) and len(slips) == 1 and _is_typo(*slips[0])
    longest = max(len(a), len(b))
    if longest <= 2:  # two letters swapped ("ot" for "to"), never for a meaningful word
        return sorted(a) == sorted(b) and not _special(b)
    allowed = 1 if longest <= 7 else 2
    return OSA.distance(a, b, score_cutoff=allowed) <= allowed


# --- numbers ------------------------------------------------------------------------------------


def _is_numeral(word: str) -> bool:
    """Digits, with separators, a currency sign, a %, an ordinal or unit suffix, or a v prefix."""
    return word[:1] in _NUMERAL_START and _NUMERAL.fullmatch(word) is not None


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


def _number_key(senses: Sequence[str]) -> tuple[str, ...]:
    """What a number phrase means, as sorted parts: "four hundred" and "400" both ("400",)."""
    parts: list[str] = []
    total = current = 0.0
    pending = after_per = False

    def flush(ordinal: bool = False) -> None:
        """Close the run of number words read so far."""
        nonlocal total, current, pending
        if pending:
            value = total + current  # as a numeral writes it: 1000000, never 1e+06
            written = f"{value:.0f}" if value.is_integer() else f"{value:g}"
            parts.append(written + ("th" if ordinal else ""))
        total = current = 0.0
        pending = False

    for sense in senses:
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


# --- the comparison -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Block:
    """A stretch of differences: quote words [i1, i2) against source words [j1, j2)."""

    kind: Literal["change", "typo", "elided"]
    i1: int
    i2: int
    j1: int
    j2: int


def _blocks(quote: _Side, source: _Side) -> list[_Block]:
    """Differences from the word alignment: typo pairs and ellipsis gaps apart, the rest merged.

    A typo makes the quote's word read as the source's (`quote.sense`)."""
    pieces: list[_Block] = []
    for op in Levenshtein.opcodes(quote.words, source.words):
        tag, i1, i2, j1, j2 = op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end
        if tag == "equal":
            continue
        if tag == "replace":
            for k in range(i2 - i1):
                q, s = quote.words[i1 + k], source.words[j1 + k]
                if q == _ELLIPSIS:
                    kind: Literal["change", "typo", "elided"] = "elided"
                elif _is_typo(q, s):
                    kind = "typo"
                    quote.sense[i1 + k] = s
                else:
                    kind = "change"
                pieces.append(_Block(kind, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
        elif tag == "insert":  # in the source only
            pieces.append(_Block("change", i1, i1, j1, j2))
        else:  # in the quote only
            for k in range(i1, i2):
                kind = "elided" if quote.words[k] == _ELLIPSIS else "change"
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


def _widened(block: _Block, quote: _Side, source: _Side) -> tuple[int, int, int, int]:
    """A block with one shared neighbouring word when one side is empty ("shall not" -> "shall")."""
    i1, i2, j1, j2 = block.i1, block.i2, block.j1, block.j2
    if i1 == i2 or j1 == j2:
        if i1 > 0 and j1 > 0:
            return i1 - 1, i2, j1 - 1, j2
        if i2 < len(quote) and j2 < len(source):
            return i1, i2 + 1, j1, j2 + 1
    return i1, i2, j1, j2


def _change(
    kind: ChangeKind, quote: _Side, qi: tuple[int, int], source: _Side, sj: tuple[int, int]
) -> MeaningChange:
    """A meaning change covering quote words `qi` and source words `sj`."""
    q_text, q_start, q_end = quote.span(*qi)
    s_text, s_start, s_end = source.span(*sj)
    return MeaningChange(kind, s_text, q_text, q_start, q_end, s_start, s_end)


def _modals(side: _Side, indexes: range) -> list[str]:
    """The modal verbs among the words, by their base ("May" of a date is a month, not one)."""
    return [
        m for i in indexes if (m := MODALS.get(side.meaning(i))) is not None and not side.numeric(i)
    ]


def _meaning(block: _Block, quote: _Side, source: _Side) -> list[MeaningChange]:
    """The meaning changes one block of differences makes."""
    said = range(block.i1, block.i2)
    wrote = range(block.j1, block.j2)
    i1, i2, j1, j2 = _widened(block, quote, source)
    changes: list[MeaningChange] = []
    q_numbers = quote.numbers(block.i1, block.i2)
    s_numbers = source.numbers(block.j1, block.j2)
    if sorted(p[2] for p in q_numbers) != sorted(p[2] for p in s_numbers):
        qi = (min(p[0] for p in q_numbers), max(p[1] for p in q_numbers)) if q_numbers else None
        sj = (min(p[0] for p in s_numbers), max(p[1] for p in s_numbers)) if s_numbers else None
        changes.append(_change("number", quote, qi or (i1, i2), source, sj or (j1, j2)))
    q_neg = sum(negations(quote.meaning(i)) for i in said)
    if q_neg != sum(negations(source.meaning(j)) for j in wrote):
        changes.append(_change("negation", quote, (i1, i2), source, (j1, j2)))
    q_modals = sorted(_modals(quote, said))
    s_modals = sorted(_modals(source, wrote))
    if q_modals != s_modals:
        changes.append(_change("modality", quote, (i1, i2), source, (j1, j2)))
    q_names = (
        sorted(quote.meaning(i) for i in said if quote.entity(i)) if quote.may_name(said) else []
    )
    s_names = (
        sorted(source.meaning(j) for j in wrote if source.entity(j))
        if source.may_name(wrote)
        else []
    )
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
    words, spans = _scan(norm, start, end)
    if not quote or not words or (quote[0] == words[0] and quote[-1] == words[-1]):
        return words, spans  # the ends agree: nothing stands outside the span
    lead, trail = _edges(quote, words)
    if not (lead or trail):
        return words, spans
    left_words, left_spans = _scan(norm, max(0, start - _REACH), start) if lead else ([], [])
    if left_spans and left_spans[0][0] == max(0, start - _REACH) > 0:
        left_words, left_spans = left_words[1:], left_spans[1:]  # cut by the reach
    right_words, right_spans = _scan(norm, end, end + _REACH) if trail else ([], [])
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
    q_words, q_spans = _scan(quote_norm, 0, len(quote_norm.text))
    s_words, s_spans = _source_words(q_words, document_norm, start, end)
    if q_words == s_words:
        return Fidelity()
    origin = int(document_norm.offsets[start]) if start < len(document_norm.offsets) else 0
    quote_side = _Side(q_words, q_spans, quote_norm, quote, 0)
    source_side = _Side(s_words, s_spans, document_norm, document, origin)
    blocks = _blocks(quote_side, source_side)
    if not blocks:
        return Fidelity()
    edits = tuple(_edit(block, quote_side, source_side) for block in blocks)
    changes: list[MeaningChange] = []
    for block in blocks:
        if block.kind == "change":
            changes.extend(_meaning(block, quote_side, source_side))
    return Fidelity(edits, tuple(changes))
