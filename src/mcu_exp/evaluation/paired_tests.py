"""The paired tests of two runs on the same programs: DeLong's test of ΔAUC, McNemar's test of
equal accuracy, and the Holm–Bonferroni adjustment of a family of p-values.

Used by :mod:`mcu_exp.evaluation.paired` (which re-exports them); ``docs/comparisons.md``
has the formulas. Positive class = understandable (human label 1); a score is higher for
more understandable programs; a value that does not exist on the data is NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mcu_exp.evaluation.metrics import ArrayLike, as_binary, as_score
from mcu_exp.evaluation.registry import UNDEFINED

EXACT_BELOW = 25  # McNemar: exact binomial p when b + c is below this, χ² with continuity correction otherwise
EXACT = "exact"
CHI2_CC = "chi2-cc"


# ---------------------------------------------------------------------------------------------
# DeLong


@dataclass(frozen=True)
class DeLong:
    """DeLong's test of AUC(A) − AUC(B) on the same programs: ``variance`` is the DeLong
    variance of the difference, z = delta / √variance, ``p`` two-sided (normal)."""

    auc_a: float
    auc_b: float
    delta: float
    variance: float
    z: float
    p: float


def delong_covariance(truth: ArrayLike, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The AUCs of k scores on the same programs and DeLong's (k, k) covariance matrix of
    them, by Sun & Xu (2014)'s midranks: with m positives X and n negatives Y,

    V10ᵢ = (T_Z(Xᵢ) − T_X(Xᵢ)) / n,   V01ⱼ = 1 − (T_Z(Yⱼ) − T_Y(Yⱼ)) / m,

    (T_X, T_Y, T_Z: midranks among the positives, the negatives, all programs), AUC = mean
    V10 and S = S10/m + S01/n with S10, S01 the sample covariances (ddof 1) of the V10 and
    V01 rows. NaN (AUC and covariance) with fewer than 2 programs in a class (1 gives a
    point AUC but no covariance)."""
    from scipy.stats import rankdata  # imported here: SciPy's stats take ~0.8 s to import

    t = as_binary(truth, "truth")
    s = np.atleast_2d(np.asarray(scores, dtype=float))
    if s.shape[1] != t.size or not np.isfinite(s).all():
        raise ValueError(f"scores must be a finite (k, {t.size}) array, got shape {s.shape}")
    pos, neg = s[:, t == 1], s[:, t == 0]
    m, n = pos.shape[1], neg.shape[1]
    k = s.shape[0]
    if m == 0 or n == 0:
        return np.full(k, UNDEFINED), np.full((k, k), UNDEFINED)
    tz = rankdata(np.concatenate([pos, neg], axis=1), axis=1)
    v10 = (tz[:, :m] - rankdata(pos, axis=1)) / n
    v01 = 1.0 - (tz[:, m:] - rankdata(neg, axis=1)) / m
    auc = v10.mean(axis=1)
    if m < 2 or n < 2:
        return auc, np.full((k, k), UNDEFINED)
    cov = np.atleast_2d(np.cov(v10)) / m + np.atleast_2d(np.cov(v01)) / n
    return auc, cov


def delong_test(truth: ArrayLike, score_a: ArrayLike, score_b: ArrayLike) -> DeLong:
    """DeLong's test of ΔAUC = AUC(A) − AUC(B) for two correlated ROC curves.

    var(Δ) = S_AA + S_BB − 2 S_AB (:func:`delong_covariance`); z = Δ / √var(Δ); p = 2Φ(−|z|).
    When var(Δ) = 0 (e.g. the same ranking twice, or two perfect rankings) and Δ = 0, z = 0 and
    p = 1; a zero variance with Δ ≠ 0, or a class with fewer than 2 programs, gives NaN z and p.
    """
    from scipy.stats import norm

    t = as_binary(truth, "truth")
    a, b = as_score(score_a, "score_a", t.size), as_score(score_b, "score_b", t.size)
    aucs, cov = delong_covariance(t, np.vstack([a, b]))
    delta = float(aucs[0] - aucs[1])
    var = float(cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    if np.isnan(var):
        z = p = UNDEFINED
    elif var <= 1e-15 * max(1.0, float(cov[0, 0] + cov[1, 1])):
        var = max(var, 0.0)
        z, p = (0.0, 1.0) if abs(delta) < 1e-12 else (UNDEFINED, UNDEFINED)
    else:
        z = delta / float(np.sqrt(var))
        p = float(2.0 * norm.sf(abs(z)))
    return DeLong(float(aucs[0]), float(aucs[1]), delta, var, z, p)


# ---------------------------------------------------------------------------------------------
# McNemar


@dataclass(frozen=True)
class McNemar:
    """McNemar's test on the correctness of two labellings: ``b`` programs A labels as the
    humans did and B does not, ``c`` the reverse; ``method`` is ``exact`` (binomial, b of
    b + c at ½, two-sided) or ``chi2-cc`` (χ² = max(|b − c| − 1, 0)² / (b + c), 1 df),
    ``statistic`` the χ² (NaN for the exact test)."""

    b: int
    c: int
    statistic: float
    p: float
    method: str


def mcnemar_test(truth: ArrayLike, label_a: ArrayLike, label_b: ArrayLike, exact_below: int = EXACT_BELOW) -> McNemar:
    """McNemar's test of equal accuracy (H₀: P(A right, B wrong) = P(A wrong, B right)).

    Exact when b + c < ``exact_below``: p = min(1, 2·P(Bin(b + c, ½) ≤ min(b, c))), which is
    the two-sided binomial test at ½ (b + c = 0: p = 1). Otherwise the χ² approximation with
    Edwards' continuity correction, p = P(χ²₁ ≥ max(|b − c| − 1, 0)² / (b + c)): the
    correction moves |b − c| towards 0 and never past it, so b = c gives χ² = 0 and p = 1 (an
    uncapped (|b − c| − 1)² would turn b = c = 13 into χ² = 1/26, p = 0.845). The χ² version
    is conservative and close to exact from about 25 discordant pairs on."""
    from scipy.stats import binom, chi2

    t = as_binary(truth, "truth")
    la, lb = as_binary(label_a, "label_a"), as_binary(label_b, "label_b")
    if not t.size == la.size == lb.size:
        raise ValueError(f"truth and labels differ in length: {t.size}, {la.size}, {lb.size}")
    right_a, right_b = la == t, lb == t
    b = int(np.sum(right_a & ~right_b))
    c = int(np.sum(~right_a & right_b))
    if b + c < exact_below:
        p = 1.0 if b + c == 0 else float(min(1.0, 2.0 * binom.cdf(min(b, c), b + c, 0.5)))
        return McNemar(b, c, UNDEFINED, p, EXACT)
    stat = max(abs(b - c) - 1.0, 0.0) ** 2 / (b + c)
    return McNemar(b, c, float(stat), float(chi2.sf(stat, 1)), CHI2_CC)


# ---------------------------------------------------------------------------------------------
# Holm


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values, in the input's order.

    With the m defined p-values sorted, p₍₁₎ ≤ … ≤ p₍ₘ₎: p̃₍ᵢ₎ = min(1, maxⱼ≤ᵢ (m − j + 1) p₍ⱼ₎),
    monotone in i and capped at 1; rejecting p̃ ≤ α controls the family-wise error at α.
    NaN p-values stay NaN and do not count in m."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    if defined.size == 0:
        return out
    values = p[defined]
    if ((values < 0) | (values > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1], got {values[(values < 0) | (values > 1)][0]}")
    order = np.argsort(values, kind="stable")
    m = values.size
    stepped = np.maximum.accumulate((m - np.arange(m)) * values[order])
    out[defined[order]] = np.minimum(stepped, 1.0)
    return out
