"""Ask a judge until it gives a valid reply: the re-ask loop shared by every judge evaluator."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from groundwire.judges._client import InvalidJudgeOutputError, JudgeCallError, JudgeClient, Usage

__all__ = ["Asked", "ask_until_valid"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Asked(Generic[M]):
    """A valid reply (or None with `error`), the tokens all attempts cost, and the attempts made."""

    value: M | None
    usage: Usage
    attempts: int
    cached: bool = False
    error: str | None = None


async def ask_until_valid(
    judge: JudgeClient,
    response_model: type[M],
    messages: Sequence[Mapping[str, str]],
    *,
    prompt_version: str,
    inputs: Mapping[str, Any],
    attempts: int,
) -> Asked[M]:
    """Ask up to `attempts` times while the reply is invalid; a failed call ends the loop at once
    (the client already retried it). Never raises a `JudgeError`; `JudgeUnreachableError` (the
    breaker is open) passes through, so the evaluation is skipped rather than failed."""
    usage = Usage()
    error = "no attempt made"
    for attempt in range(1, attempts + 1):
        try:
            reply = await judge.ask(
                response_model, messages, prompt_version=prompt_version, inputs=inputs
            )
        except InvalidJudgeOutputError as invalid:
            usage, error = usage + invalid.usage, str(invalid)
            continue
        except JudgeCallError as failed:
            return Asked(None, usage + failed.usage, attempt, error=str(failed))
        return Asked(reply.value, usage + reply.usage, attempt, cached=reply.cached)
    return Asked(None, usage, attempts, error=f"{error} (gave up after {attempts} attempts)")
