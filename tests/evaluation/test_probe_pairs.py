"""The paired analysis equals a brute-force computation on a small case, and scipy's."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mcu_exp.evaluation.probe_pairs import paired_analysis, render, sentence, sign_agreement

# 8 pairs, no ties, no zeros: the exact Wilcoxon p and Spearman's ρ are defined without rules for ties
PROXY = pd.Series([-0.30, -0.12, 0.05, -0.41, -0.07, 0.22, -0.18, -0.26], index=list("abcdefgh"))
HUMAN = pd.Series([-0.20, -0.05, 0.10, -0.35, 0.02, 0.15, -0.30, -0.01], index=list("abcdefgh"))
KIND = pd.Series(["x", "x", "x", "x", "y", "y", "y", "y"], index=list("abcdefgh"))


def test_share_and_its_exact_interval_are_clopper_pearson() -> None:
    result = paired_analysis(PROXY, -1, resamples=200)
    moved, n = int((PROXY < 0).sum()), len(PROXY)
    assert (result.moved, result.n, result.share) == (moved, n, moved / n) == (6, 8, 0.75)
    low = stats.beta.ppf(0.025, moved, n - moved + 1)
    high = stats.beta.ppf(0.975, moved + 1, n - moved)
    assert result.share_low == pytest.approx(low) and result.share_high == pytest.approx(high)
    p = sum(
        stats.binom.pmf(k, n, 0.5)
        for k in range(n + 1)
        if stats.binom.pmf(k, n, 0.5) <= stats.binom.pmf(moved, n, 0.5) * (1 + 1e-7)
    )
    assert result.share_p == pytest.approx(p)


def test_wilcoxon_p_is_the_exact_sign_flip_distribution() -> None:
    d = PROXY.to_numpy()
    ranks = stats.rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    flips = [ranks[np.array(s, dtype=bool)].sum() for s in itertools.product([0, 1], repeat=len(d))]
    mean = ranks.sum() / 2
    brute = np.mean([abs(w - mean) >= abs(observed - mean) - 1e-12 for w in flips])
    result = paired_analysis(PROXY, -1, resamples=200)
    assert result.wilcoxon_p == pytest.approx(brute) == pytest.approx(stats.wilcoxon(d).pvalue)


@pytest.mark.parametrize("zeros", [1, 61])
def test_wilcoxon_p_drops_the_zeros_before_choosing_its_method(zeros: int) -> None:
    """Tied pairs (Δproxy = 0) leave the test: the p-value is the exact sign-flip p of the
    others, as without them (SciPy chose a normal approximation, with the zeros counted in n,
    as soon as one was there: 0.18 instead of 0.5 for 61 zeros and two falls)."""
    for moved in (PROXY.to_numpy(), np.array([-0.4, -0.7])):
        ranks = stats.rankdata(np.abs(moved))
        flips = [ranks[np.array(s, dtype=bool)].sum() for s in itertools.product([0, 1], repeat=moved.size)]
        mean, observed = ranks.sum() / 2, ranks[moved > 0].sum()
        brute = np.mean([abs(w - mean) >= abs(observed - mean) - 1e-12 for w in flips])
        with_ties = pd.Series(np.r_[moved, np.zeros(zeros)], index=[f"p{i}" for i in range(moved.size + zeros)])
        assert paired_analysis(with_ties, -1, resamples=200).wilcoxon_p == pytest.approx(brute)


def test_median_interval_is_the_percentile_bootstrap_over_pairs() -> None:
    result = paired_analysis(PROXY, -1, resamples=500, seed=3)
    d = PROXY.to_numpy()
    draws = np.random.default_rng(3).integers(0, len(d), size=(500, len(d)))
    medians = [np.median([d[i] for i in row]) for row in draws]
    assert result.median == np.median(d)
    assert (result.median_low, result.median_high) == pytest.approx(tuple(np.percentile(medians, [2.5, 97.5])))


def _spearman_by_hand(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))  # no ties: ranks are positions
    n = len(x)
    return float(1 - 6 * ((rx - ry) ** 2).sum() / (n * (n * n - 1)))


def test_spearman_and_its_bootstrap_interval() -> None:
    result = paired_analysis(PROXY, -1, HUMAN, resamples=400, seed=1)
    x, y = PROXY.to_numpy(), HUMAN.to_numpy()
    assert result.spearman == pytest.approx(_spearman_by_hand(x, y)) == pytest.approx(stats.spearmanr(x, y)[0])
    draws = np.random.default_rng(1).integers(0, len(x), size=(400, len(x)))
    rhos = np.array([stats.spearmanr(x[row], y[row])[0] if len(set(row)) > 1 else np.nan for row in draws])
    low, high = np.percentile(rhos[~np.isnan(rhos)], [2.5, 97.5])
    assert (result.spearman_low, result.spearman_high) == pytest.approx((low, high))


def test_sign_agreement_counts_each_pair_once() -> None:
    table = paired_analysis(PROXY, -1, HUMAN, resamples=100).agreement
    assert table is not None
    brute = {
        (p, h): sum((np.sign(a) == p) and (np.sign(b) == h) for a, b in zip(PROXY, HUMAN, strict=True))
        for p in (-1, 1)
        for h in (-1, 1)
    }
    assert table.loc["falls", "falls"] == brute[(-1, -1)] == 5
    assert table.loc["falls", "rises"] == brute[(-1, 1)]
    assert table.loc["rises", "falls"] == brute[(1, -1)]
    assert table.loc["rises", "rises"] == brute[(1, 1)]
    assert int(table.to_numpy().sum()) == len(PROXY)


def test_a_zero_delta_does_not_move_and_is_a_tie_in_the_table() -> None:
    proxy = pd.Series([-1.0, 0.0, 1.0, -2.0])
    result = paired_analysis(proxy, -1, resamples=100)
    assert (result.moved, result.n, result.tied) == (2, 4, 1)
    assert result.share == pytest.approx(2 / 3)  # the sign test leaves the tie out
    table = sign_agreement(proxy.to_numpy(), np.array([-1.0, -1.0, 0.0, 1.0]))
    assert table.loc["tie", "falls"] == 1 and table.loc["rises", "tie"] == 1


def test_direction_up_counts_rises() -> None:
    assert paired_analysis(PROXY, 1, resamples=100).moved == 2


def test_per_kind_table() -> None:
    by_kind = paired_analysis(PROXY, -1, HUMAN, KIND, resamples=100).by_kind
    assert list(by_kind.index) == ["x", "y"]
    assert by_kind.loc["x", "moved"] == 3 and by_kind.loc["y", "moved"] == 3
    assert by_kind.loc["y", "median_delta_proxy"] == pytest.approx(np.median(PROXY["e":"h"]))


def test_pairs_without_a_human_effect_are_left_out() -> None:
    human = HUMAN.copy()
    human["a"] = np.nan
    assert paired_analysis(PROXY, -1, human, resamples=100).n == 7


def test_sentence_says_the_share_and_whether_it_is_the_humans_direction() -> None:
    strong = paired_analysis(pd.Series(-np.arange(1.0, 21.0)), -1, resamples=100)
    assert sentence(strong, "p1", "after rename_identifiers", "programs") == (
        "p1's score falls after rename_identifiers in 20 of 20 programs (100 % [83 %, 100 %]), "
        "the direction humans show."
    )
    assert "no clear direction" in sentence(paired_analysis(PROXY, -1, resamples=100), "p1", "after x")
    against = paired_analysis(pd.Series(np.arange(1.0, 21.0)), -1, resamples=100)
    assert "mostly against the direction humans show" in sentence(against, "p1", "after x")
    assert "Spearman" in render(paired_analysis(PROXY, -1, HUMAN, resamples=100), "t")


def test_a_proxy_that_scores_most_twins_alike_is_not_against_the_humans() -> None:
    """61 ties and 2 falls: the sign test is on the 2 untied pairs (2 of 2 in the humans'
    direction, p = 0.5), not 2 of 63 (which read as significantly against them, p ~ 1e-16)."""
    proxy = pd.Series([0.0] * 61 + [-0.1, -0.2])
    result = paired_analysis(proxy, -1, resamples=100)
    assert (result.tied, result.moved, result.share) == (61, 2, 1.0)
    assert result.share_p == pytest.approx(stats.binomtest(2, 2, 0.5).pvalue)
    assert "2 of 2 pairs (100 %" in sentence(result, "p0_output", "on the confusing twin")
    assert "61 tied (Δ score 0: left out of the sign test)" in render(result, "Twins")
    none = paired_analysis(pd.Series([0.0, 0.0]), -1, resamples=10)
    assert "does not move on the confusing twin in any of the 2 pairs" in sentence(
        none, "p0_output", "on the confusing twin"
    )
