"""Retrieval metrics over per-document relevance labels, in trec_eval naming.

Binary labels (every label 0 or 1) go through trec_eval itself (`pytrec_eval`, provided by
`pytrec-eval-terrier`): any measure it supports, named `measure` or `measure_k` with a cut
(`P_5`, `success_1`, `recall_10`, `ndcg_cut_3`, `map`, `recip_rank`, `ndcg`). Continuous labels
allow only `P` and `success`, as the reference does:

- `P_k = sum(label[i] for i < k) / k` (trec_eval divides by k even when fewer than k were ranked),
- `success_k = max(label[i] for i < k)` (0 when nothing was ranked).

A cut measure named without a cut (`P`, `success`, `recall`, `ndcg_cut`, `map_cut`) is cut at
the length of each query's own ranked list, in both modes.
"""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CONTINUOUS_MEASURES",
    "LIST_CUT_MEASURES",
    "RetrievalMetric",
    "aggregate",
    "check_label",
    "metric_keys",
    "parse_retrieval_metrics",
    "score_labels",
]

CONTINUOUS_MEASURES = frozenset({"P", "success"})
"""Measures defined for continuous labels (the reference's choice)."""

LIST_CUT_MEASURES = frozenset({"P", "success", "recall", "ndcg_cut", "map_cut"})
"""Cut measures that, named without a cut, are cut at each query's list length."""

_WITH_CUT = re.compile(r"^(?P<measure>.+)_(?P<cut>\d+)$")

Label = int | float
"""A relevance label: 0 or 1 (kept as int, as trec_eval needs), or a float in (0, 1)."""


@dataclass(frozen=True, slots=True)
class RetrievalMetric:
    """One requested metric: its name (the key in the results), trec_eval measure and cut."""

    name: str
    measure: str
    cut: int | None

    @property
    def cut_at_list_length(self) -> bool:
        """True for a cut measure named without a cut (`P`, `success`, ...)."""
        return self.cut is None and self.measure in LIST_CUT_MEASURES


def parse_retrieval_metrics(metrics: Iterable[str]) -> tuple[RetrievalMetric, ...]:
    """Parse trec_eval metric names (`map`, `P_5`, `ndcg_cut_10`); duplicates are dropped.

    Checks the names against trec_eval when `pytrec_eval` is installed, so a typo fails before
    any model is called.
    """
    if isinstance(metrics, str):
        raise TypeError(f"retrieval_metrics must be a collection of names, not one str {metrics!r}")
    parsed: dict[str, RetrievalMetric] = {}
    for name in metrics:
        if not isinstance(name, str) or not name:
            raise ValueError(f"retrieval metric names must be non-empty strings, got {name!r}")
        match = _WITH_CUT.match(name)
        if match is None:
            parsed[name] = RetrievalMetric(name, name, None)
            continue
        cut = int(match["cut"])
        if cut < 1:
            raise ValueError(f"retrieval metric {name!r}: the cut must be at least 1")
        parsed[name] = RetrievalMetric(name, match["measure"], cut)
    if not parsed:
        raise ValueError("retrieval_metrics is empty: name at least one metric, e.g. 'P_5'")
    result = tuple(parsed.values())
    if _pytrec_eval_or_none() is not None:
        _trec_keys(frozenset(m.name for m in result if not m.cut_at_list_length))
        _trec_keys(frozenset(f"{m.measure}_1" for m in result if m.cut_at_list_length))
    return result


def metric_keys(metric: RetrievalMetric) -> tuple[str, ...]:
    """The result keys one metric produces: its own name, or several (`iprec_at_recall`)."""
    if metric.cut_at_list_length or _pytrec_eval_or_none() is None:
        return (metric.name,)
    return _trec_keys(frozenset({metric.name}))


def check_label(value: Any, query: str, position: int, document: str | None = None) -> Label:
    """A downstream score as a relevance label: 0 and 1 become int; else a float in (0, 1).

    Raises ValueError naming the query and document for NaN or a value outside [0, 1].
    """
    where = f"query {query!r}, document {position}"
    if document is not None:
        snippet = document if len(document) <= 60 else document[:57] + "..."
        where += f" ({snippet!r})"
    if not isinstance(value, numbers.Real):
        raise TypeError(
            f"the downstream metric returned {type(value).__name__} {value!r} for {where}; "
            "expected a number in [0, 1]"
        )
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise ValueError(
            f"the downstream metric returned {value!r} for {where}; labels must be in [0, 1]"
        )
    if number in (0.0, 1.0):
        return int(number)
    return value  # type: ignore[return-value]  # a Real in (0, 1), kept as given (as the reference)


@functools.cache
def _pytrec_eval_or_none() -> Any:
    """The `pytrec_eval` module, or None when it is not installed."""
    try:
        import pytrec_eval  # lazy: only binary labels need trec_eval
    except ImportError:
        return None
    return pytrec_eval


def _pytrec_eval() -> Any:
    """The `pytrec_eval` module, or an ImportError saying which extra to install."""
    module = _pytrec_eval_or_none()
    if module is None:
        raise ImportError(
            "binary eRAG labels are scored by trec_eval through pytrec_eval: "
            "pip install 'groundwire[erag]' (pytrec-eval-terrier)"
        )
    return module


@functools.cache
def _trec_keys(names: frozenset[str]) -> tuple[str, ...]:
    """The result keys trec_eval gives for `names` (checks them: unknown names raise)."""
    if not names:
        return ()
    pytrec_eval = _pytrec_eval()
    try:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, set(names))
    except ValueError as error:
        known = ", ".join(sorted(pytrec_eval.supported_measures))
        raise ValueError(
            f"{error} in retrieval metrics {sorted(names)}; use trec_eval names, a measure or "
            f"measure_k with a cut (P_5, ndcg_cut_10). Measures: {known}"
        ) from error
    return tuple(evaluator.evaluate({"q": {"d": 1}})["q"])


def _binary(
    labels: Mapping[str, Sequence[Label]], metrics: Sequence[RetrievalMetric]
) -> dict[str, dict[str, float]]:
    """Metrics from 0/1 labels through trec_eval; empty lists score 0."""
    pytrec_eval = _pytrec_eval()
    ranked = {query: ls for query, ls in labels.items() if ls}
    qrel = {q: {str(j): int(label) for j, label in enumerate(ls)} for q, ls in ranked.items()}
    run = {q: {str(j): len(ls) - j for j in range(len(ls))} for q, ls in ranked.items()}
    plain = frozenset(m.name for m in metrics if not m.cut_at_list_length)
    at_length = [m for m in metrics if m.cut_at_list_length]
    # a query with nothing ranked retrieved nothing useful: every metric is 0
    results: dict[str, dict[str, float]] = {
        query: ({} if ls else dict.fromkeys(_trec_keys(plain), 0.0)) for query, ls in labels.items()
    }
    if plain and ranked:
        evaluated = pytrec_eval.RelevanceEvaluator(qrel, set(plain)).evaluate(run)
        for query in ranked:
            results[query].update(evaluated[query])
    if at_length:
        cuts = ",".join(str(n) for n in sorted({len(ls) for ls in ranked.values()}))
        measures = {f"{m.measure}.{cuts}" for m in at_length}
        evaluated = pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run) if ranked else {}
        for query, ls in labels.items():
            for metric in at_length:
                key = f"{metric.measure}_{len(ls)}"
                results[query][metric.name] = evaluated[query][key] if ls else 0.0
    return results


def _continuous(
    labels: Mapping[str, Sequence[Label]], metrics: Sequence[RetrievalMetric]
) -> dict[str, dict[str, float]]:
    """P and success from continuous labels, cut as trec_eval cuts (divide by k)."""
    unsupported = [m.name for m in metrics if m.measure not in CONTINUOUS_MEASURES]
    if unsupported:
        raise ValueError(
            f"retrieval metric(s) {unsupported} need binary labels, but the downstream metric "
            "gave continuous ones; with continuous labels only P and success (with or without a "
            "cut, e.g. P_5, success_1) are defined"
        )
    results: dict[str, dict[str, float]] = {}
    for query, ls in labels.items():
        results[query] = {}
        for metric in metrics:
            cut = metric.cut if metric.cut is not None else len(ls)
            window = ls[:cut]
            value: float = 0
            if metric.measure == "success":
                for label in window:
                    value = max(value, label)
            else:
                for label in window:
                    value += label
                value = value / cut if cut else 0.0
            results[query][metric.name] = value
    return results


def score_labels(
    labels: Mapping[str, Sequence[Label]], metrics: Sequence[RetrievalMetric]
) -> dict[str, dict[str, float]]:
    """Per-query metric values from checked labels (see `check_label`), in the labels' order.

    Binary labels when every label of every query is 0 or 1 (trec_eval), continuous otherwise.
    """
    binary = all(label in (0, 1) for ls in labels.values() for label in ls)
    return _binary(labels, metrics) if binary else _continuous(labels, metrics)


def aggregate(per_input: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The mean of each metric over the queries that have it (the reference's plain average)."""
    keys: dict[str, None] = {}
    for values in per_input.values():
        keys.update(dict.fromkeys(values))
    aggregated: dict[str, float] = {}
    for key in keys:
        column = [row[key] for row in per_input.values() if key in row]
        aggregated[key] = sum(column) / len(column)
    return aggregated
