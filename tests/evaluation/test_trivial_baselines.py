"""Trivial baselines: always-understandable, and the prevalence-matched random labeller."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mcu_exp.evaluation import SingleClassWarning, always_positive, random_expected


def _labels(n: int, n_pos: int) -> np.ndarray:
    return np.r_[np.ones(n_pos, dtype=int), np.zeros(n - n_pos, dtype=int)]


@pytest.mark.parametrize(("n", "n_pos"), [(50, 27), (50, 10), (7, 6), (20, 20)])
def test_always_positive_metrics(n: int, n_pos: int) -> None:
    p = n_pos / n
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = always_positive(_labels(n, n_pos))
    categories = {w.category for w in caught}
    assert categories == ({SingleClassWarning} if n_pos == n else set())
    assert got["f1"] == pytest.approx(2 * p / (1 + p))
    assert got["precision"] == pytest.approx(p) and got["accuracy"] == pytest.approx(p)
    assert got["recall"] == 1.0
    if n_pos == n:
        assert math.isnan(got["auc_binary"])  # one class: undefined, not 0.5
    else:
        assert got["auc_binary"] == 0.5
    assert (got["tp"], got["fp"], got["fn"], got["tn"]) == (n_pos, n - n_pos, 0, 0)


def _simulate(n: int, n_pos: int, draws: int, seed: int) -> dict[str, np.ndarray]:
    """Per-draw metrics of labels drawn 1 with probability p, independent of the truth."""
    rng = np.random.default_rng(seed)
    p = n_pos / n
    pred = rng.random((draws, n)) < p
    tp = pred[:, :n_pos].sum(axis=1)
    k = pred.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(k > 0, tp / k, np.nan)  # undefined draws left out of the mean
        f1 = np.where(n_pos + k > 0, 2 * tp / (n_pos + k), np.nan)
    accuracy = (tp + (n - n_pos) - (k - tp)) / n
    return {"f1": f1, "precision": precision, "recall": tp / n_pos, "accuracy": accuracy}


@pytest.mark.parametrize(("n", "n_pos"), [(50, 27), (12, 3), (30, 25)])
def test_random_expected_matches_monte_carlo(n: int, n_pos: int) -> None:
    expected = random_expected(_labels(n, n_pos))
    simulated = _simulate(n, n_pos, draws=100_000, seed=n + n_pos)
    for key, values in simulated.items():
        values = values[~np.isnan(values)]
        standard_error = values.std() / math.sqrt(values.size)
        assert abs(values.mean() - expected[key]) < 4 * standard_error + 1e-12, key


def test_random_expected_closed_forms() -> None:
    n, n_pos = 40, 14
    p = n_pos / n
    got = random_expected(_labels(n, n_pos))
    assert got["accuracy"] == pytest.approx(p**2 + (1 - p) ** 2)
    assert got["recall"] == pytest.approx(p)
    assert got["precision"] == p  # E[TP/K | K > 0]: the draws where precision is defined
    assert got["tp"] + got["fn"] == pytest.approx(n_pos) and got["tp"] == pytest.approx(n_pos * p)
    assert got["auc_binary"] == 0.5


def test_random_expected_f1_tends_to_prevalence() -> None:
    small = random_expected(_labels(10, 3))
    large = random_expected(_labels(3000, 900))
    assert abs(large["f1"] - 0.3) < 0.002
    assert abs(large["f1"] - 0.3) < abs(small["f1"] - 0.3)


def test_random_expected_with_one_class_leaves_undefined_metrics_undefined() -> None:
    none = random_expected(_labels(9, 0))  # never predicts a positive
    assert [k for k, v in none.items() if math.isnan(v)] == [
        "precision",
        "recall",
        "f1",
        "auc_binary",
        "auc_score",
        "mcc",
    ]
    every = random_expected(_labels(9, 9))
    assert every["f1"] == pytest.approx(1.0) and every["precision"] == 1.0
    assert math.isnan(every["auc_binary"]) and math.isnan(every["auc_score"])
