"""The pooled correlation across datasets: statsmodels' random-effects figures on the same z
and variances, a hand-computed Q and I², the Paule–Mandel estimating equation, the coverage of
the pooled interval under τ² = 0, exclusions, and the k = 2 and k = 1 cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from mcu_exp.evaluation.pooling import (
    POOLED,
    SPEARMAN_VARIANCE,
    DatasetCorrelation,
    pool_correlations,
    pool_disattenuated,
)


def spearman_samples(rng: np.random.Generator, pearson: float, n: int, reps: int) -> np.ndarray:
    """``reps`` Spearman ρ of n draws from a bivariate normal with correlation ``pearson``."""
    x = rng.standard_normal((reps, n))
    y = pearson * x + math.sqrt(1 - pearson**2) * rng.standard_normal((reps, n))
    rx = stats.rankdata(x, axis=1)
    ry = stats.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    return np.asarray((rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1)))


def heterogeneous_datasets(seed: int = 12) -> list[DatasetCorrelation]:
    """Three datasets with true ρ_i = tanh(μ + u_i), u_i ~ N(0, τ² = 0.3²), μ = atanh(0.35)."""
    rng = np.random.default_rng(seed)
    ns = (50, 80, 120)
    true = np.tanh(math.atanh(0.35) + rng.normal(0.0, 0.3, size=len(ns)))
    return [
        DatasetCorrelation(f"d{i}", float(spearman_samples(rng, float(r), n, 1)[0]), n)
        for i, (r, n) in enumerate(zip(true, ns, strict=True))
    ]


def test_pooled_figures_are_statsmodels_random_effects_on_the_same_z_and_variances() -> None:
    data = heterogeneous_datasets()
    pooled = pool_correlations(data)
    z = np.array([math.atanh(d.rho) for d in data])
    v = np.array([SPEARMAN_VARIANCE / (d.n - 3) for d in data])
    ref = combine_effects(z, v, method_re="pm")
    _, ci, _, _ = ref.conf_int(use_t=False)
    assert pooled.k == 3 and pooled.excluded == ()
    assert pooled.z == pytest.approx(ref.mean_effect_re, rel=1e-12)
    assert pooled.rho == pytest.approx(math.tanh(ref.mean_effect_re), rel=1e-12)
    assert pooled.se == pytest.approx(ref.sd_eff_w_re, rel=1e-12)
    assert (pooled.ci_low, pooled.ci_high) == pytest.approx(tuple(np.tanh(ci)), rel=1e-12)
    assert pooled.tau2 == pytest.approx(ref.tau2, abs=1e-15)
    assert pooled.tau2 > 0  # the draw is heterogeneous enough that τ² is not truncated
    assert pooled.i2 == pytest.approx(max(0.0, ref.i2), rel=1e-12)
    assert pooled.q == pytest.approx(ref.q, rel=1e-12)
    assert pooled.q_p == pytest.approx(stats.chi2.sf(ref.q, 2), rel=1e-12)
    assert [d.weight for d in pooled.datasets] == pytest.approx(list(ref.weights_rel_re), rel=1e-12)
    # the prediction interval: μ ± t(k − 2) √(τ² + SE²), back-transformed
    half = stats.t.isf(0.025, 1) * math.sqrt(ref.tau2 + ref.sd_eff_w_re**2)
    assert (pooled.pi_low, pooled.pi_high) == pytest.approx(
        (math.tanh(ref.mean_effect_re - half), math.tanh(ref.mean_effect_re + half)), rel=1e-12
    )
    assert pooled.pi_low < pooled.ci_low < pooled.rho < pooled.ci_high < pooled.pi_high
    # the Paule–Mandel estimating equation holds at the returned τ²
    w = 1 / (v + pooled.tau2)
    assert float(w @ (z - pooled.z) ** 2) == pytest.approx(2.0, abs=1e-3)


def test_q_and_i2_by_hand_on_a_small_fixed_example() -> None:
    data = [("a", 0.10, 43), ("b", 0.40, 56), ("c", 0.55, 109)]
    z = [math.atanh(r) for _, r, _ in data]
    w = [(n - 3) / 1.06 for _, _, n in data]
    fixed = sum(wi * zi for wi, zi in zip(w, z, strict=True)) / sum(w)
    q = sum(wi * (zi - fixed) ** 2 for wi, zi in zip(w, z, strict=True))
    pooled = pool_correlations(data)
    assert pooled.q == pytest.approx(q, rel=1e-12)
    assert pooled.q_df == 2
    assert pooled.i2 == pytest.approx(max(0.0, (q - 2) / q), rel=1e-12)
    assert pooled.i2 > 0


def test_homogeneous_datasets_have_i2_and_tau2_zero() -> None:
    pooled = pool_correlations([("a", 0.30, 60), ("b", 0.31, 60), ("c", 0.29, 60)])
    assert pooled.q < pooled.q_df
    assert pooled.i2 == 0.0 and pooled.tau2 == 0.0
    # with τ² = 0 the pool is the fixed-effect mean of equal weights
    assert pooled.z == pytest.approx(np.mean([math.atanh(r) for r in (0.30, 0.31, 0.29)]), rel=1e-12)


def test_pooled_interval_covers_the_common_rho_at_about_the_nominal_rate() -> None:
    rng = np.random.default_rng(2024)
    pearson, ns, reps = 0.4, (40, 60, 90), 200
    common = 6 / math.pi * math.asin(pearson / 2)  # Spearman's ρ of a bivariate normal
    rhos = np.column_stack([spearman_samples(rng, pearson, n, reps) for n in ns])
    covered = 0
    for row in rhos:
        pooled = pool_correlations([(f"d{i}", float(r), n) for i, (r, n) in enumerate(zip(row, ns, strict=True))])
        covered += pooled.ci_low <= common <= pooled.ci_high
    assert 0.90 <= covered / reps <= 0.99


def test_an_undefined_rho_is_excluded_and_named() -> None:
    data = [("a", 0.3, 50), ("b", math.nan, 50), ("c", 0.2, 3), ("d", 1.0, 40), ("e", 0.4, 70)]
    pooled = pool_correlations(data)
    assert [d.name for d in pooled.datasets] == ["a", "e"]
    reasons = dict(pooled.excluded)
    assert set(reasons) == {"b", "c", "d"}
    assert "NaN" in reasons["b"] and "n = 3" in reasons["c"] and ">= 1" in reasons["d"]
    assert pooled.reason is None and math.isfinite(pooled.rho)
    frame = pooled.to_frame()
    assert list(frame["name"]) == ["a", "e", "b", "c", "d", POOLED]
    assert frame.loc[frame["name"] == "b", "note"].item().startswith("excluded: ")


def test_numpy_floats_pool_like_python_floats() -> None:
    """A ρ read from a NumPy array (float32 or float64) is a number: it was excluded as NaN."""
    data = [("a", 0.3, 50), ("b", 0.45, 60), ("e", 0.4, 70)]
    plain = pool_correlations(data)
    for kind in (np.float32, np.float64):
        pooled = pool_correlations([(name, kind(rho), n) for name, rho, n in data])
        assert not pooled.excluded and len(pooled.datasets) == 3
        assert pooled.rho == pytest.approx(plain.rho, abs=1e-7)


def test_two_datasets_pool_but_have_no_prediction_interval() -> None:
    pooled = pool_correlations([("a", 0.3, 50), ("b", 0.5, 80)])
    ref = combine_effects(
        np.array([math.atanh(0.3), math.atanh(0.5)]), np.array([1.06 / 47, 1.06 / 77]), method_re="pm"
    )
    assert pooled.k == 2 and pooled.q_df == 1
    assert pooled.rho == pytest.approx(math.tanh(ref.mean_effect_re), rel=1e-12)
    assert pooled.ci_low < pooled.rho < pooled.ci_high
    assert math.isnan(pooled.pi_low) and math.isnan(pooled.pi_high)
    assert pooled.pi_reason is not None and "k = 2" in pooled.pi_reason
    assert "prediction interval undefined" in pooled.rows()[-1]["note"]


@pytest.mark.parametrize("data", [[("a", 0.3, 50)], [("a", 0.3, 50), ("b", math.nan, 50)], []])
def test_fewer_than_two_usable_datasets_leave_the_pool_undefined(data: list[tuple[str, float, int]]) -> None:
    pooled = pool_correlations(data)
    assert pooled.reason is not None and "at least 2" in pooled.reason
    for value in (pooled.rho, pooled.ci_low, pooled.ci_high, pooled.tau2, pooled.i2, pooled.q, pooled.pi_low):
        assert math.isnan(value)
    assert pooled.rows()[-1]["note"] == pooled.reason


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="repeated: a"):
        pool_correlations([("a", 0.3, 50), ("a", 0.4, 60)])


def test_disattenuated_pool_uses_the_delta_method_variance() -> None:
    data = [
        DatasetCorrelation("a", 0.30, 50, 0.8),
        DatasetCorrelation("b", 0.45, 80, 0.6),
        DatasetCorrelation("c", 0.20, 60, 0.9),
        DatasetCorrelation("d", 0.50, 60),  # no reliability
        DatasetCorrelation("e", 0.80, 60, 0.5),  # 0.8 / √0.5 > 1
    ]
    pooled = pool_disattenuated(data)
    assert pooled.disattenuated
    reasons = dict(pooled.excluded)
    assert set(reasons) == {"d", "e"} and "no reliability" in reasons["d"] and ">= 1" in reasons["e"]
    z, v = [], []
    for d in data[:3]:
        assert d.reliability is not None
        rc = d.rho / math.sqrt(d.reliability)
        z.append(math.atanh(rc))
        v.append(1.06 / (d.n - 3) * ((1 - d.rho**2) / (math.sqrt(d.reliability) * (1 - rc**2))) ** 2)
    ref = combine_effects(np.array(z), np.array(v), method_re="pm")
    assert pooled.rho == pytest.approx(math.tanh(ref.mean_effect_re), rel=1e-12)
    assert pooled.tau2 == pytest.approx(ref.tau2, abs=1e-15)
    assert [e.variance for e in pooled.datasets] == pytest.approx(v, rel=1e-12)
    # disattenuation only raises |ρ|, and widens each dataset's interval on z
    plain = pool_correlations(data[:3])
    assert pooled.rho > plain.rho
    assert all(c.variance > p.variance for c, p in zip(pooled.datasets, plain.datasets, strict=True))


def test_reliability_one_gives_the_plain_pool() -> None:
    data = [DatasetCorrelation(n, r, k, 1.0) for n, r, k in [("a", 0.3, 50), ("b", 0.1, 80), ("c", 0.5, 60)]]
    assert pool_disattenuated(data).rho == pytest.approx(pool_correlations(data).rho, rel=1e-12)
