"""τ, the decision rule and coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcu_exp.calibration import conformal_level, decide, empirical_coverage, threshold


@pytest.mark.parametrize("epsilon", [0.05, 0.1, 0.2, 0.5])
def test_empirical_tau_is_numpy_quantile(epsilon: float) -> None:
    scores = np.random.default_rng(1).uniform(size=50)
    assert threshold(scores, epsilon, "empirical") == pytest.approx(np.quantile(scores, 1 - epsilon))


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
    # Calibration scores chosen so that τ (the empirical 0.5-quantile) equals each α_test in turn.
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
