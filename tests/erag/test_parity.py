"""`erag_score` gives the reference `erag.eval`'s numbers on generated inputs (seeded).

The reference package (`erag==0.0.1`, installed without dependencies beside pytrec-eval-terrier)
is the oracle. Inputs avoid only the documented divergences (lists shorter than a continuous
cut, metrics without a cut in binary mode, empty lists), which `test_divergences.py` covers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

erag = pytest.importorskip("erag")
erag_utils = pytest.importorskip("erag.utils")

from groundwire.evaluators import (  # noqa: E402
    batchify_downstream_metric,
    batchify_text_generator,
    contains,
    erag_score,
    exact_match,
    rouge_l,
    token_f1,
)

VOCAB = [
    "paris",
    "london",
    "berlin",
    "rome",
    "madrid",
    "lisbon",
    "river",
    "bridge",
    "tower",
    "museum",
    "castle",
    "harbour",
]

BINARY_METRIC_SETS = [
    {"P_1", "P_3", "P_10"},
    {"map", "recip_rank", "ndcg", "ndcg_cut_5"},
    {"success_1", "success_5", "recall_3", "recall_10"},
    {"P_5", "map", "ndcg_cut_10", "recip_rank", "success_3", "Rprec", "bpref"},
]
CONTINUOUS_METRIC_SETS = [
    {"P_1", "P_2"},
    {"success_1", "success_2"},
    {"P", "success", "P_2", "success_1"},
]


def _corpus(seed: int, queries: int, depth: tuple[int, int]) -> tuple[dict[str, list[str]], ...]:
    """Random ranked lists of short documents and gold answers drawn from a small vocabulary."""
    rng = random.Random(seed)
    retrieval: dict[str, list[str]] = {}
    expected: dict[str, list[str]] = {}
    for index in range(queries):
        query = f"question {index} {rng.choice(VOCAB)}?"
        retrieval[query] = [
            " ".join(rng.choices(VOCAB, k=rng.randint(1, 6))) for _ in range(rng.randint(*depth))
        ]
        expected[query] = rng.sample(VOCAB, k=rng.randint(1, 2))
    return retrieval, expected


def _echo(query: str, documents: Sequence[str]) -> str:
    """A generator that answers with the document itself: labels then depend on the documents."""
    return documents[0]


def _both(
    retrieval: Mapping[str, list[str]],
    expected: Mapping[str, list[str]],
    metric: Callable[[str, Sequence[str]], float],
    metrics: set[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    reference = erag.eval(
        retrieval,
        expected,
        erag_utils.batchify_text_generator(_echo),
        erag_utils.batchify_downstream_metric(metric),
        metrics,
    )
    ours = erag_score(
        retrieval,
        expected,
        batchify_text_generator(_echo),
        batchify_downstream_metric(metric),
        metrics,
    )
    return reference, ours


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metrics", BINARY_METRIC_SETS, ids=lambda m: "+".join(sorted(m)))
@pytest.mark.parametrize("metric", [contains, exact_match], ids=lambda f: f.__name__)
def test_binary_labels_match_reference(
    seed: int, metrics: set[str], metric: Callable[[str, Sequence[str]], float]
) -> None:
    """With 0/1 labels, per-query and aggregated values equal the reference's exactly."""
    retrieval, expected = _corpus(seed, queries=12, depth=(1, 8))
    reference, ours = _both(retrieval, expected, metric, metrics)
    assert ours == reference
    assert set(ours["aggregated"]) == metrics


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metrics", CONTINUOUS_METRIC_SETS, ids=lambda m: "+".join(sorted(m)))
@pytest.mark.parametrize("metric", [token_f1, rouge_l], ids=lambda f: f.__name__)
def test_continuous_labels_match_reference(
    seed: int, metrics: set[str], metric: Callable[[str, Sequence[str]], float]
) -> None:
    """With labels in (0, 1), P and success (cut or not) equal the reference's exactly."""
    retrieval, expected = _corpus(seed, queries=12, depth=(2, 8))
    reference, ours = _both(retrieval, expected, metric, metrics)
    labels = [metric(doc, expected[query]) for query, docs in retrieval.items() for doc in docs]
    assert any(0 < label < 1 for label in labels), "the inputs must really be continuous"
    assert ours == reference


def test_hand_written_continuous_labels_match_reference() -> None:
    """Arbitrary fractional labels from a user's metric give the reference's numbers."""
    rng = random.Random(7)
    retrieval = {f"q{i}": [f"doc {i}.{j}" for j in range(rng.randint(3, 9))] for i in range(20)}
    expected = {query: ["unused"] for query in retrieval}
    documents = [doc for docs in retrieval.values() for doc in docs]
    table = {doc: rng.choice([0, 1, 0.25, rng.random()]) for doc in documents}

    def metric(generated: Mapping[str, str], gold: Mapping[str, Any]) -> dict[str, float]:
        return {query: table[output] for query, output in generated.items()}

    metrics = {"P_1", "P_3", "success_2", "P", "success"}
    generator = erag_utils.batchify_text_generator(_echo)
    reference = erag.eval(retrieval, expected, generator, metric, metrics)
    assert erag_score(retrieval, expected, generator, metric, metrics) == reference


def test_generator_and_metric_are_called_as_the_reference_calls_them() -> None:
    """The text generator and downstream metric see the same per-rank batches, in order."""
    retrieval, expected = _corpus(3, queries=5, depth=(1, 5))
    seen: dict[str, list[Any]] = {"reference": [], "ours": []}

    def recorder(key: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
        def generate(inputs: Mapping[str, list[str]]) -> dict[str, str]:
            seen[key].append(("generate", dict(inputs)))
            return {query: docs[0] for query, docs in inputs.items()}

        def score(generated: Mapping[str, str], gold: Mapping[str, Any]) -> dict[str, float]:
            seen[key].append(("score", dict(generated), dict(gold)))
            return {query: contains(out, gold[query]) for query, out in generated.items()}

        return generate, score

    erag.eval(retrieval, expected, *recorder("reference"), {"P_1"})
    erag_score(retrieval, expected, *recorder("ours"), {"P_1"})
    assert seen["ours"] == seen["reference"]
    assert len(seen["ours"]) == 2 * max(len(docs) for docs in retrieval.values())


def test_batchify_helpers_match_reference() -> None:
    """Our batchify helpers give the reference helpers' outputs for the same functions."""
    inputs = {"q1": ["a document"], "q2": ["another one"]}

    def answer(query: str, documents: Sequence[str]) -> str:
        return f"{query}: {documents[0]}"

    assert batchify_text_generator(answer)(inputs) == erag_utils.batchify_text_generator(answer)(
        inputs
    )
    generated = {"q1": "the Paris", "q2": "rome"}
    gold = {"q1": ["paris"], "q2": ["Madrid", "rome!"]}
    assert batchify_downstream_metric(exact_match)(
        generated, gold
    ) == erag_utils.batchify_downstream_metric(exact_match)(generated, gold)
