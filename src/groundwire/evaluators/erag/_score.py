"""`erag_score`: the reference `erag.eval` contract (eRAG, SIGIR 2024), with its bugs fixed.

Each retrieved document alone is given to the text generator with its query; the output is scored
against the expected answers by the downstream metric; those scores are the documents' relevance
labels, and retrieval metrics over the labels are the result:

    {"per_input": {query: {metric: value}}, "aggregated": {metric: mean over queries}}

The generator is called once per rank position with every query that has a document there, and
the downstream metric once per position, exactly as the reference does (generate rank 0, score
it, generate rank 1, ...). A concurrent generator with `agenerate` (our adapters) has all ranks
generated at once, under its concurrency limit, and then scored rank by rank.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundwire._sync import run_sync
from groundwire.evaluators.erag._adapt import as_text_generator
from groundwire.evaluators.erag._downstream import (
    BatchDownstreamMetric,
    batchify_downstream_metric,
)
from groundwire.evaluators.erag._generators import (
    AsyncTextGenerator,
    BatchedGenerator,
    TextGenerator,
)
from groundwire.evaluators.erag._retrieval import (
    Label,
    RetrievalMetric,
    aggregate,
    check_label,
    parse_retrieval_metrics,
    score_labels,
)

__all__ = ["aerag_score", "erag_score", "score_relevance_labels"]

Positions = list[dict[str, list[str]]]


@dataclass(frozen=True)
class _Checked:
    """Validated inputs of one eRAG run, with the per-rank generator batches."""

    retrieval_results: Mapping[str, Sequence[str]]
    expected_outputs: Mapping[str, Any]
    downstream: BatchDownstreamMetric
    metrics: tuple[RetrievalMetric, ...]
    positions: Positions


def _check_keys(
    retrieval_results: Mapping[str, Sequence[str]], expected_outputs: Mapping[str, Any]
) -> None:
    """Raise naming the queries that only one of the two mappings has."""
    no_expected = [query for query in retrieval_results if query not in expected_outputs]
    no_results = [query for query in expected_outputs if query not in retrieval_results]
    if no_expected or no_results:
        parts = []
        if no_expected:
            parts.append(f"queries without expected outputs: {no_expected}")
        if no_results:
            parts.append(f"queries without retrieval results: {no_results}")
        raise ValueError(
            "the keys of retrieval_results and expected_outputs differ; " + "; ".join(parts)
        )


def _check_inputs(
    retrieval_results: Mapping[str, Sequence[str]],
    expected_outputs: Mapping[str, Any],
    downstream_metric: BatchDownstreamMetric | str,
    retrieval_metrics: Iterable[str],
) -> _Checked:
    """Validate every argument before any model is called."""
    for argument, value in (
        ("retrieval_results", retrieval_results),
        ("expected_outputs", expected_outputs),
    ):
        if not isinstance(value, Mapping):
            raise TypeError(f"{argument} must map each query to a list, got {type(value).__name__}")
    _check_keys(retrieval_results, expected_outputs)
    if not retrieval_results:
        raise ValueError("retrieval_results is empty: there is nothing to score")
    for query, documents in retrieval_results.items():
        if isinstance(documents, str) or not isinstance(documents, Sequence):
            raise TypeError(
                f"retrieval_results[{query!r}] must be a list of document texts, "
                f"got {type(documents).__name__}"
            )
    metrics = parse_retrieval_metrics(retrieval_metrics)
    downstream = (
        batchify_downstream_metric(downstream_metric)
        if isinstance(downstream_metric, str)
        else downstream_metric
    )
    if not callable(downstream):
        raise TypeError(
            f"downstream_metric must be callable, got {type(downstream_metric).__name__}"
        )
    depth = max(len(documents) for documents in retrieval_results.values())
    positions = [
        {query: [docs[i]] for query, docs in retrieval_results.items() if i < len(docs)}
        for i in range(depth)
    ]
    return _Checked(retrieval_results, expected_outputs, downstream, metrics, positions)


def _check_cover(what: str, position: int, wanted: Mapping[str, Any], got: Any) -> None:
    """Raise unless `got` is a mapping over exactly the queries of `wanted`."""
    if not isinstance(got, Mapping):
        raise TypeError(
            f"the {what} returned {type(got).__name__} at rank {position}; expected a dict "
            "of query -> value"
        )
    missing = [query for query in wanted if query not in got]
    extra = [query for query in got if query not in wanted]
    if missing or extra:
        raise ValueError(
            f"the {what} returned values for the wrong queries at rank {position}: "
            f"missing {missing}, unexpected {extra}"
        )


def _label_rank(
    checked: _Checked, position: int, generated: Any, labels: dict[str, list[Label]]
) -> None:
    """Score one rank's outputs with the downstream metric and append them to `labels`."""
    inputs = checked.positions[position]
    _check_cover("text_generator", position, inputs, generated)
    expected = {query: checked.expected_outputs[query] for query in inputs}
    scores = checked.downstream(generated, expected)
    _check_cover("downstream_metric", position, generated, scores)
    for query in inputs:
        document = checked.retrieval_results[query][position]
        labels[query].append(check_label(scores[query], query, position, document))


def _new_labels(checked: _Checked) -> dict[str, list[Label]]:
    """An empty label list per query."""
    return {query: [] for query in checked.retrieval_results}


def _finish(labels: Mapping[str, Sequence[Label]], checked: _Checked) -> dict[str, Any]:
    """Retrieval metrics over the labels, per query and aggregated."""
    per_input = score_labels(labels, checked.metrics)
    return {"per_input": per_input, "aggregated": aggregate(per_input)}


def _label_all(checked: _Checked, outputs: Sequence[Any]) -> dict[str, Any]:
    """Label every rank's outputs, in rank order, then compute the metrics."""
    labels = _new_labels(checked)
    for position, generated in enumerate(outputs):
        _label_rank(checked, position, generated, labels)
    return _finish(labels, checked)


async def _agenerate_all(generator: AsyncTextGenerator, positions: Positions) -> list[Any]:
    """Generate every rank at once (the generator's limit bounds the calls)."""
    return list(await asyncio.gather(*(generator.agenerate(inputs) for inputs in positions)))


def erag_score(
    retrieval_results: Mapping[str, Sequence[str]],
    expected_outputs: Mapping[str, Any],
    text_generator: TextGenerator | AsyncTextGenerator | Any,
    downstream_metric: BatchDownstreamMetric | str,
    retrieval_metrics: Iterable[str],
) -> dict[str, Any]:
    """eRAG scores of ranked lists: `{"per_input": {query: {metric: v}}, "aggregated": {...}}`.

    Arguments as the reference `erag.eval`: `retrieval_results` maps each query to its ranked
    document texts, `expected_outputs` each query to its gold outputs, `text_generator` maps
    `{query: [document]}` to `{query: output}`, `downstream_metric` maps (`{query: output}`,
    `{query: golds}`) to `{query: score in [0, 1]}` (or names a built-in, e.g. "token_f1"),
    and `retrieval_metrics` are trec_eval names (`P_5`, `map`, `ndcg_cut_10`, ...). A LangChain
    runnable or LlamaIndex LLM given as `text_generator` is wrapped in its adapter.
    """
    checked = _check_inputs(
        retrieval_results, expected_outputs, downstream_metric, retrieval_metrics
    )
    text_generator = as_text_generator(text_generator)
    if isinstance(text_generator, BatchedGenerator):
        if text_generator.concurrent:
            outputs = text_generator.run_sync(_agenerate_all(text_generator, checked.positions))
            return _label_all(checked, outputs)
    elif isinstance(text_generator, AsyncTextGenerator):
        return _label_all(checked, run_sync(_agenerate_all(text_generator, checked.positions)))
    labels = _new_labels(checked)  # one rank at a time, generate then score, as the reference
    for position, inputs in enumerate(checked.positions):
        _label_rank(checked, position, text_generator(inputs), labels)
    return _finish(labels, checked)


async def aerag_score(
    retrieval_results: Mapping[str, Sequence[str]],
    expected_outputs: Mapping[str, Any],
    text_generator: TextGenerator | AsyncTextGenerator | Any,
    downstream_metric: BatchDownstreamMetric | str,
    retrieval_metrics: Iterable[str],
) -> dict[str, Any]:
    """`erag_score` from async code; a sync `text_generator` runs in a worker thread."""
    checked = _check_inputs(
        retrieval_results, expected_outputs, downstream_metric, retrieval_metrics
    )
    text_generator = as_text_generator(text_generator)
    if isinstance(text_generator, AsyncTextGenerator) and getattr(
        text_generator, "concurrent", True
    ):
        return _label_all(checked, await _agenerate_all(text_generator, checked.positions))
    labels = _new_labels(checked)
    sync_generator: Any = text_generator
    for position, inputs in enumerate(checked.positions):
        _label_rank(checked, position, await asyncio.to_thread(sync_generator, inputs), labels)
    return _finish(labels, checked)


def score_relevance_labels(
    labels: Mapping[str, Sequence[float]], retrieval_metrics: Iterable[str]
) -> dict[str, Any]:
    """eRAG's last step alone: retrieval metrics over known per-document labels in [0, 1].

    `labels` maps each query to the labels of its ranked documents, best rank first. Returns the
    same `{"per_input": ..., "aggregated": ...}` as `erag_score`.
    """
    metrics = parse_retrieval_metrics(retrieval_metrics)
    checked = {
        query: [check_label(value, query, position) for position, value in enumerate(values)]
        for query, values in labels.items()
    }
    if not checked:
        raise ValueError("labels is empty: there is nothing to score")
    per_input = score_labels(checked, metrics)
    return {"per_input": per_input, "aggregated": aggregate(per_input)}
