"""The agreement statistics, each over the last axis so one call scores every bootstrap resample.

Inputs are arrays of shape (..., n): human labels `y` and judge values `p` for n turns; a
leading axis holds resamples. Formulas (as scikit-learn and SciPy define them; the tests use
those libraries as oracles):

* accuracy = mean(y == p)
* Cohen's kappa = 1 - sum(W * O) / sum(W * E), O the confusion matrix of counts, E the outer
  product of its marginals / n, W = 1 - I (unweighted) or (i - j)^2 (quadratic, for ordinal
  0/1/2 labels, so a 0 judged 2 costs four times a 0 judged 1); NaN when sum(W * E) is 0 (one
  category only: chance agreement is certain).
* Pearson's r; Spearman's rho = Pearson's r of the average ranks (ties share their mean rank).
* percentile bootstrap: resample turns with replacement, the 2.5th and 97.5th percentiles of
  the statistic over the resamples whose statistic is defined.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "RESAMPLES",
    "accuracy",
    "best_thresholds",
    "bootstrap_interval",
    "cohen_kappa",
    "confusion",
    "pearson",
    "resample_indices",
    "spearman",
]

RESAMPLES: Final = 2000
"""Bootstrap resamples per figure (the interval's endpoints move by about 0.01 between seeds)."""

Array = NDArray[Any]


def accuracy(y: Array, p: Array) -> Array:
    """Share of turns where the judge's category equals the human's."""
    return np.asarray(np.mean(np.asarray(y) == np.asarray(p), axis=-1))


def _counts(y: Array, p: Array, k: int) -> Array:
    """Confusion counts (..., k, k) of integer categories 0..k-1 (rows human, columns judge)."""
    y, p = np.asarray(y, dtype=np.int64), np.asarray(p, dtype=np.int64)
    lead = y.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    flat = (y * k + p).reshape(rows, -1) + (np.arange(rows) * k * k)[:, None]
    counts = np.bincount(flat.ravel(), minlength=rows * k * k)
    return counts.reshape(*lead, k, k)


def confusion(y: Array, p: Array, k: int) -> Array:
    """The k x k confusion matrix of one sample (rows human label, columns judge)."""
    return _counts(y, p, k)


def cohen_kappa(y: Array, p: Array, k: int, *, quadratic: bool = False) -> Array:
    """Cohen's kappa of categories 0..k-1, optionally quadratic-weighted; NaN when undefined."""
    observed = _counts(y, p, k).astype(np.float64)
    n = observed.sum(axis=(-2, -1), keepdims=True)
    expected = observed.sum(axis=-1, keepdims=True) * observed.sum(axis=-2, keepdims=True) / n
    grid = np.arange(k)
    weights = (
        (grid[:, None] - grid[None, :]) ** 2 if quadratic else 1 - np.eye(k, dtype=np.int64)
    ).astype(np.float64)
    disagree = (weights * observed).sum(axis=(-2, -1))
    chance = (weights * expected).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance > 0, 1.0 - disagree / np.where(chance > 0, chance, 1.0), np.nan)


def pearson(x: Array, y: Array) -> Array:
    """Pearson's correlation along the last axis; NaN when either side is constant."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    sxy = (dx * dy).sum(axis=-1)
    sxx = (dx * dx).sum(axis=-1)
    syy = (dy * dy).sum(axis=-1)
    # A constant side leaves rounding noise in its deviations: treat a tiny spread as none.
    tiny = 1e-12 * np.maximum(1.0, x.shape[-1])
    defined = (sxx > tiny) & (syy > tiny)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = sxy / np.sqrt(np.where(defined, sxx * syy, 1.0))
    return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)


def _ranks(x: Array) -> Array:
    """Average ranks along the last axis (SciPy's `rankdata`, method `average`)."""
    from scipy.stats import rankdata  # type: ignore[import-untyped,unused-ignore]

    return np.asarray(rankdata(x, axis=-1), dtype=np.float64)


def spearman(x: Array, y: Array) -> Array:
    """Spearman's rank correlation along the last axis (needs SciPy: the `calibrate` extra)."""
    return pearson(_ranks(x), _ranks(y))


def resample_indices(n: int, resamples: int = RESAMPLES, seed: int = 0) -> Array:
    """(resamples, n) turn indices drawn with replacement; the same seed draws the same ones."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap_interval(
    statistic: Callable[..., Array],
    *samples: Array,
    indices: Array,
    level: float = 0.95,
) -> tuple[float | None, float | None]:
    """The percentile interval of `statistic(*samples)` over the resamples `indices` draws.

    Resamples where the statistic is undefined (NaN: e.g. one category only) are left out;
    with none left the interval is (None, None).
    """
    values = statistic(*(np.asarray(sample)[indices] for sample in samples))
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None, None
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def best_thresholds(scores: Array, labels: Array, candidates: Array) -> tuple[Array, Array]:
    """For each row: the candidate t whose rule `score >= t -> pass` best matches binary labels.

    Returns (threshold, accuracy) per row; ties go to the lowest threshold. `candidates` must be
    sorted and hold every score value (each score maps to its candidate's index).
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    lead = scores.shape[:-1]
    rows = int(np.prod(lead)) if lead else 1
    n, t = scores.shape[-1], len(candidates)
    index = np.searchsorted(candidates, scores).reshape(rows, n) + (np.arange(rows) * t)[:, None]
    positive = labels.reshape(rows, n) == 1
    pos = np.bincount(index[positive], minlength=rows * t).reshape(rows, t)
    neg = np.bincount(index[~positive], minlength=rows * t).reshape(rows, t)
    # pass when score >= candidate j: positives at or above j, negatives below j are right.
    pos_at_or_above = pos[:, ::-1].cumsum(axis=1)[:, ::-1]
    neg_below = np.concatenate([np.zeros((rows, 1), np.int64), neg.cumsum(axis=1)[:, :-1]], 1)
    right = (pos_at_or_above + neg_below) / n
    best = right.argmax(axis=1)
    chosen = np.asarray(candidates)[best].reshape(lead)
    return chosen, right[np.arange(rows), best].reshape(lead)
