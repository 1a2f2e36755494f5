"""Stratified bootstrap: vectorised metrics equal scikit-learn, intervals behave."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from mcu_exp.evaluation import (
    DegenerateMetricWarning,
    alignment_metrics,
    bootstrap_ci,
    bootstrap_distribution,
    resample_metrics,
    stratified_indices,
)

SKLEARN = {
    "accuracy": accuracy_score,
    "precision": lambda y, p: precision_score(y, p, zero_division=0),
    "recall": lambda y, p: recall_score(y, p, zero_division=0),
    "f1": lambda y, p: f1_score(y, p, zero_division=0),
    "auc_binary": roc_auc_score,
}


def _case(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.6).astype(int)
    pred = np.where(rng.random(n) < 0.75, y, 1 - y)
    score = np.round(y + rng.normal(0.0, 0.8, n), 1)  # ties on purpose
    return y, pred, score


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_metrics_equal_sklearn_on_same_resamples(seed: int) -> None:
    y, pred, score = _case(60, seed)
    idx = stratified_indices(y, 25, np.random.default_rng(seed))
    got = resample_metrics(y, pred, idx, score)
    for row in range(idx.shape[0]):
        yb, pb, sb = y[idx[row]], pred[idx[row]], score[idx[row]]
        for key, fn in SKLEARN.items():
            assert got[key][row] == pytest.approx(fn(yb, pb), abs=1e-12), (row, key)
        assert got["auc_score"][row] == pytest.approx(roc_auc_score(yb, sb), abs=1e-12)


def test_resample_metrics_handle_resamples_missing_a_class() -> None:
    y = np.array([0, 0, 1, 1, 1])
    pred = np.array([0, 1, 1, 0, 1])
    idx = np.array([[2, 3, 4, 2, 3], [0, 1, 0, 1, 0]])  # only positives, only negatives
    got = resample_metrics(y, pred, idx, score=np.arange(5.0))
    assert np.isnan(got["auc_binary"]).all() and np.isnan(got["auc_score"]).all()  # one class each
    assert np.isnan(got["recall"][1]) and not np.isnan(got["recall"][0])  # no positive in row 1


def test_stratified_indices_keep_class_counts() -> None:
    y, _, _ = _case(40)
    idx = stratified_indices(y, 300, np.random.default_rng(0))
    assert idx.shape == (300, 40)
    assert (y[idx].sum(axis=1) == y.sum()).all()
    assert len(np.unique(idx)) > 30  # drawn with replacement from every program


def test_interval_contains_point_estimate() -> None:
    y, pred, score = _case(50)
    point = alignment_metrics(y, pred, score)
    ci = bootstrap_ci(y, pred, score, resamples=2000, seed=1)
    assert set(ci) == {"accuracy", "precision", "recall", "f1", "auc_binary", "auc_score", "mcc"}
    for key, (low, high) in ci.items():
        assert low <= point[key] <= high, key
        assert low < high, key


def test_interval_narrows_as_n_grows_at_same_prevalence() -> None:
    y, pred, score = _case(50)
    small = bootstrap_ci(y, pred, score, seed=0)
    large = bootstrap_ci(np.tile(y, 10), np.tile(pred, 10), np.tile(score, 10), seed=0)
    for key in small:
        width_small = small[key][1] - small[key][0]
        width_large = large[key][1] - large[key][0]
        assert width_large < 0.6 * width_small, key


def test_lower_confidence_gives_nested_interval() -> None:
    y, pred, score = _case(50)
    wide = bootstrap_ci(y, pred, score, confidence=0.95, seed=3)
    narrow = bootstrap_ci(y, pred, score, confidence=0.8, seed=3)
    for key in wide:
        assert wide[key][0] <= narrow[key][0] <= narrow[key][1] <= wide[key][1], key


def test_seed_makes_intervals_reproducible() -> None:
    y, pred, score = _case(50)
    assert bootstrap_ci(y, pred, score, seed=5) == bootstrap_ci(y, pred, score, seed=5)
    assert bootstrap_ci(y, pred, score, seed=5) != bootstrap_ci(y, pred, score, seed=6)


def test_degenerate_truth_gives_undefined_auc_intervals() -> None:
    y = np.ones(30, dtype=int)
    pred = np.array([1, 1, 0] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateMetricWarning)
        ci = bootstrap_ci(y, pred, score=np.arange(30.0))
    assert all(np.isnan(ci[name]).all() for name in ("auc_binary", "auc_score"))  # not [0.5, 0.5]
    assert not np.isnan(ci["recall"]).any() and not np.isnan(ci["f1"]).any()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"resamples": 200}, "at least 1000"),
        ({"confidence": 1.5}, r"confidence must lie in \(0, 1\)"),
    ],
)
def test_bad_settings_raise(kwargs: dict, match: str) -> None:
    y, pred, _ = _case(20)
    with pytest.raises(ValueError, match=match):
        bootstrap_ci(y, pred, **kwargs)


def test_large_n_is_scored_in_chunks_with_every_resample_kept() -> None:
    y, pred, score = _case(2500)
    dist = bootstrap_distribution(y, pred, score, resamples=2000, seed=0)
    point = alignment_metrics(y, pred, score)
    for key, values in dist.items():
        assert values.shape == (2000,), key
        assert np.percentile(values, 2.5) <= point[key] <= np.percentile(values, 97.5), key
