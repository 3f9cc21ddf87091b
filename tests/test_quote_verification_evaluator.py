"""The `quote_verification` evaluator: quotes from the answer, contexts as documents."""

from __future__ import annotations

import math

import pytest

import groundwire
from groundwire import Context, RagTurn
from groundwire.evaluators import QuoteVerification

CONTEXTS = [
    Context(
        text="The mayor said the new bridge will open in the spring of next year.", id="news-1"
    ),
    Context(text="Engineers warned that the budget had doubled since the start.", id="news-2"),
]


def test_registry_name_scores_share_of_verified_quotes() -> None:
    """By name through evaluate(): value = verified quotes / quotes, rows in details."""
    turn = RagTurn(
        query="When does the bridge open?",
        contexts=CONTEXTS,
        answer=(
            "The mayor said “the new bridge will open in the spring” and engineers said "
            "“the budget had dubled since the start”, but also “taxes will fall by half soon”."
        ),
    )
    score = groundwire.evaluate(turn, ["quote_verification"])["quote_verification"]
    assert score.error is None
    assert score.value == pytest.approx(2 / 3)
    assert score.label == "some_unverified"
    assert score.explanation is not None and "taxes will fall by half soon" in score.explanation
    rows = score.details["quotes"]
    assert [row["source_doc"] for row in rows[:2]] == ["news-1", "news-2"]
    assert [row["low_confidence"] for row in rows] == [False, False, True]
    assert rows[1]["span_text"] == "the budget had doubled since the start"
    assert turn.answer[rows[0]["answer_start"] : rows[0]["answer_end"]] == rows[0]["quote"]
    assert score.details["n_quotes"] == 3 and score.details["n_verified"] == 2
    assert all(row["cosine_similarity"] is not None for row in rows[:2])


def test_answer_without_quotes_is_not_applicable() -> None:
    """No quote of min_len words: value None, label no_quotes (not 0.0)."""
    turn = RagTurn(query="q", contexts=CONTEXTS, answer='It opens in "spring". No quotes here.')
    score = QuoteVerification(embedder=None).evaluate(turn)
    assert score.value is None and score.label == "no_quotes"


def test_contexts_without_id_are_named_doc_i_and_repeated_ids_disambiguated() -> None:
    """Documents are named by context id, doc_i without one, id#i when an id repeats."""
    turn = RagTurn(
        query="q",
        contexts=[
            Context(text="alpha beta gamma delta"),
            Context(text="one two three four", id="x"),
            Context(text="five six seven eight", id="x"),
        ],
        answer="“alpha beta gamma” and “one two three” and “six seven eight”",
    )
    score = QuoteVerification(embedder=None).evaluate(turn)
    assert [row["source_doc"] for row in score.details["quotes"]] == ["doc_0", "x", "x#2"]
    assert score.value == 1.0 and score.label == "all_verified"


def test_turn_without_contexts_scores_zero() -> None:
    """Quotes but no contexts: nothing can be verified, value 0.0, explanation says why."""
    turn = RagTurn(query="q", contexts=[], answer="He said “this is a quote”.")
    score = QuoteVerification(embedder=None).evaluate(turn)
    assert score.value == 0.0 and score.label == "none_verified"
    assert score.explanation is not None and "no contexts" in score.explanation


def test_options_are_passed_through() -> None:
    """min_len and min_fuzzy_ratio change what is quoted and what counts as verified."""
    turn = RagTurn(query="q", contexts=CONTEXTS, answer="“the budget had dubled” and “new bridge”")
    strict = QuoteVerification(embedder=None, min_fuzzy_ratio=0.95, min_len=2).evaluate(turn)
    assert strict.details["n_quotes"] == 2
    assert strict.value == 0.5
    lenient = QuoteVerification(embedder=None, min_len=4).evaluate(turn)
    assert lenient.details["n_quotes"] == 1 and lenient.value == 1.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_len": -1}, "min_len must be >= 0"),
        ({"trim_method": "nope"}, "trim_method must be one of"),
        ({"embedder": object()}, "embedder must have an embed"),
    ],
)
def test_bad_options_fail_at_construction(options: dict[str, object], message: str) -> None:
    """A bad option raises when the evaluator is built, naming the option."""
    with pytest.raises((ValueError, TypeError), match=message):
        QuoteVerification(**options)  # type: ignore[arg-type]


def test_details_are_json_serialisable() -> None:
    """The score (with its rows) round-trips through JSON."""
    turn = RagTurn(query="q", contexts=CONTEXTS, answer="“the new bridge will open”")
    score = QuoteVerification(embedder=None).evaluate(turn)
    again = groundwire.Score.from_json(score.to_json())
    assert again == score
    assert not math.isnan(again.value or 0.0)
