"""The beta-binomial upper bound: the fit against SciPy's optimiser and known parameters, the
quadrature against direct Monte Carlo, the lower bound against split_half, the edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import betabinom, rankdata, spearmanr

from mcu_exp.ceiling.bounds import (
    fit_beta_binomial,
    lower_bound,
    model_figures,
    quadrature,
    reader_counts,
    simulate_upper_auc,
    size_weights,
    upper_bound,
    upper_bound_from_counts,
)
from mcu_exp.ceiling.split_half import split_half
from mcu_exp.data import Dataset, Program
from mcu_exp.data.types import evaluations_frame


def bb_dataset(a: float, b: float, sizes: np.ndarray, rng: np.random.Generator) -> tuple[Dataset, np.ndarray]:
    """A dataset from the model itself: π_p ~ Beta(a, b), each reader answers 1 question, right
    (ABU50 = 1) with probability π_p; returns the dataset and the true π."""
    pi = rng.beta(a, b, size=sizes.size)
    pids, people, correct = [], [], []
    for p, (prob, n) in enumerate(zip(pi, sizes)):
        for r in range(int(n)):
            pids.append(f"p{p}")
            people.append(f"r{r}")
            correct.append(int(rng.random() < prob))
    ds = Dataset(
        name="bb",
        programs=[Program(id=f"p{p}", language="java", code="") for p in range(sizes.size)],
        questions=[],
        source="test",
        evaluations=evaluations_frame(pids, people, correct, [1] * len(pids)),
    )
    return ds, pi


def test_fit_is_the_maximum_likelihood_scipy_finds() -> None:
    rng = np.random.default_rng(3)
    n = rng.integers(8, 10, size=50)
    k = rng.binomial(n, rng.beta(3.0, 3.0, size=50))
    fit = fit_beta_binomial(k, n)
    found = minimize(
        lambda t: -betabinom.logpmf(k, n, math.exp(t[0]), math.exp(t[1])).sum(),
        x0=[0.0, 0.0],
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 4000},
    )
    assert fit.a == pytest.approx(math.exp(found.x[0]), rel=1e-4)
    assert fit.b == pytest.approx(math.exp(found.x[1]), rel=1e-4)
    assert fit.icc == pytest.approx(1 / (fit.a + fit.b + 1))


def test_fit_recovers_the_generating_parameters_on_many_programs() -> None:
    rng = np.random.default_rng(4)
    a, b, programs = 3.0, 2.0, 20000
    n = rng.integers(8, 10, size=programs)
    k = rng.binomial(n, rng.beta(a, b, size=programs))
    fit = fit_beta_binomial(k, n)
    assert fit.mean == pytest.approx(a / (a + b), abs=0.005)
    assert fit.icc == pytest.approx(1 / (a + b + 1), abs=0.01)


def test_no_overdispersion_fits_a_small_icc_and_the_bounds_approach_chance() -> None:
    rng = np.random.default_rng(5)
    n = np.full(400, 9)
    k = rng.binomial(n, 0.5)  # every program alike: no between-program variation
    bound = upper_bound_from_counts(k, n)
    assert bound.fit.icc < 0.03
    assert bound.figures["second_panel_auc_score"] < 0.6
    # The AUC of π against the label rises like √ICC: steep near 0, chance only in the limit.
    quad = quadrature(n, 0.5)
    near_zero = [model_figures(np.array([s]), np.array([s]), size_weights(n, quad.sizes), quad) for s in (5e4, 50.0)]
    assert near_zero[0]["upper_auc_score"][0] == pytest.approx(0.5, abs=0.01)
    assert near_zero[1]["upper_auc_score"][0] > 0.6


@pytest.mark.parametrize(("a", "b", "sizes"), [(3.0, 3.0, (8, 10)), (1.2, 0.8, (8, 10)), (6.0, 2.0, (3, 6))])
def test_upper_auc_matches_a_direct_monte_carlo(a: float, b: float, sizes: tuple[int, int]) -> None:
    n = np.random.default_rng(6).integers(*sizes, size=50)
    quad = quadrature(n, 0.5, a, b)
    exact = model_figures(np.array([a]), np.array([b]), size_weights(n, quad.sizes), quad)["upper_auc_score"][0]
    simulated, error = simulate_upper_auc(a, b, n, draws=4000, seed=1)
    assert error < 0.005
    assert exact == pytest.approx(simulated, abs=4 * error + 0.002)


def test_second_panel_and_spearman_match_a_monte_carlo_of_many_programs() -> None:
    rng = np.random.default_rng(8)
    a, b, programs, draws = 2.0, 2.5, 4000, 20
    n = rng.integers(8, 10, size=programs)
    quad = quadrature(n, 0.5, a, b)
    exact = model_figures(np.array([a]), np.array([b]), size_weights(n, quad.sizes), quad)
    aucs, rhos = [], []
    for _ in range(draws):
        pi = rng.beta(a, b, size=programs)
        label = rng.binomial(n, pi) / n >= 0.5
        second = rng.binomial(n, pi) / n
        ranks = rankdata(second)
        pos = label.sum()
        aucs.append((ranks[label].sum() - pos * (pos + 1) / 2) / (pos * (programs - pos)))
        rhos.append(spearmanr(pi, second).statistic)
    assert exact["second_panel_auc_score"][0] == pytest.approx(np.mean(aucs), abs=0.006)
    assert exact["upper_spearman"][0] == pytest.approx(np.mean(rhos), abs=0.006)
    assert exact["second_panel_auc_score"][0] < exact["upper_auc_score"][0]


def test_upper_bound_of_a_simulated_dataset_is_near_the_generating_one() -> None:
    rng = np.random.default_rng(9)
    sizes = rng.integers(8, 10, size=1000)
    ds, _ = bb_dataset(3.0, 3.0, sizes, rng)
    bound = upper_bound(ds)
    quad = quadrature(sizes, 0.5, 3.0, 3.0)
    truth = model_figures(np.array([3.0]), np.array([3.0]), size_weights(sizes, quad.sizes), quad)
    assert bound.figures["upper_auc_score"] == pytest.approx(truth["upper_auc_score"][0], abs=0.02)
    assert bound.figures["model_icc"] == pytest.approx(1 / 7, abs=0.03)
    assert bound.defined and bound.programs == 1000


def test_lower_bound_is_split_half_unchanged() -> None:
    ds, _ = bb_dataset(3.0, 3.0, np.full(50, 9), np.random.default_rng(10))
    assert lower_bound(ds, splits=200, seed=3).figures == split_half(ds, splits=200, seed=3).figures


def test_counts_follow_the_label_rule() -> None:
    ds, _ = bb_dataset(3.0, 3.0, np.array([8, 9, 1, 4] * 5), np.random.default_rng(11))
    counts = reader_counts(ds, min_fraction=0.5)
    assert (counts["label"] == (counts["successes"] / counts["readers"] >= 0.5)).all()
    assert counts["readers"].tolist() == [8, 9, 1, 4] * 5


def test_undefined_below_min_programs_and_for_one_class() -> None:
    few = upper_bound_from_counts(np.array([3, 5, 1] * 3), np.array([8] * 9))
    assert not few.defined and few.programs == 9
    one_class = upper_bound_from_counts(np.full(20, 7), np.full(20, 8))
    assert math.isnan(one_class.figures["upper_auc_score"])
    singles = upper_bound_from_counts(np.array([1, 0] * 15), np.ones(30, dtype=int))
    assert not singles.defined and singles.programs_left_out == 30


def test_other_rules_are_refused() -> None:
    ds, _ = bb_dataset(3.0, 3.0, np.full(12, 4), np.random.default_rng(12))
    with pytest.raises(ValueError, match="labels.rule"):
        upper_bound(ds, rule="median")
