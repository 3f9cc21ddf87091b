"""`quote_stats`: the card's aggregate statistics over the rows of `verify_quotes`."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from groundwire.evaluators.quote_verification._ellipsis import has_ellipsis
from groundwire.evaluators.quote_verification._rows import QuoteMatch

__all__ = ["QuoteStats", "quote_stats"]


@dataclass(frozen=True, slots=True)
class QuoteStats:
    """Aggregates over a list of rows; a mean/median/min/max is None when no row has the value."""

    n_quotes: int
    n_with_ellipses: int
    mean_bm25_score: float | None
    """Over rows that have one (exact hits need no BM25)."""
    median_bm25_score: float | None
    mean_bm25_ratio: float | None
    median_bm25_ratio: float | None
    mean_cosine: float | None
    median_cosine: float | None
    min_cosine: float | None
    max_cosine: float | None
    mean_match_ratio: float | None
    n_low_match_confidence: int
    mean_span_length: float | None
    """Mean characters of the located spans (rows where a span was found)."""

    def to_dict(self) -> dict[str, Any]:
        """The statistics as a dict, in the order above."""
        return asdict(self)


def _row(item: object, index: int) -> QuoteMatch:
    """A QuoteMatch from a row or its dict; the error names the index."""
    if isinstance(item, QuoteMatch):
        return item
    if isinstance(item, Mapping):
        try:
            return QuoteMatch(**item)
        except TypeError as error:
            raise TypeError(f"rows[{index}] is not a QuoteMatch dict: {error}") from None
    raise TypeError(
        f"rows[{index}] must be a QuoteMatch (or its to_dict()), got {type(item).__name__}"
    )


def _mean(values: list[float]) -> float | None:
    """The mean, or None for no values."""
    return statistics.fmean(values) if values else None


def _median(values: list[float]) -> float | None:
    """The median, or None for no values."""
    return float(statistics.median(values)) if values else None


def quote_stats(rows: Iterable[QuoteMatch | Mapping[str, Any]]) -> QuoteStats:
    """Summarise `verify_quotes` rows (QuoteMatch objects or their `to_dict()` form)."""
    checked = [_row(item, index) for index, item in enumerate(rows)]
    scores = [r.bm25_score for r in checked if r.bm25_score is not None]
    ratios = [r.bm25_ratio for r in checked if r.bm25_ratio is not None]
    cosines = [r.cosine_similarity for r in checked if r.cosine_similarity is not None]
    spans = [len(r.span_text) for r in checked if r.source_doc is not None]
    return QuoteStats(
        n_quotes=len(checked),
        n_with_ellipses=sum(has_ellipsis(r.quote) for r in checked),
        mean_bm25_score=_mean(scores),
        median_bm25_score=_median(scores),
        mean_bm25_ratio=_mean(ratios),
        median_bm25_ratio=_median(ratios),
        mean_cosine=_mean(cosines),
        median_cosine=_median(cosines),
        min_cosine=min(cosines) if cosines else None,
        max_cosine=max(cosines) if cosines else None,
        mean_match_ratio=_mean([r.match_ratio for r in checked]),
        n_low_match_confidence=sum(r.low_confidence for r in checked),
        mean_span_length=_mean([float(n) for n in spans]),
    )
