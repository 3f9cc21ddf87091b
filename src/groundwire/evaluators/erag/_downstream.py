"""Downstream metrics: how well one generated output matches a list of gold answers, in [0, 1].

Each metric takes `(output, gold_answers)` and returns the best score over the gold answers, the
shape the reference's `batchify_downstream_metric` expects. Text is compared after SQuAD-style
normalisation (`normalize_answer`): lower case, punctuation and the articles a/an/the removed,
whitespace collapsed.

- `exact_match`: 1.0 when the normalised output equals a normalised gold answer, else 0.0.
- `token_f1`: SQuAD token F1, `2PR / (P + R)` over the multiset of normalised tokens.
- `contains`: 1.0 when a normalised gold answer occurs in the normalised output as whole words.
- `rouge_l`: ROUGE-L F1, `2PR / (P + R)` with `P = LCS / len(output)`, `R = LCS / len(gold)`,
  the longest common token subsequence computed by `rapidfuzz.distance.LCSseq`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

from rapidfuzz.distance import LCSseq

__all__ = [
    "DOWNSTREAM_METRICS",
    "BatchDownstreamMetric",
    "DownstreamMetric",
    "batchify_downstream_metric",
    "contains",
    "exact_match",
    "normalize_answer",
    "resolve_downstream_metric",
    "rouge_l",
    "token_f1",
]

DownstreamMetric: TypeAlias = Callable[[str, Sequence[str]], float]
"""Scores one output against its gold answers: `(output, gold_answers) -> float in [0, 1]`."""

BatchDownstreamMetric: TypeAlias = Callable[
    [Mapping[str, str], Mapping[str, Sequence[str]]], Mapping[str, float]
]
"""The reference's batch form: `(query -> output, query -> gold answers) -> query -> score`."""

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, delete punctuation, articles to spaces, collapse spaces.

    Beyond SQuAD's ASCII set, Unicode punctuation (category P*: curly quotes, dashes) is deleted.
    """
    lowered = text.lower()
    kept = "".join(
        ch
        for ch in lowered
        if ch not in _PUNCTUATION and not unicodedata.category(ch).startswith("P")
    )
    return " ".join(_ARTICLES.sub(" ", kept).split())


def _golds(gold_answers: Sequence[str], metric: str) -> Sequence[str]:
    """The gold answers as a sequence (a lone str is one answer); empty is an error."""
    if isinstance(gold_answers, str):
        return (gold_answers,)
    if len(gold_answers) == 0:
        raise ValueError(f"{metric}: no gold answers to compare with (got an empty list)")
    return gold_answers


def exact_match(output: str, gold_answers: Sequence[str]) -> float:
    """1.0 when the normalised output equals any normalised gold answer, else 0.0."""
    normalised = normalize_answer(output)
    golds = _golds(gold_answers, "exact_match")
    return float(any(normalised == normalize_answer(gold) for gold in golds))


def _f1(predicted: Sequence[str], gold: Sequence[str], overlap: int) -> float:
    """F1 of an overlap count between two token lists (both empty counts as a match)."""
    if not predicted or not gold:
        return float(len(predicted) == len(gold))
    if overlap == 0:
        return 0.0
    precision = overlap / len(predicted)
    recall = overlap / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(output: str, gold_answers: Sequence[str]) -> float:
    """Best SQuAD token F1 of the output against any gold answer (both empty counts as 1.0)."""
    predicted = normalize_answer(output).split()
    best = 0.0
    for gold in _golds(gold_answers, "token_f1"):
        tokens = normalize_answer(gold).split()
        overlap = sum((Counter(predicted) & Counter(tokens)).values())
        best = max(best, _f1(predicted, tokens, overlap))
    return best


def contains(output: str, gold_answers: Sequence[str]) -> float:
    """1.0 when any non-empty normalised gold answer occurs in the normalised output as words.

    Matching is on word boundaries ("cat" is not inside "concatenate"); a gold answer that
    normalises to nothing (e.g. "the") never matches.
    """
    haystack = f" {normalize_answer(output)} "
    for gold in _golds(gold_answers, "contains"):
        needle = normalize_answer(gold)
        if needle and f" {needle} " in haystack:
            return 1.0
    return 0.0


def rouge_l(output: str, gold_answers: Sequence[str]) -> float:
    """Best ROUGE-L F1 (longest common token subsequence) of the output against any gold answer."""
    predicted = normalize_answer(output).split()
    best = 0.0
    for gold in _golds(gold_answers, "rouge_l"):
        tokens = normalize_answer(gold).split()
        lcs = int(LCSseq.similarity(predicted, tokens)) if predicted and tokens else 0
        best = max(best, _f1(predicted, tokens, lcs))
    return best


DOWNSTREAM_METRICS: dict[str, DownstreamMetric] = {
    "exact_match": exact_match,
    "token_f1": token_f1,
    "contains": contains,
    "rouge_l": rouge_l,
}
"""Built-in downstream metrics by name (what `ERAG(metric=...)` and `erag_score` accept)."""


def resolve_downstream_metric(metric: str | DownstreamMetric) -> DownstreamMetric:
    """A built-in metric by name, or the callable itself; unknown names list the known ones."""
    if isinstance(metric, str):
        found = DOWNSTREAM_METRICS.get(metric)
        if found is None:
            known = ", ".join(sorted(DOWNSTREAM_METRICS))
            raise ValueError(f"unknown downstream metric {metric!r}; known metrics: {known}")
        return found
    if not callable(metric):
        raise TypeError(
            f"downstream metric must be a name or a callable, got {type(metric).__name__}"
        )
    return metric


def batchify_downstream_metric(metric: str | DownstreamMetric) -> BatchDownstreamMetric:
    """Turn a per-output metric into the reference's batch form (as `erag.utils` does)."""
    single = resolve_downstream_metric(metric)

    def batched(
        generated: Mapping[str, str], expected: Mapping[str, Sequence[str]]
    ) -> dict[str, float]:
        return {query: single(output, expected[query]) for query, output in generated.items()}

    batched.__name__ = f"batched_{getattr(single, '__name__', 'metric')}"
    return batched
