"""Where the reference `erag.eval` is wrong, `erag_score` is right: each case pins both sides."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

erag = pytest.importorskip("erag")
erag_utils = pytest.importorskip("erag.utils")

from groundwire.evaluators import (  # noqa: E402
    batchify_text_generator,
    erag_score,
    score_relevance_labels,
)


def _labelled(table: Mapping[str, float]) -> Any:
    """A downstream metric reading each document's label from `table` (keyed by the output)."""

    def metric(generated: Mapping[str, str], gold: Mapping[str, Any]) -> dict[str, float]:
        return {query: table[output] for query, output in generated.items()}

    return metric


def _echo(query: str, documents: Sequence[str]) -> str:
    return documents[0]


ECHO = batchify_text_generator(_echo)


def test_continuous_cut_longer_than_list_divides_by_the_cut() -> None:
    """P_5 over 3 documents is sum/5 and success_5 their max; the reference raises KeyError."""
    retrieval = {"q": ["a", "b", "c"]}
    expected = {"q": ["x"]}
    metric = _labelled({"a": 0.5, "b": 1, "c": 0})
    with pytest.raises(KeyError):
        erag.eval(retrieval, expected, ECHO, metric, {"P_5"})
    result = erag_score(retrieval, expected, ECHO, metric, {"P_5", "success_5"})
    assert result["per_input"]["q"] == {"P_5": pytest.approx(0.3), "success_5": 1}


def test_binary_cut_longer_than_list_is_trec_eval() -> None:
    """With 0/1 labels a short list is trec_eval's business: P_5 over 2 documents divides by 5."""
    result = erag_score(
        {"q": ["a", "b"]}, {"q": ["x"]}, ECHO, _labelled({"a": 1, "b": 0}), {"P_5", "success_5"}
    )
    assert result["per_input"]["q"] == {"P_5": pytest.approx(0.2), "success_5": 1.0}


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, math.inf])
def test_label_outside_unit_interval_names_query_and_document(bad: float) -> None:
    """A label outside [0, 1] (or NaN) is a ValueError naming the query and the document."""
    retrieval = {"first": ["fine", "ok"], "second": ["good", "the broken document"]}
    expected = {"first": ["x"], "second": ["x"]}
    table = {"fine": 1, "ok": 0, "good": 0.5, "the broken document": bad}
    with pytest.raises(ValueError, match=r"'second', document 1 \('the broken document'\)"):
        erag_score(retrieval, expected, ECHO, _labelled(table), {"P_1"})


def test_reference_accepts_nan_labels_silently() -> None:
    """The reference lets a NaN label through to its results (why we check labels ourselves)."""
    result = erag.eval({"q": ["a"]}, {"q": ["x"]}, ECHO, _labelled({"a": math.nan}), {"P_1"})
    assert math.isnan(result["aggregated"]["P_1"])


def test_non_numeric_label_is_a_type_error() -> None:
    """A downstream metric returning a non-number fails naming the query."""
    with pytest.raises(TypeError, match=r"str 'yes' for query 'q', document 0"):
        erag_score({"q": ["a"]}, {"q": ["x"]}, ECHO, _labelled({"a": "yes"}), {"P_1"})  # type: ignore[dict-item]


def test_mismatched_keys_name_the_missing_queries() -> None:
    """Key mismatches name the queries missing on each side (the reference only asserts)."""
    retrieval = {"shared": ["a"], "only retrieved": ["b"]}
    expected = {"shared": ["x"], "only expected": ["y"]}
    with pytest.raises(AssertionError):
        erag.eval(retrieval, expected, ECHO, _labelled({"a": 1, "b": 1}), {"P_1"})
    with pytest.raises(ValueError, match="only retrieved") as raised:
        erag_score(retrieval, expected, ECHO, _labelled({"a": 1, "b": 1}), {"P_1"})
    message = str(raised.value)
    assert "without expected outputs: ['only retrieved']" in message
    assert "without retrieval results: ['only expected']" in message


@pytest.mark.parametrize("measure", ["P", "success", "recall"])
def test_metric_without_cut_works_in_binary_mode(measure: str) -> None:
    """`P`/`success`/`recall` in binary mode are cut at each list's length; the reference fails."""
    retrieval = {"short": ["r", "n"], "long": ["n", "n", "r", "n", "n"]}
    expected = {"short": ["x"], "long": ["x"]}
    metric = _labelled({"r": 1, "n": 0})
    with pytest.raises(KeyError):
        erag.eval(retrieval, expected, ECHO, metric, {measure})
    ours = erag_score(retrieval, expected, ECHO, metric, {measure})["per_input"]
    short = erag.eval(
        {"short": retrieval["short"]}, {"short": ["x"]}, ECHO, metric, {f"{measure}_2"}
    )
    long = erag.eval({"long": retrieval["long"]}, {"long": ["x"]}, ECHO, metric, {f"{measure}_5"})
    assert ours["short"][measure] == short["per_input"]["short"][f"{measure}_2"]
    assert ours["long"][measure] == long["per_input"]["long"][f"{measure}_5"]


def test_metric_without_cut_means_the_same_in_both_modes() -> None:
    """Bare `P` and `success` agree between 0/1 labels (trec_eval) and the continuous code."""
    labels = {"a": [1, 0, 0, 1], "b": [0, 0], "c": [1]}
    binary = score_relevance_labels(labels, ["P", "success"])
    nudged = {**labels, "d": [0.5]}  # one fractional label switches everything to continuous
    continuous = score_relevance_labels(nudged, ["P", "success"])
    for query in labels:
        assert binary["per_input"][query] == pytest.approx(continuous["per_input"][query])


def test_recall_stays_binary_only() -> None:
    """Continuous labels still allow only P and success; the error says so."""
    with pytest.raises(ValueError, match="only P and success"):
        score_relevance_labels({"q": [0.5, 1]}, ["P_1", "recall", "map"])


def test_empty_ranked_list_scores_zero() -> None:
    """A query that retrieved nothing scores 0 on every metric; the reference drops it."""
    retrieval = {"empty": [], "full": ["r", "n"]}
    expected = {"empty": ["x"], "full": ["x"]}
    metric = _labelled({"r": 1, "n": 0})
    reference = erag.eval(retrieval, expected, ECHO, metric, {"P_1", "map"})
    assert "empty" not in reference["per_input"]
    ours = erag_score(retrieval, expected, ECHO, metric, {"P_1", "map", "success"})
    assert ours["per_input"]["empty"] == {"P_1": 0.0, "map": 0.0, "success": 0.0}
    assert ours["aggregated"]["P_1"] == pytest.approx(0.5)


def test_unknown_metric_fails_before_any_generation() -> None:
    """A misspelt trec_eval metric is rejected before the generator is called."""
    calls: list[Any] = []

    def generator(inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        calls.append(inputs)
        return {query: docs[0] for query, docs in inputs.items()}

    with pytest.raises(ValueError, match="unsupported measure ndcg@5"):
        erag_score({"q": ["a"]}, {"q": ["x"]}, generator, "contains", ["P_1", "ndcg@5"])
    assert calls == []


def test_generator_missing_a_query_is_named() -> None:
    """A text generator that drops a query fails naming it and the rank."""

    def generator(inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        return {query: docs[0] for query, docs in inputs.items() if query != "lost"}

    with pytest.raises(ValueError, match=r"text_generator .* rank 0: missing \['lost'\]"):
        erag_score(
            {"q": ["a"], "lost": ["b"]}, {"q": ["x"], "lost": ["y"]}, generator, "contains", ["P_1"]
        )


def test_one_string_as_metric_set_is_rejected() -> None:
    """`retrieval_metrics="P_5"` (a str, not a set) is a TypeError, not five one-letter metrics."""
    with pytest.raises(TypeError, match="not one str"):
        erag_score({"q": ["a"]}, {"q": ["x"]}, ECHO, "contains", "P_5")
