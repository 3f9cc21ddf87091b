"""`TurnResult`: one re-scored turn, and its flat output record (the `.jsonl` schema)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from groundwire import semconv
from groundwire._types import RagTurn, Score
from groundwire.emit import provenance, registered_version

__all__ = ["Outcome", "ScoreCounts", "TurnResult", "dumps_strict", "json_safe", "score_value"]


def json_safe(value: Any) -> Any:
    """`value` with NaN and infinities as None and tuples as lists: strict-JSON-ready."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


def dumps_strict(value: Any) -> str:
    """Strict JSON text for `value` (NaN and infinities as null, unknown types as strings).

    The common case (nothing to fix) is one `json.dumps`; only a value it rejects is cleaned.
    """
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):
        return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)


def score_value(score: Score | None) -> float | None:
    """The score's value for output files: None when not applicable, failed or missing."""
    if score is None or score.value is None or math.isnan(score.value):
        return None
    return score.value


Outcome = Literal["scored", "not_applicable", "failed", "skipped"]
"""What became of one evaluation: a value, none that applies, NaN, or not run (label `skipped`)."""


@dataclass(slots=True)
class ScoreCounts:
    """One evaluator's scores counted by outcome, and the sum of their values: what the run's
    summary and the HTML report's histograms both count, counted one way."""

    scored: int = 0
    not_applicable: int = 0
    """No value (None), or no score at all for the turn."""
    failed: int = 0
    skipped: int = 0
    """Not run: no judge configured, or the judge unreachable (label `skipped`, value None)."""
    total: float = 0.0

    def count(self, score: Score | None) -> Outcome:
        """Count one score under its outcome (a value is added to `total`) and return it."""
        if score is not None and score.value is None and score.label == semconv.LABEL_SKIPPED:
            self.skipped += 1
            return "skipped"
        if score is None or score.value is None:
            self.not_applicable += 1
            return "not_applicable"
        if math.isnan(score.value):
            self.failed += 1
            return "failed"
        self.scored += 1
        self.total += score.value
        return "scored"

    @property
    def mean(self) -> float | None:
        """Mean of the computed values, None when there were none."""
        return self.total / self.scored if self.scored else None


@dataclass(frozen=True, slots=True)
class TurnResult:
    """A turn with each evaluator's score (evaluator order kept) and how long each took."""

    turn: RagTurn
    scores: dict[str, Score]
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        """`(trace_id, span_id)`: identifies the turn across runs (what `--resume` matches)."""
        return self.turn.trace_id or "", self.turn.span_id or ""

    def values(self) -> dict[str, float | None]:
        """Evaluator name -> value (None when not applicable or failed)."""
        return {name: score_value(score) for name, score in self.scores.items()}

    def worst(self) -> float | None:
        """The lowest computed value, None when no evaluator gave one."""
        values = [value for value in self.values().values() if value is not None]
        return min(values) if values else None

    def details(self) -> dict[str, dict[str, Any]]:
        """Evaluator name -> label, explanation, error, the evaluator's own details and its
        `provenance` (judge model, prompt hash, evaluator version under `groundwire.*` names)."""
        out: dict[str, dict[str, Any]] = {}
        for name, score in self.scores.items():
            entry: dict[str, Any] = {
                "label": score.label,
                "explanation": score.explanation,
                "error": score.error,
                "details": score.details,
            }
            if score.usage:
                entry["usage"] = score.usage
            made_by = provenance(score, registered_version(name))
            if made_by:
                entry["provenance"] = made_by
            out[name] = entry
        return out

    def to_record(self) -> dict[str, Any]:
        """The output record: trace_id, span_id, query, scores (name -> value or null), details.

        Details are the evaluators' own; write them with `dumps_strict` (NaN becomes null).
        """
        return {
            "trace_id": self.turn.trace_id,
            "span_id": self.turn.span_id,
            "query": self.turn.query,
            "scores": self.values(),
            "details": self.details(),
        }
