"""The `quoted_spans` evaluator: the share of an answer's quotes found verbatim in its contexts.

`find_quotes` extracts quotes (Ragas' way or the typographic way) and is shared with the other
quote-based evaluators; `quoted_spans_alignment` is the batch score (a drop-in for Ragas 0.4.3's);
`QuotedSpans` scores one turn. See docs/quoted_spans.md.
"""

from __future__ import annotations

from groundwire.evaluators.quoted_spans._alignment import quoted_spans_alignment
from groundwire.evaluators.quoted_spans._evaluator import QuotedSpans
from groundwire.evaluators.quoted_spans._finder import Quote, QuoteStyle, check_min_len, find_quotes
from groundwire.evaluators.quoted_spans._matching import SpanMatch, match_spans

__all__ = [
    "Quote",
    "QuoteStyle",
    "QuotedSpans",
    "SpanMatch",
    "check_min_len",
    "find_quotes",
    "match_spans",
    "quoted_spans_alignment",
]
