"""The program bootstrap of the ceiling: its point estimates are split_half's, its weighted ranks
are SciPy's, its intervals cover, and a proxy's paired differences say what they should."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from test_ceiling_bounds import bb_dataset

from mcu_exp.ceiling.bounds import model_figures, quadrature, size_weights
from mcu_exp.ceiling.program_bootstrap import (
    BOUNDS,
    HALF_PANEL,
    _auc,
    _codes,
    _spearman,
    ceiling_bootstrap,
    compare_to_bounds,
    disattenuate,
)
from mcu_exp.ceiling.split_half import split_half
from mcu_exp.data import Dataset


def test_point_estimates_are_split_half_with_the_same_splits() -> None:
    sizes = np.array([9, 8, 1, 9, 2] * 8)  # one-reader programs are left out of the halves
    ds, _ = bb_dataset(3.0, 2.5, sizes, np.random.default_rng(20))
    boot = ceiling_bootstrap(ds, resamples=50, splits=40, seed=7)
    reference = split_half(ds, splits=40, seed=7).figures
    for name in HALF_PANEL:
        assert boot.figures[name].point == pytest.approx(reference[name], abs=1e-12)
    assert boot.programs == 32 and boot.programs_left_out == 8
    assert 0 < boot.figures["auc_score"].mc_error < 0.05


def test_weighted_ranks_match_scipy_on_the_expanded_rows() -> None:
    rng = np.random.default_rng(21)
    x, y = rng.integers(0, 6, size=30).astype(float), rng.normal(size=30)
    truth = (rng.random(30) < 0.4).astype(float)
    idx = rng.integers(0, 30, size=(5, 30))
    keep = rng.random(30) < 0.8
    weights = keep[idx].astype(float)
    cx, cy = _codes(x), _codes(y)
    auc = _auc(cx[0][idx], cx[1], truth[idx], weights)
    rho = _spearman((cx[0][idx], cx[1]), (cy[0][idx], cy[1]), weights)
    for r in range(5):
        rows = idx[r][keep[idx[r]]]
        assert auc[r] == pytest.approx(roc_auc_score(truth[rows], x[rows]))
        assert rho[r] == pytest.approx(spearmanr(x[rows], y[rows]).statistic)


def test_too_few_splittable_programs_is_undefined() -> None:
    ds, _ = bb_dataset(3.0, 2.5, np.array([1] * 20 + [6] * 9), np.random.default_rng(22))
    boot = ceiling_bootstrap(ds, resamples=20, splits=5)
    assert math.isnan(boot.figures["auc_score"].point) and math.isnan(boot.figures["upper_auc_score"].ci_low)
    assert boot.programs == 9 and boot.programs_left_out == 20


def population_upper(a: float, b: float, sizes: np.ndarray) -> float:
    quad = quadrature(sizes, 0.5, a, b)
    return float(
        model_figures(np.array([a]), np.array([b]), size_weights(sizes, quad.sizes), quad)["upper_auc_score"][0]
    )


def test_the_upper_bound_interval_covers_the_generating_value_quickly() -> None:
    """A quick version of scripts/ceiling_coverage.py: 16 datasets, a loose band."""
    rng = np.random.default_rng(23)
    sizes = rng.integers(8, 10, size=50)
    truth = population_upper(3.0, 3.0, sizes)
    covered = 0
    for _ in range(16):
        ds, _ = bb_dataset(3.0, 3.0, sizes, rng)
        est = ceiling_bootstrap(ds, resamples=200, splits=4, seed=int(rng.integers(1 << 30))).figures["upper_auc_score"]
        covered += est.ci_low <= truth <= est.ci_high
    assert covered >= 12  # nominal 15.2 of 16; P(≤ 11 | 95 %) < 0.1 %


def proxy_case(noise: float, seed: int) -> tuple[Dataset, pd.Series]:
    rng = np.random.default_rng(seed)
    ds, pi = bb_dataset(3.0, 3.0, rng.integers(8, 10, size=300), rng)
    score = pi + noise * rng.normal(size=pi.size)
    return ds, pd.Series(score, index=[f"p{i}" for i in range(pi.size)])


def test_a_proxy_equal_to_the_true_understandability_reaches_the_upper_bound() -> None:
    ds, score = proxy_case(0.0, 24)
    found = compare_to_bounds(ds, score, resamples=300, splits=10, seed=1)
    upper, half = found.differences["upper"], found.differences["half_panel"]
    assert upper.ci_low < 0 < upper.ci_high  # the ideal proxy is the upper bound, up to sampling
    assert abs(upper.point) < 0.05
    assert half.ci_low > 0 and half.p_below < 0.025  # and beats the pessimistic lower bound
    assert set(found.differences) == set(BOUNDS)


def test_a_noise_proxy_falls_clearly_below_every_bound() -> None:
    ds, score = proxy_case(100.0, 25)  # the score is noise: AUC ≈ 0.5
    found = compare_to_bounds(ds, score, resamples=300, splits=10, seed=1)
    for diff in found.differences.values():
        assert diff.ci_high < 0 and diff.p_below > 0.975
    assert found.proxy_auc.ci_low < 0.5 < found.proxy_auc.ci_high
    assert not found.disattenuated.flagged
    assert found.disattenuated.ci_low < 0 < found.disattenuated.ci_high


def test_disattenuation_clips_and_flags_where_reliability_reaches_zero() -> None:
    rho = np.array([0.5, 0.6, 0.4, 0.55, 0.5])
    solid = disattenuate(rho, np.array([0.64, 0.6, 0.7, 0.65, 0.62]))
    assert solid.point == pytest.approx(0.5 / 0.8) and not solid.flagged and not solid.clipped
    weak = disattenuate(rho, np.array([0.2, 0.1, -0.05, 0.3, 0.0]))
    assert weak.flagged and weak.clipped and weak.ci_high == 1.0


def test_scalabrino_figures_and_runtime(scalabrino: Dataset) -> None:
    ceiling_bootstrap(scalabrino, resamples=10, splits=5)  # imports, caches
    start = time.perf_counter()
    boot = ceiling_bootstrap(scalabrino)
    elapsed = time.perf_counter() - start
    fig = boot.figures
    assert fig["model_icc"].point == pytest.approx(0.143, abs=0.005)
    assert fig["upper_auc_score"].ci_low < fig["upper_auc_score"].point < fig["upper_auc_score"].ci_high
    assert fig["auc_score"].point < fig["second_panel_auc_score"].point < fig["upper_auc_score"].point
    assert boot.programs == 50 and boot.programs_left_out == 0
    assert elapsed < 10.0  # ~0.7 s on an idle core; loose for 2 shared cores
