"""The `quoted_spans` evaluator: the share of an answer's quotes found verbatim in its contexts.

`find_quotes` extracts quotes (Ragas' way or the typographic way) and is shared with the other
quote-based evaluators; see docs/quoted_spans.md.
"""

from __future__ import annotations

from groundwire.evaluators.quoted_spans._finder import Quote, QuoteStyle, find_quotes

__all__ = ["Quote", "QuoteStyle", "find_quotes"]
