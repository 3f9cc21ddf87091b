"""Every statistic of `groundwire calibrate` equals scikit-learn's or SciPy's on the same data."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix, roc_curve

from groundwire.calibrate import (
    accuracy,
    best_thresholds,
    bootstrap_interval,
    cohen_kappa,
    confusion,
    pearson,
    resample_indices,
    spearman,
)


def _pairs(k: int) -> st.SearchStrategy[tuple[list[int], list[int]]]:
    """Two equally long lists of categories 0..k-1 (human, judge)."""
    return st.integers(2, 60).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, k - 1), min_size=n, max_size=n),
            st.lists(st.integers(0, k - 1), min_size=n, max_size=n),
        )
    )


def _sklearn_kappa(y: list[int], p: list[int], k: int, weights: str | None) -> float:
    """scikit-learn's kappa over the full category set (NaN where it is undefined)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(y, p, labels=list(range(k)), weights=weights))


def _same(ours: float, theirs: float) -> bool:
    """Equal to 1e-9, or both undefined."""
    if math.isnan(theirs) or math.isnan(ours):
        return math.isnan(theirs) and math.isnan(ours)
    return abs(ours - theirs) < 1e-9


@settings(max_examples=150, deadline=None)
@given(_pairs(2))
def test_kappa_binary(pair: tuple[list[int], list[int]]) -> None:
    """Unweighted kappa of pass/fail labels equals `cohen_kappa_score`."""
    y, p = pair
    assert _same(float(cohen_kappa(np.array(y), np.array(p), 2)), _sklearn_kappa(y, p, 2, None))


@settings(max_examples=150, deadline=None)
@given(_pairs(3))
def test_kappa_quadratic(pair: tuple[list[int], list[int]]) -> None:
    """Quadratic-weighted kappa of 0/1/2 labels equals `cohen_kappa_score(weights='quadratic')`,
    and the unweighted one equals the unweighted oracle."""
    y, p = pair
    ours = float(cohen_kappa(np.array(y), np.array(p), 3, quadratic=True))
    assert _same(ours, _sklearn_kappa(y, p, 3, "quadratic"))
    assert _same(float(cohen_kappa(np.array(y), np.array(p), 3)), _sklearn_kappa(y, p, 3, None))


@settings(max_examples=100, deadline=None)
@given(_pairs(3))
def test_confusion_and_accuracy(pair: tuple[list[int], list[int]]) -> None:
    """The confusion matrix equals `confusion_matrix` (rows human), accuracy its diagonal share."""
    y, p = pair
    ours = confusion(np.array(y), np.array(p), 3)
    assert (ours == confusion_matrix(y, p, labels=[0, 1, 2])).all()
    assert float(accuracy(np.array(y), np.array(p))) == pytest.approx(np.trace(ours) / len(y))


_unit = st.floats(0.0, 1.0, allow_nan=False).map(lambda v: round(v, 3))


@settings(max_examples=150, deadline=None)
@given(
    st.integers(3, 50).flatmap(lambda n: st.tuples(*(st.lists(_unit, min_size=n, max_size=n),) * 2))
)
def test_correlations(pair: tuple[list[float], list[float]]) -> None:
    """Pearson and Spearman equal SciPy's `pearsonr` / `spearmanr` (NaN for a constant side)."""
    x, y = (np.array(side) for side in pair)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        their_r = (
            float(scipy_stats.pearsonr(x, y).statistic) if np.ptp(x) and np.ptp(y) else math.nan
        )
        their_rho = float(scipy_stats.spearmanr(x, y).statistic)
    assert _same(float(pearson(x, y)), their_r) or abs(float(pearson(x, y)) - their_r) < 1e-7
    ours_rho = float(spearman(x, y))
    assert _same(ours_rho, their_rho) or abs(ours_rho - their_rho) < 1e-7


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 60).flatmap(
        lambda n: st.tuples(
            st.lists(
                st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.9]), min_size=n, max_size=n
            ),
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
        )
    )
)
def test_best_threshold_matches_roc(pair: tuple[list[float], list[int]]) -> None:
    """The best threshold's accuracy is the best over `roc_curve`'s thresholds (tpr and fpr)."""
    scores, labels = np.array(pair[0]), np.array(pair[1])
    assume(0 < labels.sum() < len(labels))
    threshold, right = best_thresholds(scores, labels, np.unique(scores))
    fpr, tpr, cuts = roc_curve(labels, scores, drop_intermediate=False)
    positives, negatives = labels.sum(), len(labels) - labels.sum()
    finite = np.isfinite(cuts)
    their = ((tpr * positives + (1 - fpr) * negatives) / len(labels))[finite]
    assert float(right) == pytest.approx(float(their.max()))
    assert float(accuracy(labels, (scores >= float(threshold)).astype(int))) == pytest.approx(
        float(right)
    )


def test_bootstrap_resamples_are_sklearn_kappas() -> None:
    """The interval is the percentile interval of scikit-learn's kappa over the same resamples."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 80)
    p = np.where(rng.random(80) < 0.7, y, rng.integers(0, 3, 80))
    indices = resample_indices(80, 500, seed=3)
    low, high = bootstrap_interval(
        lambda a, b: cohen_kappa(a, b, 3, quadratic=True), y, p, indices=indices
    )
    theirs = [_sklearn_kappa(list(y[i]), list(p[i]), 3, "quadratic") for i in indices]
    theirs_kept = np.array([value for value in theirs if not math.isnan(value)])
    assert (low, high) == pytest.approx(tuple(np.percentile(theirs_kept, [2.5, 97.5])))


def test_bootstrap_agrees_with_scipy() -> None:
    """On one data set the interval is within 0.04 of `scipy.stats.bootstrap`'s percentile one."""
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 120)
    p = np.where(rng.random(120) < 0.8, y, 1 - y)
    ours = bootstrap_interval(
        lambda a, b: cohen_kappa(a, b, 2), y, p, indices=resample_indices(120, 1500, seed=1)
    )
    theirs = scipy_stats.bootstrap(
        (y, p),
        lambda a, b: cohen_kappa_score(a, b),
        paired=True,
        vectorized=False,
        n_resamples=1500,
        method="percentile",
        rng=np.random.default_rng(2),
    ).confidence_interval
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.04)


def test_undefined_interval() -> None:
    """A statistic undefined on every resample (one category only) has no interval."""
    y = np.zeros(10, dtype=int)
    assert bootstrap_interval(
        lambda a, b: cohen_kappa(a, b, 2), y, y, indices=resample_indices(10, 50)
    ) == (None, None)
