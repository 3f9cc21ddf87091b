"""`QuotedSpans`: the per-turn evaluator (registry name `quoted_spans`).

    value = matched / total    over the answer's quoted spans of at least `min_len` words

A turn whose answer quotes nothing scores None (label `no_quotes`), not 0.0: it did not misquote.
"""

from __future__ import annotations

from typing import Any, Final

from groundwire._types import RagTurn, Score
from groundwire.evaluators.quoted_spans._finder import QUOTE_STYLES, QuoteStyle, check_min_len
from groundwire.evaluators.quoted_spans._matching import SpanMatch, match_spans

__all__ = ["LABELS", "QuotedSpans"]

LABELS: Final = ("all_matched", "some_unmatched", "none_matched", "no_quotes")
"""Every label this evaluator gives (low-cardinality, safe as a metric attribute)."""


class QuotedSpans:
    """Scores a turn by the share of its answer's quoted spans found verbatim in its contexts."""

    name: str = "quoted_spans"

    def __init__(
        self,
        *,
        casefold: bool = True,
        min_len: int = 3,
        quote_style: QuoteStyle = "typographic",
        normalize_unicode: bool = False,
    ) -> None:
        """Configure matching; bad options raise at once, naming the option.

        `normalize_unicode` compares Unicode NFC forms in Ragas style (the typographic style
        always does); off by default, for parity with Ragas."""
        for option, value in (("casefold", casefold), ("normalize_unicode", normalize_unicode)):
            if not isinstance(value, bool):
                raise TypeError(
                    f"quoted_spans: {option} must be a bool, got {type(value).__name__}"
                )
        check_min_len(min_len, "quoted_spans: min_len")
        if quote_style not in QUOTE_STYLES:
            styles = list(QUOTE_STYLES)
            raise ValueError(
                f"quoted_spans: quote_style must be one of {styles}, got {quote_style!r}"
            )
        self.casefold = casefold
        self.min_len = min_len
        self.quote_style: QuoteStyle = quote_style
        self.normalize_unicode = normalize_unicode

    def __repr__(self) -> str:
        """The evaluator with its options, as it would be constructed."""
        unicode = ", normalize_unicode=True" if self.normalize_unicode else ""
        return (
            f"QuotedSpans(casefold={self.casefold}, min_len={self.min_len}, "
            f"quote_style={self.quote_style!r}{unicode})"
        )

    def evaluate(self, turn: RagTurn) -> Score:
        """Score one turn; details list every span, whether it matched and in which context."""
        spans = match_spans(
            turn.answer,
            turn.context_texts,
            casefold=self.casefold,
            min_len=self.min_len,
            style=self.quote_style,
            normalize_unicode=self.normalize_unicode,
        )
        if not spans:
            return Score.not_applicable(
                self.name, "no_quotes", f"The answer quotes no span of {self._words}."
            )
        matched = sum(span.matched for span in spans)
        total = len(spans)
        label = (
            "all_matched"
            if matched == total
            else "none_matched"
            if matched == 0
            else "some_unmatched"
        )
        where = "the contexts" if turn.contexts else "the contexts (the turn has none)"
        return Score(
            name=self.name,
            value=matched / total,
            label=label,
            explanation=f"{matched} of {total} quoted spans of {self._words} occur in {where}.",
            details={
                "quote_style": self.quote_style,
                "matched": matched,
                "total": total,
                "spans": [_span_row(span) for span in spans],
            },
        )

    @property
    def _words(self) -> str:
        """'at least N words', for explanations."""
        return f"at least {self.min_len} word{'' if self.min_len == 1 else 's'}"


def _span_row(span: SpanMatch) -> dict[str, Any]:
    """One span as a JSON-ready row of `Score.details["spans"]`."""
    return {
        "text": span.quote.text,
        "start": span.quote.start,
        "end": span.quote.end,
        "matched": span.matched,
        "context_index": span.context_index,
    }
