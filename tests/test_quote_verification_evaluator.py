"""The `quote_verification` evaluator: quotes from the answer, contexts as documents."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

import groundwire
from groundwire import Context, RagTurn
from groundwire.evaluators import QuoteVerification, verify_quotes
from tests.test_quote_verification import DOCS, typo

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


class _LetterEmbedder:
    """Embeds a text as its letter counts: cosines that differ from any real model's."""

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """One 26-dimensional letter-count row per text."""
        out = np.zeros((len(texts), 26))
        for row, text in enumerate(texts):
            for char in re.sub(r"[^a-z]", "", text.lower()):
                out[row, ord(char) - 97] += 1
        return out


def _option_turn() -> tuple[RagTurn, list[str]]:
    """A turn whose quotes (typos, a straddling quote, an ellipsis) react to every option."""
    text, other = DOCS["d0"], DOCS["d1"]
    start = text.index(" ", 100) + 1
    straddling = typo(text[start : text.index(" ", start + 150)], random.Random(2), 3)
    rng = random.Random(7)
    picked = DOCS[rng.choice(list(DOCS))]
    at = rng.randrange(0, len(picked) - 200)
    slid = typo(picked[at : at + rng.randint(40, 150)], rng, rng.randint(3, 8))
    quotes = [
        straddling,
        typo(other[300:380], random.Random(5), 2),
        DOCS["d2"][200:240].strip() + " ... " + DOCS["d2"][700:740].strip(),
        slid,
    ]
    answer = " and ".join(f"“{quote}”" for quote in quotes)
    contexts = [Context(text=body, id=name) for name, body in DOCS.items()]
    return RagTurn(query="q", contexts=contexts, answer=answer), quotes


_BASE: dict[str, object] = {"embedder": None, "window_size": 100, "overlap": 10}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("window_size", 100),
        ("overlap", 10),
        ("bm25_k1", 0.5),
        ("bm25_b", 1.0),
        ("ellipsis_max_gap", 10),
        ("trim_spans", False),
        ("trim_method", "sliding_bm25"),
        ("expand_window_neighbors", 0),
        ("embedder", _LetterEmbedder()),
    ],
)
def test_every_option_reaches_verify_quotes(option: str, value: object) -> None:
    """The evaluator's rows equal verify_quotes' with the same options, for each option set to a
    value that changes the rows (so an option the evaluator dropped would show)."""
    turn, quotes = _option_turn()
    options = {**_BASE, option: value}
    without = {key: item for key, item in options.items() if key != option}
    if option == "embedder":
        without["embedder"] = None
    expected = verify_quotes(quotes, DOCS, **options)  # type: ignore[arg-type]
    assert expected != verify_quotes(quotes, DOCS, **without)  # type: ignore[arg-type]
    score = QuoteVerification(**options).evaluate(turn)  # type: ignore[arg-type]
    rows = [
        {key: item for key, item in row.items() if key not in ("answer_start", "answer_end")}
        for row in score.details["quotes"]
    ]
    assert rows == [row.to_dict() for row in expected]


_INVENTED = "the harbour lighthouse keepers were given medals for their courage"


@pytest.mark.parametrize(
    ("answer", "explanation"),
    [
        (
            f"“a third invented sentence about lighthouse keepers”, “{_INVENTED[:61]}” and "
            "“the budget had doubled since the start”",
            "1 of 3 quotes verified in the contexts; not found: “a third invented sentence about "
            "lighthouse keepers”, “the harbour lighthouse keepers were given medals for their …”",
        ),
        (
            f"“{_INVENTED[:60]}”",
            "0 of 1 quotes verified in the contexts; not found: "
            "“the harbour lighthouse keepers were given medals for their c”",
        ),
        (
            "“the new bridge will not open in the spring” and "
            "“engineers never warned that the budget had doubled”",
            "0 of 2 quotes verified in the contexts; misquoted: “the new bridge will not open in "
            "the spring” (negation changed: 'will' -> 'will not'), “engineers never warned that "
            "the budget had doubled” (negation changed: 'Engineers' -> 'engineers never')",
        ),
    ],
)
def test_explanation_names_the_first_misses_cut_to_60_characters(
    answer: str, explanation: str
) -> None:
    """The explanation counts verified quotes, then lists unverified ones (a quote over 60
    characters cut to 59 and an ellipsis): not found ones, then misquoted ones with the change."""
    turn = RagTurn(query="q", contexts=CONTEXTS, answer=answer)
    assert QuoteVerification(embedder=None).evaluate(turn).explanation == explanation


def test_not_applicable_and_no_context_explanations_are_exact() -> None:
    """Without quotes the explanation names min_len; without contexts it says the turn has none."""
    none = QuoteVerification(embedder=None, min_len=4).evaluate(
        RagTurn(query="q", contexts=CONTEXTS, answer="No quotes.")
    )
    assert none.explanation == "the answer quotes no span of 4+ words"
    empty = QuoteVerification(embedder=None).evaluate(
        RagTurn(query="q", contexts=[], answer="He said “the new bridge will open”.")
    )
    assert empty.explanation == "0 of 1 quotes verified in the contexts (the turn has no contexts)"
