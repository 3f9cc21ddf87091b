"""`QuoteVerification`: the per-turn evaluator (share of the answer's quotes found in contexts)."""

from __future__ import annotations

from typing import Any, Final, Unpack

from groundwire._types import RagTurn, Score
from groundwire.embeddings import DEFAULT_EMBEDDER, Embedder
from groundwire.evaluators.quote_verification._options import (
    OptionArgs,
    Options,
    signature_with_options,
)
from groundwire.evaluators.quote_verification._rows import QuoteMatch
from groundwire.evaluators.quote_verification._verify import verify_with
from groundwire.evaluators.quoted_spans import check_min_len, find_quotes

__all__ = ["LABELS", "QuoteVerification"]

LABELS: Final = ("all_verified", "some_unverified", "none_verified", "no_quotes")
"""Every label this evaluator gives (low-cardinality, safe as a metric attribute)."""

_SHOWN_MISSES = 2
"""Unverified quotes named in the explanation."""


def _documents(turn: RagTurn) -> dict[str, str]:
    """Contexts by id (doc_i when a context has none; a repeated id gets a #i suffix)."""
    documents: dict[str, str] = {}
    for index, context in enumerate(turn.contexts):
        name = context.id or f"doc_{index}"
        if name in documents:
            name = f"{name}#{index}"
        documents[name] = context.text
    return documents


def _short(text: str, limit: int = 60) -> str:
    """The text cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class QuoteVerification:
    """Locates each quote of the answer in the turn's contexts; the score is the verified share.

    Quotes are the answer's typographic quotations of at least `min_len` words; a quote is
    verified when its `match_ratio` reaches `min_fuzzy_ratio` and (with `meaning_check`, the
    default) it changes no number, negation, modal verb or name of its source. A turn without
    quotes is not applicable (label `no_quotes`). `details["quotes"]` holds one `verify_quotes`
    row per quote.
    """

    name: str = "quote_verification"

    def __init__(
        self,
        *,
        min_len: int = 3,
        embedder: Embedder | None = DEFAULT_EMBEDDER,
        **options: Unpack[OptionArgs],
    ) -> None:
        """Configure extraction and matching (`options`: those of `verify_quotes`, e.g.
        `cosine="fuzzy"`); bad options raise at once, naming the option."""
        self.min_len = check_min_len(min_len, "quote_verification: min_len")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise TypeError(
                "quote_verification: embedder must have an embed(texts) method or be None, "
                f"got {type(embedder).__name__}"
            )
        self.embedder = embedder
        self.options = Options.checked(where="quote_verification", **options)

    def evaluate(self, turn: RagTurn) -> Score:
        """Score one turn: verified quotes / quotes."""
        quotes = find_quotes(turn.answer, style="typographic", min_len=self.min_len)
        if not quotes:
            return Score.not_applicable(
                self.name, "no_quotes", f"the answer quotes no span of {self.min_len}+ words"
            )
        documents = list(_documents(turn).items())
        rows = verify_with([quote.text for quote in quotes], documents, self.embedder, self.options)
        verified = sum(row.verified for row in rows)
        details: list[dict[str, Any]] = []
        for quote, row in zip(quotes, rows, strict=True):
            details.append({**row.to_dict(), "answer_start": quote.start, "answer_end": quote.end})
        return Score(
            name=self.name,
            value=verified / len(rows),
            label=_label(verified, len(rows)),
            explanation=_explain(rows, verified, has_contexts=bool(turn.contexts)),
            details={"quotes": details, "n_quotes": len(rows), "n_verified": verified},
        )


QuoteVerification.__signature__ = signature_with_options(  # type: ignore[attr-defined]
    QuoteVerification.__init__, method=True
)


def _label(verified: int, total: int) -> str:
    """The score label for this many verified quotes out of total."""
    if verified == total:
        return "all_verified"
    return "none_verified" if verified == 0 else "some_unverified"


def _explain(rows: list[QuoteMatch], verified: int, *, has_contexts: bool) -> str:
    """One sentence: how many quotes were verified, and the first unverified ones (misquotes
    with what they changed)."""
    text = f"{verified} of {len(rows)} quotes verified in the contexts"
    if not has_contexts:
        return text + " (the turn has no contexts)"
    misses = [row for row in rows if row.low_confidence][:_SHOWN_MISSES]
    found = [f"“{_short(row.quote)}”" for row in misses if not row.meaning_changes]
    changed = [
        f"“{_short(row.quote)}” ({row.meaning_changes[0].describe()})"
        for row in misses
        if row.meaning_changes
    ]
    if found:
        text += "; not found: " + ", ".join(found)
    if changed:
        text += "; misquoted: " + ", ".join(changed)
    return text
