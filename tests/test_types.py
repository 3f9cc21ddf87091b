"""The core value types: validation, immutability and JSON round trips."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from groundwire import Context, RagTurn, Score


def test_plain_string_contexts_become_ranked_contexts() -> None:
    """Contexts given as strings become Context objects ranked in the given order."""
    turn = RagTurn(query="q", contexts=["first", "second"], answer="a")
    assert turn.contexts == (Context(text="first", rank=0), Context(text="second", rank=1))
    assert turn.context_texts == ["first", "second"]


def test_mapping_contexts_get_rank_and_keep_fields() -> None:
    """Mappings are validated as Contexts; a missing rank is filled from the position."""
    turn = RagTurn(query="q", contexts=[{"text": "t", "id": "d1", "score": 0.5}], answer="a")
    assert turn.contexts[0] == Context(text="t", id="d1", score=0.5, rank=0)


def test_turn_round_trips_through_json() -> None:
    """A turn with every field set survives to_json/from_json unchanged."""
    turn = RagTurn(
        query="q",
        contexts=[Context(text="t", id="x", score=0.3, rank=0, metadata={"page": 2})],
        answer="a",
        expected=["gold"],
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        attributes={"service.name": "bot", "retries": 2},
    )
    assert RagTurn.from_json(turn.to_json()) == turn


def test_turn_is_immutable() -> None:
    """Assigning to a field of a turn fails."""
    turn = RagTurn(query="q", answer="a")
    with pytest.raises(ValidationError):
        turn.query = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("trace_id", "XYZ", "trace_id"),
        ("span_id", "0af7651916cd43dd8448eb211c80319c", "span_id"),
        ("contexts", "one string", "contexts"),
        ("query", None, "query"),
    ],
)
def test_bad_turn_fields_are_named(field: str, value: object, needle: str) -> None:
    """A bad field gives a validation error that names it."""
    data: dict[str, object] = {"query": "q", "answer": "a", field: value}
    with pytest.raises(ValidationError, match=needle):
        RagTurn.model_validate(data)


def test_unknown_field_is_rejected() -> None:
    """A misspelt field is an error, not silently dropped."""
    with pytest.raises(ValidationError, match="anwser"):
        RagTurn.model_validate({"query": "q", "answer": "a", "anwser": "b"})


def test_nan_score_round_trips_as_strict_json() -> None:
    """NaN is written as the string "NaN" (strict JSON) and read back as NaN."""
    score = Score.failed("groundedness", ValueError("empty answer"))
    text = score.to_json()
    assert json.loads(text)["value"] == "NaN"
    back = Score.from_json(text)
    assert back.value is not None and math.isnan(back.value)
    assert back.error == "ValueError: empty answer"
    assert not back.ok


def test_not_applicable_score() -> None:
    """A not-applicable score has value None, a label, and counts as ok."""
    score = Score.not_applicable("quoted_spans", "no_quotes")
    assert score.value is None and score.label == "no_quotes"
    assert score.ok and not score.applicable
    assert Score.from_json(score.to_json()) == score


@pytest.mark.parametrize("value", [-0.01, 1.01, math.inf])
def test_score_outside_unit_interval_is_rejected(value: float) -> None:
    """Scores live in [0, 1]; anything else is a validation error naming the score."""
    with pytest.raises(ValidationError, match="quoted_spans"):
        Score(name="quoted_spans", value=value)
