"""Core value types: a retrieved `Context`, one answered question (`RagTurn`) and a `Score`.

All three are frozen pydantic models, so they validate on construction (errors name the field),
are safe to share between threads, and round-trip through JSON (`model_dump_json` /
`model_validate_json`, or the `to_json` / `from_json` shorthands).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

__all__ = ["AttributeValue", "Context", "RagTurn", "Score"]

AttributeValue = str | bool | int | float
"""A scalar OpenTelemetry attribute value (what `RagTurn.attributes` may hold)."""

_IDS = {
    name: (re.compile(f"^[0-9a-f]{{{n}}}$"), n) for name, n in (("trace_id", 32), ("span_id", 16))
}
"""The ids a turn names its trace and root span by: their pattern and number of hex digits."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    def to_json(self) -> str:
        """Serialise to a JSON string (NaN is written as the string "NaN" so the JSON is strict)."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        """Parse what `to_json` wrote; errors name the offending field."""
        return cls.model_validate_json(data)


class Context(_Frozen):
    """One retrieved document, as the model saw it."""

    text: str
    """The document's content."""
    id: str | None = None
    """The retriever's document id (integrations derive a content hash when there is none)."""
    score: float | None = None
    """The retriever's or reranker's relevance score, when it gave one."""
    rank: int | None = Field(default=None, ge=0)
    """0-based position in the list the model saw."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form document metadata (source, page, ...)."""


class RagTurn(_Frozen):
    """One question answered by a RAG application: what was asked, retrieved and answered.

    `contexts` may be given as plain strings, mappings or `Context` objects; strings become
    `Context(text=..., rank=i)`. Contexts keep the order the model saw them in.
    """

    query: str
    contexts: tuple[Context, ...] = ()
    answer: str
    expected: tuple[str, ...] | None = None
    """Gold answers, when known (needed by eRAG)."""
    trace_id: str | None = None
    """The trace the turn was recorded in, 32 lower-case hex digits."""
    span_id: str | None = None
    """The turn's root span, 16 lower-case hex digits."""
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    """Low-cardinality facts about the turn: service, framework, model."""

    if TYPE_CHECKING:  # the signature type checkers see: what validation accepts

        def __init__(
            self,
            *,
            query: str,
            answer: str,
            contexts: Sequence[str | Context | Mapping[str, Any]] = (),
            expected: Sequence[str] | str | None = None,
            trace_id: str | None = None,
            span_id: str | None = None,
            attributes: Mapping[str, AttributeValue] | None = None,
        ) -> None: ...

    @field_validator("contexts", mode="before")
    @classmethod
    def _coerce_contexts(cls, value: Any) -> Any:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError("contexts must be a sequence of strings, mappings or Context objects")
        coerced: list[Any] = []
        for rank, item in enumerate(value):
            if isinstance(item, str):
                coerced.append(Context(text=item, rank=rank))
            elif isinstance(item, Mapping) and "rank" not in item:
                coerced.append({**item, "rank": rank})
            else:
                coerced.append(item)
        return tuple(coerced)

    @field_validator("attributes", mode="before")
    @classmethod
    def _coerce_attributes(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("expected", mode="before")
    @classmethod
    def _coerce_expected(cls, value: Any) -> Any:
        if isinstance(value, str):
            return (value,)
        return value

    @field_validator("trace_id", "span_id")
    @classmethod
    def _check_id(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A trace id is 32 lower-case hex digits, a span id 16 (OTLP/JSON's form), or None."""
        name = info.field_name or ""
        pattern, digits = _IDS[name]
        if value is not None and not pattern.match(value):
            raise ValueError(f"{name} must be {digits} lower-case hex digits, got {value!r}")
        return value

    @property
    def context_texts(self) -> list[str]:
        """The contexts' texts, in order."""
        return [context.text for context in self.contexts]


class Score(_Frozen):
    """What one evaluator said about one turn.

    `value` is in [0, 1]; NaN means the evaluator ran but could not compute a score (`error`
    says why); None means the evaluator does not apply to this turn (for example an answer with no
    quotes), and `label` says why.
    """

    name: str
    """The evaluator's name (`gen_ai.evaluation.name`)."""
    value: float | None
    label: str | None = None
    """A categorical verdict (`gen_ai.evaluation.score.label`), low-cardinality."""
    explanation: str | None = None
    """One or two human-readable sentences."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific, JSON-serialisable detail (e.g. one row per quote)."""
    error: str | None = None
    """Why the score could not be computed (`error.type: message`)."""
    usage: dict[str, int] = Field(default_factory=dict)
    """LLM tokens spent, by type (`input`, `output`), for judge evaluators."""

    @model_validator(mode="after")
    def _check_value(self) -> Self:
        value = self.value
        if value is not None and not math.isnan(value) and not 0.0 <= value <= 1.0:
            raise ValueError(f"score {self.name!r}: value must be in [0, 1], got {value!r}")
        return self

    @property
    def applicable(self) -> bool:
        """False when the evaluator did not apply to the turn (value None)."""
        return self.value is not None

    @property
    def ok(self) -> bool:
        """True when a value in [0, 1] (or 'not applicable') was computed without error."""
        return self.error is None and not (self.value is not None and math.isnan(self.value))

    @classmethod
    def not_applicable(cls, name: str, label: str, explanation: str | None = None) -> Score:
        """A score for a turn the evaluator does not apply to."""
        return cls(name=name, value=None, label=label, explanation=explanation)

    @classmethod
    def failed(cls, name: str, error: BaseException | str) -> Score:
        """A NaN score recording why the evaluator could not compute one."""
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return cls(name=name, value=math.nan, label="error", error=message)
