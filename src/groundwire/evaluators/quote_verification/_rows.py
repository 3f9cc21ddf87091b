"""`QuoteMatch`: one output row per quote (the card's output schema plus offsets and a flag)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final, Literal, TypeAlias

from groundwire.evaluators.quote_verification._changes import MeaningChange, QuoteEdit

__all__ = ["MatchKind", "QuoteMatch"]

MatchKind: TypeAlias = Literal["exact", "fuzzy", "ellipsis", "none"]
"""How the span was found: normalised substring hit, BM25 + trimming, head/tail of an ellipsis
quote, or not at all (no document shares a word with the quote)."""


@dataclass(frozen=True, slots=True)
class QuoteMatch:
    """Where one quote was found and how well it matches (one row of `verify_quotes`)."""

    quote: str
    """The quote as given."""
    source_doc: str | None
    """Name of the document the span is in (None when nothing was found)."""
    span_text: str
    """The located span, verbatim from the document."""
    context_window: str
    """The span with up to 300 characters of the document on each side."""
    bm25_score: float | None
    """BM25 score of the window the span came from (None for exact hits: no BM25 was needed)."""
    bm25_ratio: float | None
    """Best / (second-best + 1e-9) window score: how much the best window stands out."""
    global_start: int | None
    """Span start in the documents joined by a blank line ("\\n\\n"), in the given order."""
    global_end: int | None
    """Span end (exclusive) in the joined documents."""
    match_ratio: float
    """Normalised Indel similarity of quote and span after normalisation, 0..1 (1 = identical)."""
    cosine_similarity: float | None
    """Cosine of the quote's and the span's embeddings (None without an embedder)."""
    doc_start: int | None
    """Span start within `source_doc`."""
    doc_end: int | None
    """Span end (exclusive) within `source_doc`."""
    low_confidence: bool
    """True when the quote is not verified: `match_ratio` is below `min_fuzzy_ratio`, or the
    quote changes the source's meaning (see `meaning_changes`)."""
    match_kind: MatchKind
    """How the span was found: exact, fuzzy, ellipsis or none."""
    edits: tuple[QuoteEdit, ...] = ()
    """Word-level differences between the quote and the span (none for exact hits, and none
    when `match_ratio` is below `min_fuzzy_ratio`: the quote was not found)."""
    meaning_changes: tuple[MeaningChange, ...] = ()
    """The edits that change what the quote says (number, negation, modality, entity)."""
    low_confidence_reason: str | None = None
    """Why the quote is not verified ("number changed: 'four hundred' -> 'four'"); None when
    it is."""

    @property
    def verified(self) -> bool:
        """True when the quote was found with enough confidence and changes no meaning."""
        return not self.low_confidence

    def to_dict(self) -> dict[str, Any]:
        """The row as a JSON-serialisable dict (field order as above; edits as lists of dicts).

        What `dataclasses.asdict` gives, built field by field: asdict's recursive deep copy was
        a tenth of the evaluator's time a turn (every other field is a str, number or None)."""
        data = {name: getattr(self, name) for name in _ROW_FIELDS}
        data["edits"] = [_as_dict(edit, _EDIT_FIELDS) for edit in self.edits]
        data["meaning_changes"] = [_as_dict(c, _CHANGE_FIELDS) for c in self.meaning_changes]
        return data


def _as_dict(item: object, names: tuple[str, ...]) -> dict[str, Any]:
    """A dataclass of scalar fields as a dict, in field order."""
    return {name: getattr(item, name) for name in names}


_ROW_FIELDS: Final = tuple(field.name for field in fields(QuoteMatch))
_EDIT_FIELDS: Final = tuple(field.name for field in fields(QuoteEdit))
_CHANGE_FIELDS: Final = tuple(field.name for field in fields(MeaningChange))
