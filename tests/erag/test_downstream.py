"""Downstream metrics: SQuAD normalisation, exact match, token F1, contains, ROUGE-L."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwire.evaluators.erag import (
    DOWNSTREAM_METRICS,
    batchify_downstream_metric,
    contains,
    exact_match,
    normalize_answer,
    rouge_l,
    token_f1,
)


def _lcs(a: list[str], b: list[str]) -> int:
    """Textbook dynamic-programming LCS length: the independent oracle for ROUGE-L."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


def test_normalize_answer_is_squad_style() -> None:
    """Lower case, punctuation deleted (ASCII and Unicode), articles dropped, spaces collapsed."""
    assert normalize_answer("  The U.S.  Army's “best” — an  answer! ") == "us armys best answer"


def test_exact_match_takes_the_best_gold() -> None:
    """Exact match is 1 when any gold answer matches after normalisation."""
    assert exact_match("The Eiffel Tower.", ["Big Ben", "eiffel tower"]) == 1.0
    assert exact_match("Eiffel Tower in Paris", ["eiffel tower"]) == 0.0


def test_token_f1_known_values() -> None:
    """Token F1 is SQuAD's: 2PR/(P+R) over token multisets, best over golds."""
    assert token_f1("the cat sat on the mat", ["a cat on a mat"]) == pytest.approx(
        2 * (3 / 4) * (3 / 3) / (3 / 4 + 1)
    )
    assert token_f1("paris", ["London", "Paris"]) == 1.0
    assert token_f1("", ["the"]) == 1.0  # both normalise to nothing, as in SQuAD
    assert token_f1("paris", ["london"]) == 0.0


def test_contains_matches_whole_words_only() -> None:
    """Contains finds a gold answer inside the output on word boundaries, after normalisation."""
    assert contains("It is, of course, PARIS!", ["paris"]) == 1.0
    assert contains("The answer is New York City.", ["new york"]) == 1.0
    assert contains("concatenate", ["cat"]) == 0.0
    assert contains("nothing here", ["the"]) == 0.0  # a gold that normalises to nothing


def test_rouge_l_known_value() -> None:
    """ROUGE-L F1 uses the longest common token subsequence."""
    # LCS("police killed the gunman", "police kill the gunman") = police, gunman (the is dropped)
    assert rouge_l("police killed the gunman", ["police kill the gunman"]) == pytest.approx(2 / 3)
    assert rouge_l("a b c d", ["a c d"]) == pytest.approx(2 * 1 * (2 / 3) / (1 + 2 / 3))


words = st.lists(st.sampled_from(["x", "y", "z", "w", "the", "x!"]), max_size=8)


@settings(max_examples=80, deadline=None)
@given(output=words, golds=st.lists(words, min_size=1, max_size=3))
def test_rouge_l_matches_textbook_lcs(output: list[str], golds: list[list[str]]) -> None:
    """ROUGE-L through rapidfuzz equals the F1 of a textbook LCS on the normalised tokens."""
    predicted = normalize_answer(" ".join(output)).split()
    best = 0.0
    for gold in golds:
        tokens = normalize_answer(" ".join(gold)).split()
        if not predicted or not tokens:
            best = max(best, float(len(predicted) == len(tokens)))
            continue
        lcs = _lcs(predicted, tokens)
        if lcs:
            p, r = lcs / len(predicted), lcs / len(tokens)
            best = max(best, 2 * p * r / (p + r))
    assert rouge_l(" ".join(output), [" ".join(g) for g in golds]) == pytest.approx(best)


@settings(max_examples=80, deadline=None)
@given(output=st.text(max_size=40), golds=st.lists(st.text(max_size=20), min_size=1, max_size=3))
def test_every_metric_stays_in_unit_interval(output: str, golds: list[str]) -> None:
    """Every built-in metric returns a float in [0, 1] for any text."""
    for metric in DOWNSTREAM_METRICS.values():
        value = metric(output, golds)
        assert isinstance(value, float)
        assert 0.0 <= value <= 1.0


@pytest.mark.parametrize("name", sorted(DOWNSTREAM_METRICS))
def test_empty_gold_list_is_a_clear_error(name: str) -> None:
    """No gold answers is a ValueError naming the metric, not a silent 0."""
    with pytest.raises(ValueError, match=f"{name}: no gold answers"):
        DOWNSTREAM_METRICS[name]("anything", [])


def test_batchify_by_name_and_unknown_name() -> None:
    """Built-ins batchify by name; an unknown name lists the known ones."""
    batched = batchify_downstream_metric("exact_match")
    assert batched({"q": "Paris"}, {"q": ["paris"]}) == {"q": 1.0}
    with pytest.raises(ValueError, match="known metrics: contains, exact_match"):
        batchify_downstream_metric("bleu")
