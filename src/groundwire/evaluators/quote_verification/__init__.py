"""Quote verification (the VerifyQuotes algorithm): find where each quote comes from.

```python
from groundwire.evaluators import verify_quotes, quote_stats

rows = verify_quotes(["the quick brown fox"], {"story": "... The quick  brown fox ..."})
rows[0].source_doc, rows[0].span_text, rows[0].match_ratio, rows[0].low_confidence
```

An exact (whitespace- and case-insensitive) hit is found by substring search; other quotes go
through BM25 over overlapping windows and fuzzy trimming, then a word-by-word meaning check
(`rows[0].edits`, `rows[0].meaning_changes`, `rows[0].low_confidence_reason`): a changed number,
negation, modal verb or name is never verified. See docs/quote_verification.md.
"""

from __future__ import annotations

from groundwire.evaluators.quote_verification._changes import (
    ChangeKind,
    EditKind,
    MeaningChange,
    QuoteEdit,
)
from groundwire.evaluators.quote_verification._evaluator import LABELS, QuoteVerification
from groundwire.evaluators.quote_verification._export import (
    write_quotes_xlsx,
    write_stats_csv,
)
from groundwire.evaluators.quote_verification._rows import MatchKind, QuoteMatch
from groundwire.evaluators.quote_verification._stats import QuoteStats, quote_stats
from groundwire.evaluators.quote_verification._trim import TrimMethod
from groundwire.evaluators.quote_verification._verify import verify_quotes

__all__ = [
    "LABELS",
    "ChangeKind",
    "EditKind",
    "MatchKind",
    "MeaningChange",
    "QuoteEdit",
    "QuoteMatch",
    "QuoteStats",
    "QuoteVerification",
    "TrimMethod",
    "quote_stats",
    "verify_quotes",
    "write_quotes_xlsx",
    "write_stats_csv",
]
