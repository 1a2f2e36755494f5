"""τ, the decision rule and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from mcu_exp.calibration import (
    QUANTILE_RULES,
    clopper_pearson,
    conformal_level,
    decide,
    empirical_coverage,
    threshold,
    thresholds,
)

EPSILONS = (0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8)
SIZES = (5, 9, 10, 20, 30, 50)  # 72 (n, ε) pairs


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.2, 0.5])
def test_empirical_tau_is_the_ceil_n_rank_not_an_interpolation(epsilon: float) -> None:
    scores = np.random.default_rng(1).uniform(size=50)
    rank = math.ceil(round(50 * (1 - epsilon), 9))
    assert threshold(scores, epsilon, "empirical") == np.sort(scores)[rank - 1]
    assert threshold(scores, epsilon, "empirical") == np.quantile(scores, 1 - epsilon, method="inverted_cdf")
    assert threshold(scores, epsilon, "linear") == pytest.approx(np.quantile(scores, 1 - epsilon))


def test_empirical_tau_keeps_at_least_one_minus_epsilon_of_the_calibration_scores() -> None:
    """The paper's rule on all 72 (n, ε) pairs; interpolation fails it on many (n = 50, ε = 0.05: 0.94)."""
    rng = np.random.default_rng(5)
    short = []
    for n in SIZES:
        for epsilon in EPSILONS:
            scores = rng.normal(size=n)
            tau = threshold(scores, epsilon, "empirical")
            fraction = np.mean(scores <= tau)
            assert fraction >= 1 - epsilon - 1e-12, (n, epsilon)
            smaller = np.sort(scores)[np.sort(scores) < tau]
            assert smaller.size == 0 or np.mean(scores <= smaller[-1]) < 1 - epsilon - 1e-12  # the smallest such
            short += [np.mean(scores <= threshold(scores, epsilon, "linear")) < 1 - epsilon - 1e-12]
    assert sum(short) == 30  # the interpolated quantile breaks the rule this often (docs/statistics.md says 30 of 72)
    assert decide(np.arange(50.0), np.arange(50.0), 0.05).calibration_fraction == 0.96


def test_row_thresholds_equal_one_at_a_time() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(40, 12))
    rows[0, :5] = np.nan
    rows[1] = np.nan
    for rule in QUANTILE_RULES:
        for epsilon in (0.05, 0.1, 0.3):
            got = thresholds(rows, epsilon, rule)
            assert math.isnan(got[1])
            expected = [threshold(row, epsilon, rule) for row in rows[[0, *range(2, 40)]]]
            assert got[[0, *range(2, 40)]].tolist() == pytest.approx(expected), (rule, epsilon)


def test_coverage_interval_is_clopper_pearson() -> None:
    d = decide(np.arange(50.0), np.arange(3.0, 53.0), 0.1)
    k = int(d.labels.sum())
    exact = stats.binomtest(k, 50).proportion_ci(0.95, method="exact")
    assert d.coverage_ci == pytest.approx((exact.low, exact.high))
    assert d.coverage_ci[0] < d.coverage < d.coverage_ci[1]
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0
    assert all(math.isnan(b) for b in clopper_pearson(0, 0))
    assert d.metrics()["coverage_ci_low"] == d.coverage_ci[0]


@pytest.mark.parametrize("n,epsilon", [(50, 0.1), (50, 0.05), (20, 0.2), (9, 0.1)])
def test_conformal_tau_is_the_ceil_rank(n: int, epsilon: float) -> None:
    scores = np.random.default_rng(2).normal(size=n)
    rank = math.ceil((n + 1) * (1 - epsilon))
    expected = np.sort(scores)[rank - 1] if rank <= n else math.inf
    assert threshold(scores, epsilon, "conformal") == expected
    if rank <= n:
        assert expected == np.quantile(scores, conformal_level(n, epsilon), method="inverted_cdf")


def test_conformal_tau_is_infinite_when_rank_exceeds_n() -> None:
    assert threshold([0.1, 0.2, 0.3], 0.1, "conformal") == math.inf


def test_labels_flip_exactly_as_tau_crosses_alpha_test() -> None:
    alpha_test = np.array([0.10, 0.20, 0.30])
    # Calibration scores chosen so that τ (the empirical 0.5-quantile, the 2nd of 3) equals each α_test in turn.
    for i, a in enumerate(alpha_test):
        cal = np.array([a - 0.05, a, a + 0.05])
        d = decide(cal, alpha_test, 0.5, "empirical")
        assert d.tau == pytest.approx(a)
        assert d.labels.tolist() == [1 if j <= i else 0 for j in range(3)]
        below = decide(cal - 1e-9, alpha_test, 0.5, "empirical")
        assert below.labels[i] == 0


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        threshold([0.1, 0.2], 0.0)
    with pytest.raises(ValueError, match="decision.quantile"):
        threshold([0.1, 0.2], 0.1, "median")
    with pytest.raises(ValueError, match="no calibration"):
        threshold([], 0.1)


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.2])
def test_conformal_coverage_on_exchangeable_scores(epsilon: float) -> None:
    """Split-conformal guarantee: a fresh exchangeable score is covered with prob ≥ 1 − ε."""
    rng = np.random.default_rng(7)
    n, trials = 30, 4000
    cal = rng.gamma(2.0, size=(trials, n))
    new = rng.gamma(2.0, size=trials)
    covered = [new[t] <= threshold(cal[t], epsilon, "conformal") for t in range(trials)]
    assert np.mean(covered) >= 1 - epsilon - 0.01  # 0.01 = ~2 standard errors at 4000 trials
    empirical = [new[t] <= threshold(cal[t], epsilon, "empirical") for t in range(trials)]
    assert np.mean(covered) >= np.mean(empirical)


def test_coverage_is_the_fraction_within_tau() -> None:
    assert empirical_coverage([0.1, 0.2, 0.3, 0.4], 0.25) == 0.5
    assert math.isnan(empirical_coverage([], 0.2))
