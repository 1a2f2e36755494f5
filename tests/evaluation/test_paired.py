"""Paired comparison of two runs: DeLong against a naive O(n²) implementation and scikit-learn,
McNemar against SciPy's binomial test, Holm against a hand-computed example, the paired
bootstrap against a per-row loop, and the pairing of two per-program tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, chi2, false_discovery_control, norm
from sklearn.metrics import f1_score, roc_auc_score

from mcu_exp.evaluation.bootstrap import stratified_indices
from mcu_exp.evaluation.paired import (
    CHI2_CC,
    EXACT,
    PairingError,
    compare_many,
    compare_runs,
    delong_covariance,
    delong_test,
    holm,
    mcnemar_test,
    pair,
    paired_bootstrap,
    paired_bootstrap_distribution,
)
from mcu_exp.evaluation.rejection import prediction_rejection_ratio


def naive_components(truth: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's structural components by the definition: ψ(x, y) = 1 if x > y, ½ if equal."""
    pos, neg = score[truth == 1], score[truth == 0]
    v10 = np.array([np.mean([1.0 if x > y else 0.5 if x == y else 0.0 for y in neg]) for x in pos])
    v01 = np.array([np.mean([1.0 if x > y else 0.5 if x == y else 0.0 for x in pos]) for y in neg])
    return v10, v01


def naive_covariance(truth: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """DeLong et al. (1988)'s 2 × 2 covariance from the naive components."""
    (a10, a01), (b10, b01) = naive_components(truth, a), naive_components(truth, b)
    m, n = a10.size, a01.size
    return np.cov(np.vstack([a10, b10])) / m + np.cov(np.vstack([a01, b01])) / n


def example(n: int = 60, seed: int = 0, ties: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n)
    a = truth + rng.normal(0, 1.0, n)
    b = 0.5 * a + truth + rng.normal(0, 1.5, n)  # correlated with A, as two proxies of one model are
    if ties:
        a, b = np.round(a), np.round(b * 2) / 2
    return truth, a, b


@pytest.mark.parametrize("ties", [False, True])
def test_delong_single_auc_variance_equals_the_naive_structural_components(ties: bool) -> None:
    truth, a, _ = example(ties=ties)
    aucs, cov = delong_covariance(truth, a[None, :])
    v10, v01 = naive_components(truth, a)
    assert aucs[0] == pytest.approx(roc_auc_score(truth, a), abs=1e-12)
    assert aucs[0] == pytest.approx(v10.mean(), abs=1e-12)
    assert cov[0, 0] == pytest.approx(v10.var(ddof=1) / v10.size + v01.var(ddof=1) / v01.size, rel=1e-10)


@pytest.mark.parametrize("ties", [False, True])
def test_delong_difference_matches_naive_covariance_and_sklearn(ties: bool) -> None:
    truth, a, b = example(seed=4, ties=ties)
    got = delong_test(truth, a, b)
    naive = naive_covariance(truth, a, b)
    var = naive[0, 0] + naive[1, 1] - 2 * naive[0, 1]
    assert got.delta == pytest.approx(roc_auc_score(truth, a) - roc_auc_score(truth, b), abs=1e-12)
    assert got.auc_a == pytest.approx(roc_auc_score(truth, a), abs=1e-12)
    assert got.variance == pytest.approx(var, rel=1e-10)
    assert got.z == pytest.approx(got.delta / math.sqrt(var), rel=1e-10)
    assert got.p == pytest.approx(2 * norm.sf(abs(got.z)), rel=1e-10)


def test_delong_same_ranking_twice_is_no_difference() -> None:
    truth, a, _ = example()
    got = delong_test(truth, a, 3 * a + 1)  # a monotone transform ranks the same
    assert got.delta == 0 and got.variance == 0 and got.z == 0 and got.p == 1


def test_delong_with_one_program_in_a_class_has_no_variance() -> None:
    truth = np.array([1, 0, 0, 0])
    got = delong_test(truth, [0.9, 0.1, 0.2, 0.3], [0.1, 0.9, 0.2, 0.3])
    assert got.delta == 1.0 and math.isnan(got.p) and math.isnan(got.variance)


@pytest.mark.parametrize("b,c", [(0, 0), (3, 0), (5, 2), (7, 7), (1, 12), (12, 12)])
def test_mcnemar_exact_equals_scipys_binomial_test(b: int, c: int) -> None:
    truth = np.ones(b + c + 5, dtype=int)
    label_a = np.r_[np.ones(b), np.zeros(c), np.ones(5)].astype(int)  # right on the first b, wrong on c
    label_b = np.r_[np.zeros(b), np.ones(c), np.ones(5)].astype(int)
    got = mcnemar_test(truth, label_a, label_b)
    assert (got.b, got.c, got.method) == (b, c, EXACT)
    expected = 1.0 if b + c == 0 else binomtest(b, b + c, 0.5).pvalue
    assert got.p == pytest.approx(expected, rel=1e-12)


def test_mcnemar_uses_chi_square_with_continuity_correction_from_25_discordant_pairs() -> None:
    truth = np.zeros(40, dtype=int)
    label_a = np.r_[np.zeros(18), np.ones(7), np.zeros(15)].astype(int)  # b = 18, c = 7
    label_b = np.r_[np.ones(18), np.zeros(7), np.zeros(15)].astype(int)
    got = mcnemar_test(truth, label_a, label_b)
    assert (got.b, got.c, got.method) == (18, 7, CHI2_CC)
    assert got.statistic == pytest.approx((11 - 1) ** 2 / 25)
    assert got.p == pytest.approx(chi2.sf(4.0, 1))
    assert mcnemar_test(truth[:-1], label_a[:-1], label_b[:-1]).method == CHI2_CC  # a concordant one less
    assert mcnemar_test(truth[1:], label_a[1:], label_b[1:]).method == EXACT  # b + c = 24


@pytest.mark.parametrize("b,c", [(13, 13), (20, 20), (13, 14), (30, 12)])
def test_mcnemar_continuity_correction_never_passes_zero(b: int, c: int) -> None:
    truth = np.ones(b + c + 3, dtype=int)
    label_a = np.r_[np.ones(b), np.zeros(c), np.ones(3)].astype(int)
    label_b = np.r_[np.zeros(b), np.ones(c), np.ones(3)].astype(int)
    got = mcnemar_test(truth, label_a, label_b)
    assert got.method == CHI2_CC  # b + c ≥ 25
    statistic = max(abs(b - c) - 1, 0) ** 2 / (b + c)  # Edwards' correction, capped at |b − c| = 0
    assert got.statistic == pytest.approx(statistic, abs=1e-15)
    assert got.p == pytest.approx(chi2.sf(statistic, 1), rel=1e-12)
    if b == c:  # no evidence either way: χ² = 0, p = 1 (an uncapped correction gave 1/26 and p = 0.845)
        assert (got.statistic, got.p) == (0.0, 1.0)


def test_holm_hand_computed() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → max so far 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert not np.allclose(holm(p), false_discovery_control(p))  # SciPy's is Benjamini–Hochberg
    assert holm([0.3, 0.6, 0.5]) == pytest.approx([0.9, 1.0, 1.0])  # capped at 1, monotone
    got = holm([0.02, np.nan, 0.01])
    assert math.isnan(got[1]) and got[[0, 2]] == pytest.approx([0.02, 0.02])  # m = 2 defined
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        holm([0.2, 1.5])


def test_holm_equals_the_step_down_definition_on_random_p_values() -> None:
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 0.2, 8)
    order = np.argsort(p)
    expected = np.empty(8)
    for i, idx in enumerate(order):
        expected[idx] = min(1.0, max((8 - j) * p[order[j]] for j in range(i + 1)))
    assert holm(p) == pytest.approx(expected)


def test_paired_bootstrap_rows_equal_a_loop_with_sklearn() -> None:
    truth, a, b = example(n=30, seed=2)
    la, lb = (a > 0.5).astype(int), (b > 0.8).astype(int)
    dist = paired_bootstrap_distribution(truth, la, lb, a, b, resamples=1000, seed=7)
    idx = stratified_indices(truth, 1000, np.random.default_rng(7))  # the same draws, one chunk
    for r in range(25):
        t, rows = truth[idx[r]], idx[r]
        assert dist["delta_f1"][r] == pytest.approx(f1_score(t, la[rows]) - f1_score(t, lb[rows]), abs=1e-12)
        assert dist["delta_auc"][r] == pytest.approx(roc_auc_score(t, a[rows]) - roc_auc_score(t, b[rows]), abs=1e-12)
        assert t.sum() == truth.sum()  # stratified: every resample keeps the class sizes


def test_paired_bootstrap_points_intervals_and_seed() -> None:
    truth, a, b = example(n=50, seed=3)
    la, lb = (a > 0.5).astype(int), (b > 0.8).astype(int)
    got = paired_bootstrap(truth, la, lb, a, b, resamples=2000, seed=1)
    assert got["delta_f1"].value == pytest.approx(f1_score(truth, la) - f1_score(truth, lb))
    assert got["delta_auc"].value == pytest.approx(roc_auc_score(truth, a) - roc_auc_score(truth, b))
    for diff in got.values():
        assert diff.low <= diff.value <= diff.high and diff.undefined_share == 0
    assert paired_bootstrap(truth, la, lb, a, b, resamples=2000, seed=1) == got
    same = paired_bootstrap(truth, la, la, a, a, resamples=1000)
    assert (same["delta_f1"].low, same["delta_f1"].high, same["delta_auc"].high) == (0, 0, 0)
    no_score = paired_bootstrap(truth, la, lb, resamples=1000)
    assert math.isnan(no_score["delta_auc"].value) and no_score["delta_auc"].undefined_share == 1
    with pytest.raises(ValueError, match="at least 1000"):
        paired_bootstrap(truth, la, lb, resamples=10)


def test_paired_bootstrap_gives_accuracy_and_prr_differences_their_intervals() -> None:
    truth, a, b = example(n=50, seed=6)
    la, lb = (a > 0.5).astype(int), (b > 0.8).astype(int)
    got = paired_bootstrap(truth, la, lb, a, b, resamples=1000, seed=2)
    dist = paired_bootstrap_distribution(truth, la, lb, a, b, resamples=1000, seed=2)
    idx = stratified_indices(truth, 1000, np.random.default_rng(2))
    for r in range(20):
        t, rows = truth[idx[r]], idx[r]
        assert dist["delta_accuracy"][r] == pytest.approx(np.mean(la[rows] == t) - np.mean(lb[rows] == t))
        assert dist["delta_prr"][r] == pytest.approx(
            prediction_rejection_ratio(t, a[rows]) - prediction_rejection_ratio(t, b[rows]), abs=1e-12
        )
    prr = prediction_rejection_ratio(truth, a) - prediction_rejection_ratio(truth, b)
    assert got["delta_prr"].value == pytest.approx(prr)
    assert (got["delta_prr"].low, got["delta_prr"].high) == pytest.approx(np.percentile(dist["delta_prr"], [2.5, 97.5]))
    assert got["delta_prr"].low < prr < got["delta_prr"].high
    assert got["delta_accuracy"].value == pytest.approx(np.mean(la == truth) - np.mean(lb == truth))


def frame(ids: list[str], human: list[float], label: list[float], score: list[float] | None = None) -> pd.DataFrame:
    data = {"human_label": human, "human_fraction": 0.5, "n_evaluators": 3, "label": label}
    if score is not None:
        data["score"] = score
    return pd.DataFrame(data, index=pd.Index(ids, name="program_id"))


def test_pair_joins_on_program_id_in_as_order() -> None:
    a = frame(["p1", "p2", "p3", "p4"], [1, 0, 1, np.nan], [1, 1, 0, 1], [0.9, 0.2, 0.4, 0.5])
    b = frame(["p3", "p2", "p1", "p9"], [1, 0, 1, 0], [1, 0, 1, 0])
    got = pair(a, b)
    assert got.program_ids.tolist() == ["p1", "p2", "p3"]  # p4 has no human label, p9 is B's only
    assert got.truth.tolist() == [1, 0, 1] and got.label_b.tolist() == [1, 0, 1]
    assert got.score_a.tolist() == [0.9, 0.2, 0.4] and got.score_b is None
    assert (got.only_a, got.only_b) == (0, 1)


def test_pair_refuses_different_human_labels_and_no_shared_program() -> None:
    a = frame(["p1", "p2", "p3"], [1, 0, 1], [1, 1, 0])
    with pytest.raises(PairingError, match=r"differ on 1 of 3 shared programs \(p2: 0 vs 1\)"):
        pair(a, frame(["p1", "p2", "p3"], [1, 1, 1], [1, 1, 0]))
    with pytest.raises(PairingError, match="share no scored program"):
        pair(a, frame(["q1"], [1], [1]))
    with pytest.raises(PairingError, match="lacks column"):
        pair(a, a.drop(columns="label"))


def test_compare_runs_and_compare_many() -> None:
    truth, a, b = example(n=40, seed=5)
    ids = [f"p{i}" for i in range(40)]
    fa = frame(ids, truth, (a > 0.5).astype(int), a)
    fb = frame(ids, truth, (b > 0.8).astype(int), b)
    fc = frame(ids, truth, np.ones(40, dtype=int))  # always-1, no score
    cmp = compare_runs(fa, fb, resamples=1000, seed=2)
    dl = delong_test(truth, a, b)
    row = cmp.row()
    assert row["n"] == 40 and row["delong_p"] == dl.p and row["delong_z"] == dl.z
    assert row["f1_a"] == pytest.approx(f1_score(truth, a > 0.5))
    assert row["mcnemar_p"] == mcnemar_test(truth, a > 0.5, b > 0.8).p
    table = compare_many({"A": fa, "B": fb, "C": fc}, resamples=1000, seed=2)
    assert list(zip(table["run_a"], table["run_b"])) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert table.iloc[0]["delong_p"] == cmp.delong.p
    assert table["delong_p"].isna().tolist() == [False, True, True]  # C has no score
    assert table.iloc[0]["delong_p_holm"] == cmp.delong.p  # the only defined DeLong p: m = 1
    assert table["mcnemar_p_holm"].to_numpy() == pytest.approx(holm(table["mcnemar_p"].to_numpy()))
    assert (table["mcnemar_p_holm"] >= table["mcnemar_p"]).all()
    assert list(table.columns[:2]) == ["run_a", "run_b"]
