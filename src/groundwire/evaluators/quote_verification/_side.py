"""One side of the meaning check (the quote or its source span): its words in compared form, and
what the check asks of a word (a number? a name? where was it written?), read lazily from the
original text."""

from __future__ import annotations

import re

from groundwire.evaluators.quote_verification._normalise import NormalisedText
from groundwire.evaluators.quote_verification._numbers import is_numeral, number_key
from groundwire.evaluators.quote_verification._words import (
    CURRENCY_WORDS,
    MONTHS,
    PERCENT_WORDS,
    SCALES,
    STOPWORDS,
    canonical,
    number_word,
)

__all__ = ["ELLIPSIS", "Side", "scan"]

_TOKEN = re.compile(r"(\.{3,}|…)|([$€£¥]?\w+(?:[-'.,:/]\w+)*%?)")
_MAYBE_IDENTIFIER = re.compile(r"[\d_.]")
_CAMEL = re.compile(r"[a-z][A-Z][a-z]|[a-z]{2}[A-Z]")
_DOTTED = re.compile(r"[a-z]{2,}\.[a-z]{2,}")
_SENTENCE_END = frozenset(".!?:;)")
_OPENERS = frozenset(" \t\r\n\"'“”‘’«»([{*-–—•")
ELLIPSIS = "…"


def _starts_sentence(original: str, start: int, floor: int) -> bool:
    """True when only openers (spaces, quote marks, brackets) stand between a sentence end, a
    blank line or `floor` and `start` (a line break alone is only wrapping)."""
    position = start - 1
    breaks = 0
    while position >= floor and original[position] in _OPENERS:
        breaks += original[position] == "\n"
        position -= 1
    return position < floor or breaks >= 2 or original[position] in _SENTENCE_END


def scan(norm: NormalisedText, lo: int, hi: int) -> tuple[list[str], list[tuple[int, int]]]:
    """The words of normalised [lo, hi) in their compared form, and their normalised spans.

    An ellipsis is the word "…"; "thirty-one" is read as "thirty one"."""
    matches = list(_TOKEN.finditer(norm.text, lo, hi))
    if "-" not in norm.text[lo:hi]:  # the common case, in one pass
        words = [canonical(m[2]) if m[2] is not None else ELLIPSIS for m in matches]
        return words, [m.span() for m in matches]
    words = []
    spans: list[tuple[int, int]] = []
    for match in matches:
        a, b = match.span()
        text = match[2]
        if text is None:
            words.append(ELLIPSIS)
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


class Side:
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
        if sense == ELLIPSIS or self.numeric(index):
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
        underscore or dot): a cheap test before `entity`, so it must never say False where
        `entity` would say True. `entity` counts every `isdigit()` character, which `\\d`
        misses for superscripts and subscripts ("x²", "H₂O"): those are looked for in
        non-ASCII text only."""
        if not indexes:
            return False
        text = self.span(indexes.start, indexes.stop)[0]
        if text != text.lower() or _MAYBE_IDENTIFIER.search(text) is not None:
            return True
        return not text.isascii() and any(c.isdigit() for c in text)

    def numeric(self, index: int) -> bool:
        """Part of a number, date, amount or version."""
        known = self._numeric.get(index)
        if known is None:
            sense = self.meaning(index)
            known = is_numeral(sense) or number_word(sense) is not None or self._month(index)
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
        return any(is_numeral(self.meaning(i)) for i in near)

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
                found[first, end] = number_key([self.meaning(i) for i in range(first, end)])
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
