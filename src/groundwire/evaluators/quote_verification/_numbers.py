"""Number phrases read for their value: "four hundred", "400" and "$1,200" are compared by what
they mean, not how they are written (the `number` kind of meaning change)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from groundwire.evaluators.quote_verification._words import (
    CURRENCY_WORDS,
    MONTHS,
    PERCENT_WORDS,
    SCALES,
    number_word,
)

__all__ = ["is_numeral", "number_key"]

_NUMERAL = re.compile(r"[$€£¥]?v?\d+(?:[.,:/-]\d+)*(?:%|[a-z]{1,3})?")
_ORDINAL_SUFFIX = re.compile(r"^(\d+)(?:st|nd|rd|th)$")
_NUMERAL_START = frozenset("0123456789$€£¥v")


def is_numeral(word: str) -> bool:
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


def number_key(senses: Sequence[str]) -> tuple[str, ...]:
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
        elif is_numeral(sense):
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
