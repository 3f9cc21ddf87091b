"""The document set: validated, normalised once, searchable for exact hits, windowed on demand."""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TypeAlias

import numpy as np

from groundwire.evaluators.quote_verification._bm25 import DocumentTokens, WindowIndex
from groundwire.evaluators.quote_verification._normalise import NormalisedText, normalise
from groundwire.evaluators.quote_verification._trim import is_word
from groundwire.evaluators.quote_verification._windows import Window, make_windows

__all__ = ["DOC_SEPARATOR", "Corpus", "Documents", "coerce_documents", "find_whole"]

Documents: TypeAlias = Mapping[str, str] | Sequence[str]
"""Documents by name, or a list (named doc_0, doc_1, ...)."""

DOC_SEPARATOR = "\n\n"
"""What `global_start`/`global_end` assume between consecutive documents."""
_NORMALISED_SEPARATOR = "\n"
"""Never occurs in normalised text or quotes (whitespace becomes a space), so no hit crosses it."""
_UNSPACED_SCRIPTS = ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN")
"""Scripts written without spaces between words: any character boundary may be a word edge."""


@lru_cache(maxsize=4096)
def _in_word(char: str) -> bool:
    """True for a character of a space-separated word (a letter or digit of Latin, Cyrillic...)."""
    if not is_word(char):
        return False
    return not unicodedata.name(char, "").startswith(_UNSPACED_SCRIPTS)


def _cuts_a_word(text: str, start: int, end: int, open_start: bool, open_end: bool) -> bool:
    """True when text[start:end] begins or ends inside a word: "grew 5" in "grew 50%" (an open
    side is an ellipsis side, where the quote may stop anywhere)."""
    if not open_start and start > 0 and _in_word(text[start]) and _in_word(text[start - 1]):
        return True
    return not open_end and end < len(text) and _in_word(text[end - 1]) and _in_word(text[end])


def find_whole(
    text: str, needle: str, start: int = 0, *, open_start: bool = False, open_end: bool = False
) -> int:
    """The first position >= `start` where `needle` stands in `text` without cutting a word, or -1.

    A quote that stops inside a word of the source is not that word: "revenue grew 5" is not in
    "revenue grew 50%", so it must not count as a verbatim hit (the number changed). The side of
    an ellipsis part that faces the ellipsis is `open`: "gam...ma" may cut "gamma"."""
    position = text.find(needle, start)
    while position >= 0 and _cuts_a_word(
        text, position, position + len(needle), open_start, open_end
    ):
        position = text.find(needle, position + 1)
    return position


def coerce_documents(documents: object) -> list[tuple[str, str]]:
    """(name, text) pairs from a mapping or a list; a clear TypeError names a bad item."""
    if isinstance(documents, Mapping):
        pairs: list[tuple[str, str]] = []
        for name, text in documents.items():
            if not isinstance(name, str):
                raise TypeError(f"documents: keys must be str names, got {type(name).__name__}")
            if not isinstance(text, str):
                raise TypeError(f"documents[{name!r}] must be a str, got {type(text).__name__}")
            pairs.append((name, text))
        return pairs
    if isinstance(documents, str | bytes) or not isinstance(documents, Sequence):
        raise TypeError(
            "documents must be a mapping of name -> text or a list of texts, "
            f"got {type(documents).__name__}"
        )
    for index, text in enumerate(documents):
        if not isinstance(text, str):
            raise TypeError(f"documents[{index}] must be a str, got {type(text).__name__}")
    return [(f"doc_{index}", text) for index, text in enumerate(documents)]


class Corpus:
    """Documents normalised once; exact search over all of them; BM25 windows built lazily."""

    def __init__(self, named: Sequence[tuple[str, str]]) -> None:
        """Normalise every document and lay out the global (joined with blank lines) offsets."""
        self.names = [name for name, _ in named]
        self.texts = [text for _, text in named]
        self.norms: list[NormalisedText] = [normalise(text) for text in self.texts]
        self._joined = _NORMALISED_SEPARATOR.join(norm.text for norm in self.norms)
        self._joined_starts: list[int] = []
        self.global_starts: list[int] = []
        joined_at = global_at = 0
        for norm, text in zip(self.norms, self.texts, strict=True):
            self._joined_starts.append(joined_at)
            self.global_starts.append(global_at)
            joined_at += len(norm.text) + len(_NORMALISED_SEPARATOR)
            global_at += len(text) + len(DOC_SEPARATOR)
        self._indexes: dict[tuple[int, int, float, float], tuple[list[Window], WindowIndex]] = {}

    def _locate(self, position: int) -> int:
        """The document a position of the joined normalised text falls in."""
        return bisect.bisect_right(self._joined_starts, position) - 1

    def find_exact(
        self, quote: str, limit: int = 1, *, open_start: bool = False, open_end: bool = False
    ) -> list[tuple[int, int, int]]:
        """Up to `limit` occurrences of a normalised quote that cut no word (but on an `open`,
        ellipsis side): (doc, start, end) in normalised text."""
        hits: list[tuple[int, int, int]] = []
        if not quote:
            return hits
        sides = {"open_start": open_start, "open_end": open_end}
        position = find_whole(self._joined, quote, **sides)
        while position >= 0 and len(hits) < limit:
            doc = self._locate(position)
            start = position - self._joined_starts[doc]
            hits.append((doc, start, start + len(quote)))
            position = find_whole(self._joined, quote, position + 1, **sides)
        return hits

    def find_verbatim(self, quote: str, first: tuple[int, int, int]) -> tuple[int, int, int] | None:
        """Where the quote stands verbatim (doc, normalised start, end), preferring `first` (the
        first normalised hit); None when no document has it verbatim."""
        doc, start, end = first
        norm = self.norms[doc]
        lo, hi = norm.to_original(start, end)
        if self.texts[doc][lo:hi] == quote:
            return first
        for index, text in enumerate(self.texts):
            position = find_whole(text, quote)
            if position >= 0:
                offsets = self.norms[index].offsets
                n_start = int(np.searchsorted(offsets, position, side="left"))
                n_end = int(np.searchsorted(offsets, position + len(quote), side="left"))
                return index, n_start, n_end
        return None

    def index(
        self, size: int, overlap: int, k1: float, b: float
    ) -> tuple[list[Window], WindowIndex]:
        """The windows and their BM25 index for these settings, built on first request."""
        key = (size, overlap, k1, b)
        built = self._indexes.get(key)
        if built is None:
            windows = make_windows([len(norm.text) for norm in self.norms], size, overlap)
            documents = [DocumentTokens(norm.text) for norm in self.norms]
            tokens = [documents[w.doc].window(w.start, w.end) for w in windows]
            built = (windows, WindowIndex(tokens, k1=k1, b=b))
            self._indexes[key] = built
        return built
