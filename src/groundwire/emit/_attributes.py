"""Scores as telemetry attributes: the `gen_ai.evaluation.result` event and OpenInference's list.

Both builders are pure functions of a `Score`, shared by inline annotation, evaluation carrier
spans and the offline re-scorer, so a score looks the same wherever it lands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from groundwire import semconv
from groundwire._types import Score

__all__ = [
    "Attributes",
    "error_type",
    "evaluation_attributes",
    "provenance",
    "score_event_attributes",
]

Attributes = dict[str, str | bool | int | float]
"""Flat OpenTelemetry attributes."""

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_OTHER = "_OTHER"


def error_type(score: Score) -> str | None:
    """The low-cardinality `error.type` of a failed score: the exception class name, or `_OTHER`."""
    if score.error is None:
        return None
    head = score.error.split(":", 1)[0].strip()
    return head if _IDENTIFIER.match(head) else _OTHER


def _finite(value: float | None) -> float | None:
    """The value as a float, or None when absent or NaN."""
    if value is None or math.isnan(value):
        return None
    return float(value)


def provenance(score: Score, evaluator_version: str | None = None) -> dict[str, str]:
    """What produced the score, under `groundwire.*` names: the judge model and the judge
    prompts' hash (from the judge evaluators' details) and the evaluator's version, where known.
    """
    found: dict[str, str] = {}
    for key, detail in (
        (semconv.GROUNDWIRE_JUDGE_MODEL, semconv.DETAIL_JUDGE_MODEL),
        (semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION, semconv.DETAIL_PROMPT_VERSION),
    ):
        value = score.details.get(detail)
        if isinstance(value, str) and value:
            found[key] = value
    if evaluator_version:
        found[semconv.GROUNDWIRE_EVALUATOR_VERSION] = evaluator_version
    return found


def score_event_attributes(score: Score, evaluator_version: str | None = None) -> Attributes:
    """Attributes of one `gen_ai.evaluation.result` event (no value when NaN or not applicable),
    with the score's `provenance`."""
    attributes: Attributes = {semconv.GEN_AI_EVALUATION_NAME: score.name}
    value = _finite(score.value)
    if value is not None:
        attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] = value
    if score.label is not None:
        attributes[semconv.GEN_AI_EVALUATION_SCORE_LABEL] = score.label
    if score.explanation:
        attributes[semconv.GEN_AI_EVALUATION_EXPLANATION] = score.explanation
    kind = error_type(score)
    if kind is not None:
        attributes[semconv.ERROR_TYPE] = kind
    attributes.update(provenance(score, evaluator_version))
    return attributes


def evaluation_attributes(scores: Sequence[Score], start_index: int = 0) -> Attributes:
    """OpenInference's `evaluations.{i}.evaluation.name|score|label|explanation` attributes."""
    attributes: Attributes = {}
    for offset, score in enumerate(scores):
        index = start_index + offset
        attributes[semconv.evaluation_attribute(index, semconv.EVALUATION_NAME)] = score.name
        value = _finite(score.value)
        if value is not None:
            attributes[semconv.evaluation_attribute(index, semconv.EVALUATION_SCORE)] = value
        label = score.label if score.label is not None else ("error" if score.error else None)
        if label is not None:
            attributes[semconv.evaluation_attribute(index, semconv.EVALUATION_LABEL)] = label
        explanation = score.explanation or score.error
        if explanation:
            key = semconv.evaluation_attribute(index, semconv.EVALUATION_EXPLANATION)
            attributes[key] = explanation
    return attributes
