"""Matching normalisation: Unicode NFC, case folded, typographic marks unified, spaces collapsed.

Text is first composed to NFC (so "crème" typed as e + combining grave matches "crème" typed
with "è"); each composed character remembers the original characters it came from. After that
each character maps to exactly one character (a case fold that would expand, like "ß" -> "ss",
is left alone), so every normalised character keeps the span of the original text it came from
and a match found in normalised text maps back to exact offsets in the original.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["NormalisedText", "fold", "normalise", "normalise_quote"]

_TYPOGRAPHIC = {
    "‘": "'",
    "’": "'",
    "‚": "'",
    "‛": "'",
    "′": "'",
    "“": '"',
    "”": '"',
    "„": '"',
    "‟": '"',
    "″": '"',
    "«": '"',
    "»": '"',
    "‐": "-",
    "‑": "-",
    "‒": "-",
    "–": "-",
    "—": "-",
    "―": "-",
    "−": "-",
}
_LAST_CASED = 0x1E944
"""Above this code point no character has a case (Adlam is the last cased script)."""
_SPACE_RUNS = re.compile(" {2,}")

_table: dict[int, int] | None = None
_table_lock = threading.Lock()


def _fold_table() -> dict[int, int]:
    """The one-to-one translation table, built once on first use (about 50 ms)."""
    global _table
    if _table is None:
        with _table_lock:
            if _table is None:
                table: dict[int, int] = {}
                for code in range(_LAST_CASED):
                    char = chr(code)
                    if char.isspace():
                        table[code] = 32
                        continue
                    folded = char.casefold()
                    if len(folded) == 1 and folded != char:
                        table[code] = ord(folded)
                for mark, plain in _TYPOGRAPHIC.items():
                    table[ord(mark)] = ord(plain)
                _table = table
    return _table


@dataclass(frozen=True, slots=True)
class NormalisedText:
    """A normalised text and, for each of its characters, the offset of the original character."""

    text: str
    offsets: NDArray[np.int64]
    """For each normalised character, where the original characters it came from start."""
    original_length: int
    ends: NDArray[np.int64]
    """For each normalised character, where the original characters it came from end."""

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map the normalised span [start, end) to the original text's [start, end)."""
        if end <= start:
            at = int(self.offsets[start]) if start < len(self.offsets) else self.original_length
            return at, at
        return int(self.offsets[start]), int(self.ends[end - 1])


def _composes(cluster: str, char: str) -> bool:
    """True when NFC joins `char` to the cluster before it (e.g. a base letter and its accent)."""
    if unicodedata.combining(char):
        return True
    if ord(char) < 0x300:  # no character below the combining marks composes with what precedes
        return False
    joined = unicodedata.normalize("NFC", cluster + char)
    apart = unicodedata.normalize("NFC", cluster) + unicodedata.normalize("NFC", char)
    return joined != apart


def nfc_with_offsets(text: str) -> tuple[str, NDArray[np.int64] | None, NDArray[np.int64] | None]:
    """The text in Unicode NFC, and for each of its characters the original [start, end) it came
    from (None, None when the text is already NFC: the offsets are then the identity)."""
    if unicodedata.is_normalized("NFC", text):
        return text, None, None
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    position, length = 0, len(text)
    while position < length:
        stop = position + 1
        while stop < length and _composes(text[position:stop], text[stop]):
            stop += 1
        composed = unicodedata.normalize("NFC", text[position:stop])
        pieces.append(composed)
        starts.extend([position] * len(composed))
        ends.extend([stop] * len(composed))
        position = stop
    return "".join(pieces), np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def normalise(text: str) -> NormalisedText:
    """Normalise a document, keeping the original span of every character."""
    composed, starts, ends = nfc_with_offsets(text)
    folded = composed.translate(_fold_table())
    codes = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    space = codes == 32
    keep = np.ones(len(codes), dtype=bool)
    keep[1:] = ~(space[1:] & space[:-1])
    kept_at = np.flatnonzero(keep).astype(np.int64)
    kept = codes[keep].tobytes().decode("utf-32-le", "surrogatepass")
    if starts is None or ends is None:
        return NormalisedText(kept, kept_at, len(text), kept_at + 1)
    return NormalisedText(kept, starts[kept_at], len(text), ends[kept_at])


def fold(text: str) -> NormalisedText:
    """Like `normalise` without collapsing whitespace (cheaper, for splitting into words)."""
    composed, starts, ends = nfc_with_offsets(text)
    folded = composed.translate(_fold_table())
    if starts is None or ends is None:
        at = np.arange(len(folded), dtype=np.int64)
        return NormalisedText(folded, at, len(text), at + 1)
    return NormalisedText(folded, starts, len(text), ends)


def normalise_quote(quote: str) -> str:
    """Normalise a quote the way documents are, and strip its ends."""
    composed = unicodedata.normalize("NFC", quote)
    return _SPACE_RUNS.sub(" ", composed.translate(_fold_table())).strip()
