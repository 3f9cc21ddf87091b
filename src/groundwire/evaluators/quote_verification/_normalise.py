"""Matching normalisation: case folded, typographic marks unified, whitespace runs collapsed.

Each character maps to exactly one character (a case fold that would expand, like "ß" -> "ss",
is left alone), so every normalised character keeps the offset of the original one it came from
and a match found in normalised text maps back to exact offsets in the original.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["NormalisedText", "normalise", "normalise_quote"]

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
    original_length: int

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        """Map the normalised span [start, end) to the original text's [start, end)."""
        if end <= start:
            at = int(self.offsets[start]) if start < len(self.offsets) else self.original_length
            return at, at
        return int(self.offsets[start]), int(self.offsets[end - 1]) + 1


def normalise(text: str) -> NormalisedText:
    """Normalise a document, keeping the original offset of every character."""
    folded = text.translate(_fold_table())
    codes = np.frombuffer(folded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    space = codes == 32
    keep = np.ones(len(codes), dtype=bool)
    keep[1:] = ~(space[1:] & space[:-1])
    offsets = np.flatnonzero(keep).astype(np.int64)
    kept = codes[keep].tobytes().decode("utf-32-le", "surrogatepass")
    return NormalisedText(kept, offsets, len(text))


def normalise_quote(quote: str) -> str:
    """Normalise a quote the way documents are, and strip its ends."""
    return _SPACE_RUNS.sub(" ", quote.translate(_fold_table())).strip()
