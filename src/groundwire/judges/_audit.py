"""The strict per-citation audit: does a cited span support a claim? (`audit_citation`)

The judge returns a verdict, a supporting phrase, what is missing and a one-sentence basis. We
then check the judge's work: the supporting phrase must occur in the span (after whitespace
normalisation); when it does not, the pair is flagged `phrase_not_in_span` and the verdict is
capped at `partially_supported`. In `stricter` mode the audit runs twice (the second time with
the span shown before the claim) and the stricter verdict is kept.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final

from groundwire._sync import sync_form
from groundwire.judges._attempts import ask_until_valid
from groundwire.judges._client import JudgeCallError, JudgeClient, Usage
from groundwire.judges._config import JudgeConfig
from groundwire.judges._delimit import restore
from groundwire.judges._prompts import AUDIT_PROMPT_VERSION, AuditReply, Verdict, audit_messages
from groundwire.judges._resolve import JudgeNotConfiguredError, resolve_judge

__all__ = [
    "FLAG_PASSES_DISAGREE",
    "FLAG_PHRASE_NOT_IN_SPAN",
    "VERDICT_ORDER",
    "CitationVerdict",
    "aaudit_citation",
    "audit_citation",
    "audit_pair",
    "phrase_in_span",
]

VERDICT_ORDER: Final[dict[str, int]] = {
    "not_supported": 0,
    "partially_supported": 1,
    "fully_supported": 2,
}
"""Verdicts from strictest to most lenient."""
FLAG_PHRASE_NOT_IN_SPAN: Final = "phrase_not_in_span"
"""The judge's supporting phrase is not in the span: the verdict was capped at partial."""
FLAG_PASSES_DISAGREE: Final = "passes_disagree"
"""Stricter mode: the two audit passes gave different verdicts (the stricter one is kept)."""


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    """The audited verdict of one (claim, cited span) pair."""

    verdict: Verdict
    """After our checks: `fully_supported`, `partially_supported` or `not_supported`."""
    supporting_phrase: str
    missing: str
    basis: str
    judge_verdict: Verdict
    """What the judge said before the phrase check (differs from `verdict` when capped)."""
    phrase_in_span: bool
    flags: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    passes: int = 1

    @property
    def supported(self) -> bool:
        """True when fully supported."""
        return self.verdict == "fully_supported"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (usage as `{"input": n, "output": m}`)."""
        data = asdict(self)
        data["flags"] = list(self.flags)
        data["usage"] = self.usage.as_dict()
        return data


def _normalise(text: str) -> str:
    """Collapse runs of whitespace to one space and strip."""
    return " ".join(text.split())


def phrase_in_span(phrase: str, span: str) -> bool:
    """True when `phrase` is non-empty and occurs in `span` once whitespace is collapsed."""
    needle = _normalise(phrase)
    return bool(needle) and needle in _normalise(span)


def _checked(reply: AuditReply, span: str) -> CitationVerdict:
    """Apply the phrase-in-span check to one judge reply (capping the verdict if needed); its
    usage is set by `audit_pair`, which sums every pass."""
    phrase = restore(reply.supporting_phrase)
    found = phrase_in_span(phrase, span)
    verdict: Verdict = reply.verdict
    flags: list[str] = []
    if not found and (reply.verdict != "not_supported" or _normalise(phrase)):
        flags.append(FLAG_PHRASE_NOT_IN_SPAN)
        if verdict == "fully_supported":
            verdict = "partially_supported"
    return CitationVerdict(
        verdict=verdict,
        supporting_phrase=phrase,
        missing=restore(reply.missing),
        basis=reply.basis,
        judge_verdict=reply.verdict,
        phrase_in_span=found,
        flags=tuple(flags),
    )


async def audit_pair(
    judge: JudgeClient, claim: str, span: str, *, stricter: bool, attempts: int
) -> CitationVerdict:
    """Audit one pair with `judge` (twice, span first the second time, when `stricter`; up to
    `attempts` asks a pass); raises `JudgeCallError` when no valid verdict came back."""
    runs: list[CitationVerdict] = []
    usage = Usage()
    for span_first in (False, True) if stricter else (False,):
        asked = await ask_until_valid(
            judge,
            AuditReply,
            audit_messages(claim, span, span_first=span_first),
            prompt_version=AUDIT_PROMPT_VERSION + ("/span_first" if span_first else ""),
            inputs={"claim": claim, "span": span},
            attempts=attempts,
        )
        usage = usage + asked.usage
        if asked.value is None:
            raise JudgeCallError(f"citation audit failed: {asked.error}", usage)
        runs.append(_checked(asked.value, span))
    kept = min(runs, key=lambda run: VERDICT_ORDER[run.verdict])  # first of the strictest
    flags = kept.flags
    if len({run.verdict for run in runs}) > 1:
        flags = (*flags, FLAG_PASSES_DISAGREE)
    return replace(kept, flags=flags, usage=usage, passes=len(runs))


async def aaudit_citation(
    claim: str,
    cited_span: str,
    *,
    judge: JudgeClient | JudgeConfig | None = None,
    stricter: bool = False,
    attempts: int = 3,
    **judge_options: Any,
) -> CitationVerdict:
    """Audit whether `cited_span` supports `claim` (async). Judge options as `JudgeConfig`.

    Raises `JudgeNotConfiguredError` with no judge and `JudgeCallError` when the judge fails.
    """
    for name, value in (("claim", claim), ("cited_span", cited_span)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"audit_citation: {name} must be a non-empty string, got {value!r}")
    client = resolve_judge(judge, **judge_options)
    if client is None:
        raise JudgeNotConfiguredError()
    return await audit_pair(client, claim, cited_span, stricter=stricter, attempts=attempts)


audit_citation = sync_form(
    aaudit_citation,
    """Audit whether `cited_span` supports `claim`: verdict, supporting phrase, missing, basis.

    Sync form of `aaudit_citation`, same arguments (safe to call from inside a running event
    loop's thread).
    """,
)
