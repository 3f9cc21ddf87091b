"""Split an answer into atomic claims (one LLM call, structured output), keeping each claim's
citation markers and quotes so its citations can be resolved afterwards."""

from __future__ import annotations

from groundwire.judges._attempts import Asked, ask_until_valid
from groundwire.judges._client import JudgeClient
from groundwire.judges._delimit import restore
from groundwire.judges._prompts import CLAIMS_PROMPT_VERSION, ClaimList, claims_messages

__all__ = ["split_claims"]


async def split_claims(
    judge: JudgeClient, answer: str, *, attempts: int = 3
) -> tuple[list[str], Asked[ClaimList]]:
    """The answer's atomic claims (blank ones dropped) and the raw ask result (usage, error)."""
    asked = await ask_until_valid(
        judge,
        ClaimList,
        claims_messages(answer),
        prompt_version=CLAIMS_PROMPT_VERSION,
        inputs={"answer": answer},
        attempts=attempts,
    )
    if asked.value is None:
        return [], asked
    claims = [restore(claim).strip() for claim in asked.value.claims]
    return [claim for claim in claims if claim], asked
