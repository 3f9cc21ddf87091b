"""`citation_support`: are the answer's citations true? Citation precision by a strict LLM audit.

1. Claims: the answer is split into atomic claims by an LLM (one fact per claim), each keeping
   its citation markers and quotes.
2. Pairs: each claim's citations are resolved to context spans: `[n]`, `[n, m]` and `[^n]`
   markers to the n-th context (1-based by default, `index_base`), quoted text to where
   `verify_quotes` finds it (the span with up to 300 characters around it). A marker past the
   last context, a quote found nowhere, or a quote that changes its source's meaning (a number,
   negation, modal verb or name: `quote_misquoted`), is a pair that is `not_supported` with no
   LLM call.
3. Audit: each (claim, span) pair is audited strictly (`audit_citation`); a claim's verdict is
   the best of its pairs' verdicts. A supporting phrase not found verbatim in the span is
   checked the way quotes are (`verify_quotes`, Unicode NFC, case, quote marks, typos): one that
   matches and changes no meaning is in the span (the `phrase_not_in_span` cap is lifted); one
   that changes a number, negation, modal verb or name keeps the cap, and a flag names the change
   (`phrase_number_changed`, ...).

    score = fully supported cited claims / cited claims        (citation precision)

`details` has every claim and pair, and the partial, not-supported and uncited shares (uncited
over all claims; the others over cited claims). An answer with no marker and no quote is not
applicable (`no_citations`) and costs no LLM call.

Step 2 (resolving citations) is `evaluators/_citations.py`; this module splits, audits and counts.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field, replace
from typing import Any, Final

from groundwire import semconv
from groundwire._types import RagTurn, Score
from groundwire.evaluators._citations import (
    FLAG_OUT_OF_RANGE,
    FLAG_QUOTE_MISQUOTED,
    FLAG_QUOTE_NOT_FOUND,
    Citation,
    QuoteStyle,
    has_citations,
    resolve_citations,
)
from groundwire.judges import (
    CITATION_PROMPT_HASH,
    FLAG_PASSES_DISAGREE,
    FLAG_PHRASE_NOT_IN_SPAN,
    VERDICT_ORDER,
    CitationVerdict,
    JudgeClient,
    JudgeConfig,
    JudgeError,
    Usage,
    aaudit_citation,
    audit_citation,
    audit_pair,
    resolve_judge,
    skipped_score,
    split_claims,
)

__all__ = [
    "FLAG_OUT_OF_RANGE",
    "FLAG_QUOTE_MISQUOTED",
    "FLAG_QUOTE_NOT_FOUND",
    "Citation",
    "CitationSupport",
    "CitationVerdict",
    "aaudit_citation",
    "audit_citation",
    "has_citations",
    "recheck_phrase",
    "resolve_citations",
]

SPAN_PREVIEW_CHARS: Final = 500
"""Characters of each audited span kept in `details` (spans can be whole documents)."""


def recheck_phrase(audited: CitationVerdict, span: str) -> CitationVerdict:
    """The `phrase_not_in_span` check redone the way quotes are verified.

    A supporting phrase that is not verbatim in the span but that `verify_quotes` verifies there
    (it differs only in Unicode form, case, quote marks, spacing or typos, and changes no
    meaning) counts as in the span: the flag goes and the judge's verdict stands (unless two
    stricter passes disagreed). A phrase that changes a number, negation, modal verb or name
    keeps the flag and the cap, plus one `phrase_<kind>_changed` flag per kind of change."""
    phrase = audited.supporting_phrase
    if FLAG_PHRASE_NOT_IN_SPAN not in audited.flags or not phrase.strip() or not span.strip():
        return audited
    from groundwire.evaluators.quote_verification import verify_quotes

    (row,) = verify_quotes([phrase], {"span": span}, embedder=None)
    if row.verified:
        flags = tuple(flag for flag in audited.flags if flag != FLAG_PHRASE_NOT_IN_SPAN)
        verdict = audited.verdict
        if FLAG_PASSES_DISAGREE not in audited.flags:
            verdict = audited.judge_verdict
        return replace(audited, verdict=verdict, phrase_in_span=True, flags=flags)
    kinds = dict.fromkeys(f"phrase_{change.kind}_changed" for change in row.meaning_changes)
    return replace(audited, flags=(*audited.flags, *kinds))


def _label(value: float) -> str:
    """The score label for a value."""
    if value >= 1.0:
        return "supported"
    return "unsupported" if value <= 0.0 else "partially_supported"


class CitationSupport:
    """Citation precision: the share of cited claims that their citations fully support.

    Judge options (`model`, `base_url`, ...) are those of `JudgeConfig` and fall back to the
    environment; with no judge configured the score is skipped.
    """

    name: str = "citation_support"

    def __init__(
        self,
        *,
        judge: JudgeClient | JudgeConfig | None = None,
        index_base: int = 1,
        stricter: bool = False,
        quote_style: QuoteStyle = "typographic",
        min_quote_words: int = 3,
        max_retries: int = 3,
        **judge_options: Any,
    ) -> None:
        for option, value, low in (
            ("index_base", index_base, 0),
            ("min_quote_words", min_quote_words, 1),
            ("max_retries", max_retries, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"CitationSupport: {option} must be an integer >= {low}, got {value!r}"
                )
        if quote_style not in ("typographic", "ragas"):
            raise ValueError(
                "CitationSupport: quote_style must be 'typographic' or 'ragas', "
                f"got {quote_style!r}"
            )
        self.index_base = index_base
        self.stricter = stricter
        self.quote_style: QuoteStyle = quote_style
        self.min_quote_words = min_quote_words
        self.max_retries = max_retries
        self.judge = resolve_judge(judge, **judge_options)

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Split, resolve, audit, aggregate."""
        judge = self.judge
        if judge is None:
            return skipped_score(self.name)
        answer = turn.answer
        if not has_citations(answer, quote_style=self.quote_style, min_words=self.min_quote_words):
            return Score(
                name=self.name,
                value=None,
                label="no_citations",
                explanation="The answer has no citation marker and no quote.",
                details={"uncited_share": 1.0 if answer.strip() else None},
            )
        claims, asked = await split_claims(judge, answer, attempts=self.max_retries)
        usage = asked.usage
        if asked.value is None:
            return Score(
                name=self.name,
                value=math.nan,
                label="error",
                error=f"JudgeError: could not split the answer into claims: {asked.error}",
                usage=usage.as_dict(),
            )
        contexts = turn.context_texts
        resolved = await asyncio.to_thread(
            lambda: [
                resolve_citations(
                    claim,
                    contexts,
                    index_base=self.index_base,
                    quote_style=self.quote_style,
                    min_quote_words=self.min_quote_words,
                )
                for claim in claims
            ]
        )
        audits = await asyncio.gather(
            *(
                self._audit(judge, claim, citation)
                for claim, citations in zip(claims, resolved, strict=True)
                for citation in citations
            )
        )
        usage = sum((audit.usage for audit in audits if isinstance(audit, CitationVerdict)), usage)
        usage = sum((a.usage for a in audits if isinstance(a, JudgeError)), usage)
        return self._aggregate(judge, claims, resolved, list(audits), usage)

    async def _audit(
        self, judge: JudgeClient, claim: str, citation: Citation
    ) -> CitationVerdict | JudgeError:
        """Audit one pair (an unresolved citation is not supported, no call); errors returned."""
        if citation.problem is not None:
            basis = f"The citation {citation.ref} could not be resolved ({citation.problem})."
            if citation.reason is not None:
                basis = f"The quote {citation.ref} misquotes its source ({citation.reason})."
            return CitationVerdict(
                verdict="not_supported",
                supporting_phrase="",
                missing=claim,
                basis=basis,
                judge_verdict="not_supported",
                phrase_in_span=False,
                flags=(citation.problem,),
                passes=0,
            )
        try:
            audited = await audit_pair(
                judge, claim, citation.span, stricter=self.stricter, attempts=self.max_retries
            )
        except JudgeError as error:
            return error
        return await asyncio.to_thread(recheck_phrase, audited, citation.span)

    def _aggregate(
        self,
        judge: JudgeClient,
        claims: list[str],
        resolved: list[list[Citation]],
        audits: list[CitationVerdict | JudgeError],
        usage: Usage,
    ) -> Score:
        """Per-claim verdicts (best of its pairs), shares, and the score."""
        tally = _tally(claims, resolved, audits)
        details = tally.details(judge.model)
        counts, n_judged = tally.counts, tally.judged
        if n_judged == 0:
            if tally.errors:
                return Score(
                    name=self.name,
                    value=math.nan,
                    label="error",
                    error="JudgeError: no citation could be audited ("
                    + "; ".join(tally.errors)
                    + ")",
                    details=details,
                    usage=usage.as_dict(),
                )
            return Score(
                name=self.name,
                value=None,
                label="no_citations",
                explanation="No claim of the answer carries a citation.",
                details=details,
                usage=usage.as_dict(),
            )
        value = counts["fully_supported"] / n_judged
        return Score(
            name=self.name,
            value=value,
            label=_label(value),
            explanation=(
                f"{counts['fully_supported']} of {n_judged} cited claims fully supported, "
                f"{counts['partially_supported']} partially, {counts['not_supported']} not; "
                f"{tally.uncited} of {len(claims)} claims uncited."
            ),
            details=details,
            usage=usage.as_dict(),
        )


@dataclass
class _Tally:
    """The audits of one answer laid out per pair and per claim, and the verdicts counted."""

    pairs: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(VERDICT_ORDER, 0))

    @property
    def judged(self) -> int:
        """Cited claims with a verdict (the denominator of every share but `uncited_share`)."""
        return sum(self.counts.values())

    @property
    def uncited(self) -> int:
        """Claims without a citation."""
        return sum(1 for row in self.claims if row["verdict"] == "uncited")

    def details(self, model: str) -> dict[str, Any]:
        """The score's `details`: every claim and pair, the counts and the shares."""
        n_claims, n_uncited, n_judged = len(self.claims), self.uncited, self.judged
        details: dict[str, Any] = {
            "claims": self.claims,
            "pairs": self.pairs,
            "n_claims": n_claims,
            "n_cited": n_claims - n_uncited,
            "n_uncited": n_uncited,
            "uncited_share": n_uncited / n_claims if n_claims else None,
            "fully_supported_share": _share(self.counts["fully_supported"], n_judged),
            "partial_share": _share(self.counts["partially_supported"], n_judged),
            "not_supported_share": _share(self.counts["not_supported"], n_judged),
            semconv.DETAIL_JUDGE_MODEL: model,
            semconv.DETAIL_PROMPT_VERSION: CITATION_PROMPT_HASH,
        }
        if self.errors:
            details["errors"] = self.errors
        return details


def _share(count: int, total: int) -> float | None:
    """count / total, None when there is nothing to share."""
    return count / total if total else None


def _tally(
    claims: list[str], resolved: list[list[Citation]], audits: list[CitationVerdict | JudgeError]
) -> _Tally:
    """One row per (claim, citation) pair in audit order; a claim's verdict is the best of its
    pairs' ("uncited" without citations, "error" when every audit of it failed)."""
    tally = _Tally()
    results = iter(audits)
    for index, (claim, citations) in enumerate(zip(claims, resolved, strict=True)):
        best: str | None = None
        for citation in citations:
            audit = next(results)
            row: dict[str, Any] = {
                "claim_index": index,
                "claim": claim,
                "citation": citation.ref,
                "kind": citation.kind,
                "context_index": citation.context_index,
                "span": citation.span[:SPAN_PREVIEW_CHARS],
            }
            if isinstance(audit, JudgeError):
                row.update(verdict=None, error=str(audit))
                tally.errors.append(f"claim {index} {citation.ref}: {audit}")
            else:
                row.update(audit.to_dict())
                if best is None or VERDICT_ORDER[audit.verdict] > VERDICT_ORDER[best]:
                    best = audit.verdict
            tally.pairs.append(row)
        if citations and best is not None:
            tally.counts[best] += 1
        verdict = best if citations else "uncited"
        if citations and best is None:
            verdict = "error"
        refs = [c.ref for c in citations]
        tally.claims.append({"claim": claim, "citations": refs, "verdict": verdict})
    return tally
