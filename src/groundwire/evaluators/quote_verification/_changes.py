"""What the meaning check reports: `QuoteEdit` (one difference between a quote and its span),
`MeaningChange` (a difference that changes what the quote says) and `Fidelity` (both, for one
quote). Kept apart from the check itself (`_fidelity.py`) so that the rows and the package's
exports read them without the algorithm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "CHANGE_KINDS",
    "ChangeKind",
    "EditKind",
    "Fidelity",
    "MeaningChange",
    "QuoteEdit",
]

EditKind: TypeAlias = Literal["typo", "changed", "added", "dropped", "elided"]
"""One edit: a word with a typo, words replaced, words only in the quote, words only in the
source, or source words left out where the quote has an ellipsis."""
ChangeKind: TypeAlias = Literal["number", "negation", "modality", "entity"]
"""What a meaning-changing edit changed."""
CHANGE_KINDS: tuple[ChangeKind, ...] = ("number", "negation", "modality", "entity")


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
