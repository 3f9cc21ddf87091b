"""How well one series of judge values agrees with one annotator's labels: every figure with its
bootstrap interval, the confusion matrix, the best pass threshold and the disagreements.

A judge value in [0, 1] is put on the labels' scale before it is compared: binary labels take
`value >= 0.5` as pass, ordinal 0/1/2 labels take `floor(2 * value + 0.5)` (a mean of the dual
judge's ratings 0 and 1, 0.25, rounds up to 1: halves round up). Continuous labels are compared
by correlation only. Pearson and Spearman are always given: they use the raw values.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from groundwire.calibrate import _stats as stats
from groundwire.calibrate._labels import Scale

__all__ = [
    "CATEGORIES",
    "Agreement",
    "Disagreement",
    "Figure",
    "Pair",
    "Threshold",
    "agreement",
    "figure",
    "on_scale",
]

CATEGORIES: Final[dict[str, tuple[str, ...]]] = {
    "binary": ("fail", "pass"),
    "ordinal": ("0", "1", "2"),
}
"""The category names of each categorical scale, in order."""


@dataclass(frozen=True, slots=True)
class Figure:
    """A statistic and its 95% bootstrap interval (None where undefined)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def contains(self, x: float) -> bool:
        """True when `x` lies in the interval."""
        return self.low is not None and self.high is not None and self.low <= x <= self.high


@dataclass(frozen=True, slots=True)
class Threshold:
    """The pass threshold (`value >= t`) that best matches binary labels, and its interval."""

    value: float
    low: float | None
    high: float | None
    accuracy: float


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled turn: the human label, the judge's value and what to show if they differ."""

    label: float
    value: float
    trace_id: str
    span_id: str
    query: str | None = None
    answer: str | None = None
    contexts: tuple[str, ...] = ()
    explanation: str | None = None
    where: str = ""


@dataclass(frozen=True, slots=True)
class Disagreement:
    """A turn where judge and human differ; `gap` is |value - label on [0, 1]|."""

    pair: Pair
    judged: str
    gap: float


@dataclass(frozen=True, slots=True)
class Agreement:
    """Judge-versus-human agreement of one series (evaluator, prompt, judge, annotator)."""

    evaluator: str
    scale: Scale
    n: int
    pearson: Figure
    spearman: Figure
    accuracy: Figure | None = None
    kappa: Figure | None = None
    weighting: str | None = None
    """`quadratic` for ordinal labels, `none` for binary ones, None for continuous ones."""
    confusion: list[list[int]] | None = None
    categories: tuple[str, ...] = ()
    threshold: Threshold | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    prompt: str | None = None
    """One of the dual judge's prompts, `mean` for their combined score, None otherwise."""
    judge: str | None = None
    annotator: str | None = None
    tokens: int | None = None
    """Judge tokens (input + output) spent on every turn of this judge's run."""
    unscored: int = 0
    """Labelled turns where the judge gave no value (an error or a skip): left out of `n`."""
    made_by: dict[str, list[str]] = field(default_factory=dict)
    """The scores' judge model and prompt hash (`groundwire.*` names), every value seen: more
    than one means the scores mix configurations."""


def on_scale(values: Any, scale: Scale) -> Any:
    """Judge values in [0, 1] as categories of the labels' scale (continuous: unchanged)."""
    values = np.asarray(values, dtype=np.float64)
    if scale == "binary":
        return (values >= 0.5).astype(np.int64)
    if scale == "ordinal":
        return np.floor(values * 2 + 0.5).astype(np.int64)
    return values


def figure(statistic: Any, samples: Sequence[Any], indices: Any) -> Figure:
    """The statistic on the data and its bootstrap interval."""
    value = float(statistic(*samples))
    low, high = stats.bootstrap_interval(statistic, *samples, indices=indices)
    return Figure(None if np.isnan(value) else value, low, high)


def _threshold(values: Any, labels: Any, indices: Any) -> Threshold:
    """The best pass threshold over the data, with the percentile interval of resamples' best."""
    candidates = np.unique(values)
    best, right = stats.best_thresholds(values, labels, candidates)
    resampled, _ = stats.best_thresholds(values[indices], labels[indices], candidates)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return Threshold(float(best), float(low), float(high), float(right))


def _disagreements(pairs: Sequence[Pair], scale: Scale, limit: int) -> list[Disagreement]:
    """The turns where the judge's category differs from the label, worst first."""
    top = 2.0 if scale == "ordinal" else 1.0
    out = []
    for pair in pairs:
        judged = on_scale([pair.value], scale)[0]
        if scale == "continuous":
            differs = abs(pair.value - pair.label) >= 0.5
            name = f"{pair.value:.2f}"
        else:
            differs = int(judged) != int(pair.label)
            name = CATEGORIES[scale][int(judged)]
        if differs:
            out.append(Disagreement(pair, name, abs(pair.value - pair.label / top)))
    out.sort(key=lambda d: (-d.gap, d.pair.trace_id, d.pair.span_id))
    return out[:limit]


def agreement(
    evaluator: str,
    scale: Scale,
    pairs: Sequence[Pair],
    *,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
    disagreements: int = 20,
    **names: Any,
) -> Agreement:
    """Every figure for `pairs` (at least one); `names` are `prompt`, `judge`, `annotator`,
    `tokens` as `Agreement` has them."""
    labels = np.array([pair.label for pair in pairs], dtype=np.float64)
    values = np.array([pair.value for pair in pairs], dtype=np.float64)
    indices = stats.resample_indices(len(pairs), resamples, seed)
    extra: dict[str, Any] = {}
    if scale != "continuous":
        k = len(CATEGORIES[scale])
        quadratic = scale == "ordinal"
        human, judged = labels.astype(np.int64), on_scale(values, scale)
        kappa = functools.partial(stats.cohen_kappa, k=k, quadratic=quadratic)
        extra = {
            "accuracy": figure(stats.accuracy, (human, judged), indices),
            "kappa": figure(kappa, (human, judged), indices),
            "weighting": "quadratic" if quadratic else "none",
            "confusion": stats.confusion(human, judged, k).tolist(),
            "categories": CATEGORIES[scale],
        }
        if scale == "binary":
            extra["threshold"] = _threshold(values, human, indices)
    return Agreement(
        evaluator=evaluator,
        scale=scale,
        n=len(pairs),
        pearson=figure(stats.pearson, (values, labels), indices),
        spearman=figure(stats.spearman, (values, labels), indices),
        disagreements=_disagreements(pairs, scale, disagreements),
        **extra,
        **names,
    )
