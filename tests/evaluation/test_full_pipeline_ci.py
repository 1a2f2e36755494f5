"""Confidence intervals that include calibration, the permutation test of AUC(score) and the
verdict sentence: each checked against a brute-force or exact reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import f1_score, recall_score

from mcu_exp.calibration import Scores, get_rule, threshold
from mcu_exp.config import DecisionConfig
from mcu_exp.evaluation import evaluate, render_table, resample_metrics, stratified_indices
from mcu_exp.evaluation.significance import auc_permutation_p


def _calibrated(n: int = 50, seed: int = 0) -> tuple[np.ndarray, Scores, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.55).astype(int)
    alpha_cal = np.clip(0.5 - 0.08 * y + rng.normal(0.0, 0.12, n), 0, 1)
    alpha_test = np.clip(0.5 - 0.08 * y + rng.normal(0.0, 0.12, n), 0, 1)
    return y, Scores(alpha_cal=alpha_cal, alpha_test=alpha_test), alpha_test


@pytest.mark.parametrize("quantile", ["empirical", "conformal", "linear"])
def test_recalibrated_resamples_equal_recomputing_tau_by_hand(quantile: str) -> None:
    y, scores, alpha_test = _calibrated()
    cfg = DecisionConfig(epsilon=0.2, quantile=quantile)
    rule = get_rule("conformal")
    assert rule.calibrates and not get_rule("theta").calibrates
    idx = stratified_indices(y, 30, np.random.default_rng(1))
    labels = (alpha_test <= threshold(scores.alpha_cal, 0.2, quantile)).astype(int)
    got = resample_metrics(y, labels, idx, relabel=lambda rows: rule.relabel(scores, cfg, rows))  # type: ignore[misc]
    for r, row in enumerate(idx):
        tau = threshold(scores.alpha_cal[row], 0.2, quantile)  # τ from this resample's programs only
        relabelled = (alpha_test[row] <= tau).astype(int)
        assert got["f1"][r] == pytest.approx(f1_score(y[row], relabelled, zero_division=np.nan), abs=1e-12)
        assert got["recall"][r] == pytest.approx(recall_score(y[row], relabelled), abs=1e-12)


def test_p1_and_theta_relabels_both_parts() -> None:
    y, base, alpha_test = _calibrated(seed=3)
    similarity = 1.0 - alpha_test
    scores = Scores(similarity_test=similarity, p1_alpha_cal=base.alpha_cal, p1_alpha_test=alpha_test)
    cfg = DecisionConfig(epsilon=0.2, rule="p1_and_theta", theta=0.5)
    idx = stratified_indices(y, 10, np.random.default_rng(2))
    got = get_rule("p1_and_theta").relabel(scores, cfg, idx)  # type: ignore[misc]
    for r, row in enumerate(idx):
        tau = threshold(base.alpha_cal[row], 0.2)
        assert got[r].tolist() == ((alpha_test[row] <= tau) & (similarity[row] >= 0.5)).astype(int).tolist()


def test_recalibrating_ci_is_wider_than_the_conditional_one_and_says_so() -> None:
    y, scores, alpha_test = _calibrated(seed=5)
    cfg = DecisionConfig(epsilon=0.1)
    rule = get_rule("conformal")
    pred = (alpha_test <= threshold(scores.alpha_cal, 0.1)).astype(int)
    fixed = evaluate(y, pred, -alpha_test, resamples=2000, seed=0)
    full = evaluate(y, pred, -alpha_test, resamples=2000, seed=0, relabel=lambda rows: rule.relabel(scores, cfg, rows))  # type: ignore[misc]
    assert full.metrics == fixed.metrics  # the point values do not change
    width = {name: rep.ci["f1"][1] - rep.ci["f1"][0] for name, rep in (("fixed", fixed), ("full", full))}
    assert width["full"] > width["fixed"]  # τ's own uncertainty is in the interval
    assert full.ci["auc_score"] == fixed.ci["auc_score"]  # a threshold-free metric is unaffected
    assert (full.ci_method, fixed.ci_method) == ("recalibrate", "conditional")
    assert "τ recalibrated in each" in " ".join(render_table(full).split())  # the caption, unwrapped
    assert "label fixed" in " ".join(render_table(fixed).split())


def test_permutation_p_matches_the_exact_mann_whitney_test() -> None:
    rng = np.random.default_rng(4)
    y = np.r_[np.ones(12), np.zeros(10)].astype(int)
    score = rng.normal(size=22) + 0.9 * y  # no ties: the exact null distribution applies
    exact = stats.mannwhitneyu(score[y == 1], score[y == 0], method="exact").pvalue
    p = auc_permutation_p(y, score, permutations=20_000, seed=1)
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4
    separated = auc_permutation_p(np.r_[np.ones(5), np.zeros(5)].astype(int), np.arange(10.0)[::-1], 20_000)
    assert separated == pytest.approx(2 / math.comb(10, 5), abs=0.003)  # only the two perfect orders
    assert math.isnan(auc_permutation_p(np.ones(6, int), np.arange(6.0), 1000))
    with pytest.raises(ValueError, match="at least 100"):
        auc_permutation_p(y, score, permutations=10)


def test_verdict_says_whether_f1_beats_always_one_and_auc_beats_chance() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random(50) < 0.5).astype(int)
    good = evaluate(y, y, y + rng.normal(0, 0.1, 50), resamples=1000)
    assert "beats the always-understandable baseline" in good.verdict
    assert "excludes 0.5" in good.verdict
    noise = rng.random(50)
    poor = evaluate(y, (noise < 0.9).astype(int), noise, resamples=1000)
    assert "does not beat the always-understandable baseline" in poor.verdict
    assert "includes 0.5: no evidence" in poor.verdict
    assert render_table(poor).rstrip().splitlines()[-1].endswith("chance.")  # the table ends with it
