"""Scores as Phoenix span annotations: one per evaluator on the evaluated turn's span.

Each `Score` becomes `{span_id, name, annotator_kind, result: {score, label, explanation},
metadata, identifier}` (Phoenix's `SpanAnnotationData`). Phoenix keeps one annotation per span,
name and identifier, so posting the same identifier again (a re-run) updates it in place.
`AnnotationWriter` buffers them, posts in batches (`?sync=true`, retried by the client) and
counts what was stored and what failed; a failed batch is reported and the run goes on.

A score that is no verdict (an evaluation skipped, e.g. no judge configured, or one that failed,
NaN) is not written: since a re-run updates in place, writing it would replace the real score
an earlier run stored with an empty one. It is counted as withheld.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from groundwire import semconv
from groundwire._types import Score
from groundwire.offline import TurnResult, json_safe
from groundwire.phoenix._client import PhoenixClient, PhoenixError

__all__ = [
    "DEFAULT_IDENTIFIER",
    "JUDGE_EVALUATORS",
    "AnnotationStats",
    "AnnotationWriter",
    "annotation_for",
]

AnnotatorKind = Literal["LLM", "CODE", "HUMAN"]

DEFAULT_IDENTIFIER: Final = "groundwire"
"""The annotations' `identifier`: a re-run with the same one updates instead of duplicating."""
JUDGE_EVALUATORS: Final = frozenset({"groundedness", "citation_support", "erag"})
"""Evaluators whose verdict comes from an LLM judge (`annotator_kind` LLM); the rest are CODE."""
FAILED_LABEL: Final = "error"
"""The label of an annotation whose evaluator ran but could not compute a score."""
NOT_APPLICABLE_LABEL: Final = "not_applicable"
"""The label of an annotation whose evaluator does not apply and gave no label of its own."""


def is_verdict(score: Score) -> bool:
    """False for a score that says nothing about the turn: skipped, or failed (NaN)."""
    if score.value is None:
        return score.label != semconv.LABEL_SKIPPED
    return not math.isnan(score.value)


def is_verdict_attribute(score: object, label: object) -> bool:
    """`is_verdict` for an evaluation read back from span attributes (no score when NaN)."""
    return score is not None or label not in (semconv.LABEL_SKIPPED, FAILED_LABEL)


def annotation_for(
    span_id: str,
    score: Score,
    *,
    identifier: str = DEFAULT_IDENTIFIER,
    kind: AnnotatorKind | None = None,
) -> dict[str, Any]:
    """The Phoenix annotation for one score on one span (NaN and n/a carry no score)."""
    value = score.value
    failed = value is not None and math.isnan(value)
    label = score.label
    if failed and not label:
        label = FAILED_LABEL
    elif value is None and not label:
        label = NOT_APPLICABLE_LABEL
    explanation = score.explanation or (score.error if failed else None)
    metadata: dict[str, Any] = {"details": json_safe(score.details), "source": "groundwire"}
    if score.error:
        metadata["error"] = score.error
    if score.usage:
        metadata["usage"] = dict(score.usage)
    return {
        "span_id": span_id,
        "name": score.name,
        "annotator_kind": kind or ("LLM" if score.name in JUDGE_EVALUATORS else "CODE"),
        "result": {
            "score": None if value is None or failed else value,
            "label": label,
            "explanation": explanation,
        },
        "metadata": metadata,
        "identifier": identifier,
    }


@dataclass(slots=True)
class AnnotationStats:
    """What the writer did."""

    sent: int = 0
    """Annotations Phoenix accepted."""
    failed: int = 0
    """Annotations in batches that failed after every retry."""
    skipped: int = 0
    """Scores with no span to attach to (a turn without a span id)."""
    withheld: int = 0
    """Scores not written because they are no verdict (skipped or failed): an annotation an
    earlier run wrote for that span and evaluator is kept."""
    errors: list[str] = field(default_factory=list)
    """The first few failures' messages."""

    def line(self) -> str:
        """One summary line."""
        text = f"Phoenix annotations: {self.sent} written, {self.failed} failed"
        if self.skipped:
            text += f", {self.skipped} skipped (turn without a span id)"
        if self.withheld:
            text += (
                f", {self.withheld} not written (evaluation skipped or failed; an earlier "
                "annotation stays)"
            )
        return text


class AnnotationWriter:
    """Buffers annotations and posts them to Phoenix in batches of `batch_size`."""

    def __init__(
        self,
        client: PhoenixClient,
        *,
        identifier: str = DEFAULT_IDENTIFIER,
        batch_size: int = 100,
        kinds: dict[str, AnnotatorKind] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(identifier, str):
            raise ValueError(f"identifier must be a string, got {identifier!r}")
        self.client = client
        self.identifier = identifier
        self.batch_size = batch_size
        self.kinds = dict(kinds or {})
        self.on_error = on_error
        self.stats = AnnotationStats()
        self._buffer: list[dict[str, Any]] = []

    def add(self, results: Iterable[TurnResult]) -> None:
        """Queue the annotations of `results`; post every full batch."""
        for result in results:
            span_id = result.turn.span_id
            if not span_id:
                self.stats.skipped += len(result.scores)
                continue
            for name, score in result.scores.items():
                if not is_verdict(score):
                    self.stats.withheld += 1
                    continue
                self._buffer.append(
                    annotation_for(
                        span_id, score, identifier=self.identifier, kind=self.kinds.get(name)
                    )
                )
            while len(self._buffer) >= self.batch_size:
                self._post(self._buffer[: self.batch_size])
                del self._buffer[: self.batch_size]

    def flush(self) -> None:
        """Post what is queued."""
        while self._buffer:
            self._post(self._buffer[: self.batch_size])
            del self._buffer[: self.batch_size]

    def _post(self, batch: list[dict[str, Any]]) -> None:
        """Post one batch; a failure is counted and reported, never raised."""
        try:
            self.client.post_span_annotations(batch)
        except PhoenixError as error:
            self.stats.failed += len(batch)
            message = f"{len(batch)} annotations not written: {error}"
            if len(self.stats.errors) < 20:
                self.stats.errors.append(message)
            if self.on_error is not None:
                self.on_error(message)
            return
        self.stats.sent += len(batch)
