"""`groundedness`: is the answer backed by the retrieved contexts? Two LLM judges, two angles.

Judge A asks whether each statement of the answer can be found in the joined contexts; judge B
looks for substance the answer adds or contradicts. Each rates 0 (not), 1 (partly) or 2 (fully
grounded); the score is mean(rating / 2) over the judges that gave a valid rating:

    score = (r_A / 2 + r_B / 2) / 2      (one judge failed: the other's r / 2; both: NaN)

Semantics follow Ragas' `ResponseGroundedness` (collections version): an empty answer or no
contexts raises ValueError; an answer or joined context that is only whitespace scores 0.0;
an invalid rating is asked again, up to `max_retries` attempts per judge, then that judge is NaN.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from groundwire import semconv
from groundwire._types import RagTurn, Score
from groundwire.judges import (
    GROUNDEDNESS_PROMPT_HASH,
    GROUNDEDNESS_PROMPT_VERSIONS,
    Asked,
    GroundednessRating,
    JudgeClient,
    JudgeConfig,
    Usage,
    ask_until_valid,
    groundedness_messages,
    resolve_judge,
    skipped_score,
)

__all__ = ["JUDGE_NAMES", "ResponseGroundedness"]

JUDGE_NAMES = ("support", "added_content")
"""The two judges' names as they appear in `Score.details`."""


_Outcome = Asked[GroundednessRating]


def _label(value: float) -> str:
    """The score label for a value."""
    if value >= 1.0:
        return "grounded"
    return "ungrounded" if value <= 0.0 else "partially_grounded"


class ResponseGroundedness:
    """Dual-judge groundedness of the answer against the joined contexts, in [0, 1].

    Judge options (`model`, `base_url`, `api_key`, `timeout_s`, ...) are those of `JudgeConfig`
    and fall back to the environment; with no judge configured the score is skipped.
    """

    name: str = "groundedness"

    def __init__(
        self,
        *,
        judge: JudgeClient | JudgeConfig | None = None,
        max_retries: int = 5,
        **judge_options: Any,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 1:
            raise ValueError(
                f"ResponseGroundedness: max_retries must be a positive integer (attempts per "
                f"judge), got {max_retries!r}"
            )
        self.max_retries = max_retries
        self.judge = resolve_judge(judge, **judge_options)

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Ask both judges (concurrently) and combine their ratings."""
        if self.judge is None:
            return skipped_score(self.name)
        if not turn.answer:
            raise ValueError("groundedness: the turn has no answer (RagTurn.answer is empty)")
        if not turn.contexts:
            raise ValueError("groundedness: the turn has no contexts (RagTurn.contexts is empty)")
        context = "\n".join(turn.context_texts)
        if not turn.answer.strip() or not context.strip():
            return Score(
                name=self.name,
                value=0.0,
                label="ungrounded",
                explanation="The answer or the joined contexts are blank; scored 0.0.",
                details={"blank_input": True},
            )
        outcomes = await asyncio.gather(
            *(self._rate(self.judge, j, turn.answer, context) for j in range(len(JUDGE_NAMES)))
        )
        return self._combine(self.judge, outcomes)

    async def _rate(self, judge: JudgeClient, index: int, answer: str, context: str) -> _Outcome:
        """One judge's rating, asking again after an invalid reply (up to `max_retries` times)."""
        return await ask_until_valid(
            judge,
            GroundednessRating,
            groundedness_messages(index, answer, context),
            prompt_version=GROUNDEDNESS_PROMPT_VERSIONS[index],
            inputs={"answer": answer, "context": context},
            attempts=self.max_retries,
        )

    def _combine(self, judge: JudgeClient, outcomes: list[_Outcome]) -> Score:
        """Mean of the valid ratings / 2, with the fallback and error rules, and details."""
        ratings = [o.value.rating if o.value is not None else None for o in outcomes]
        valid = [r / 2 for r in ratings if r is not None]
        usage = sum((o.usage for o in outcomes), Usage())
        details: dict[str, Any] = {
            "ratings": dict(zip(JUDGE_NAMES, ratings, strict=True)),
            "attempts": dict(zip(JUDGE_NAMES, (o.attempts for o in outcomes), strict=True)),
            "cached": dict(zip(JUDGE_NAMES, (o.cached for o in outcomes), strict=True)),
            semconv.DETAIL_JUDGE_MODEL: judge.model,
            semconv.DETAIL_PROMPT_VERSION: GROUNDEDNESS_PROMPT_HASH,
        }
        errors = {n: o.error for n, o in zip(JUDGE_NAMES, outcomes, strict=True) if o.error}
        if errors:
            details["judge_errors"] = errors
        if not valid:
            message = "; ".join(f"{name}: {error}" for name, error in errors.items())
            return Score(
                name=self.name,
                value=math.nan,
                label="error",
                error=f"JudgeError: neither judge gave a valid rating ({message})",
                details=details,
                usage=usage.as_dict(),
            )
        value = sum(valid) / len(valid)
        if len(valid) == len(ratings):
            a, b = (r for r in ratings if r is not None)
            details[semconv.DETAIL_JUDGE_AGREEMENT] = 1.0 - abs(a - b) / 2
            explanation = f"Judges rated {a}/2 (support) and {b}/2 (added content)."
        else:
            pairs = zip(JUDGE_NAMES, ratings, strict=True)
            name, rating = next((n, r) for n, r in pairs if r is not None)
            details["fallback"] = name
            explanation = f"Only the {name} judge gave a valid rating: {rating}/2."
        return Score(
            name=self.name,
            value=value,
            label=_label(value),
            explanation=explanation,
            details=details,
            usage=usage.as_dict(),
        )
