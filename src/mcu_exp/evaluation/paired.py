"""Paired comparison of two proxies (two runs) on the programs both scored.

Two runs scored against the same human labels share their programs, so their errors are
correlated and unpaired intervals would overstate the uncertainty of a difference. Every
number here pairs the runs program by program (``docs/comparisons.md`` has the formulas):

- :func:`paired_bootstrap`: percentile intervals of ΔF1 = F1(A) − F1(B) and ΔAUC(score),
  resampling the programs jointly (one index matrix for both runs), stratified by human
  class like :mod:`mcu_exp.evaluation.bootstrap`, scored with the metric registry's
  vectorised F1 and rank-sum AUC;
- :func:`delong_test`: DeLong et al. (1988)'s test of ΔAUC for correlated ROC curves, with
  the midrank algorithm of Sun & Xu (2014), O(n log n);
- :func:`mcnemar_test`: McNemar's test on the labels' correctness (discordant pairs b, c),
  exact binomial when b + c < 25, else χ² with continuity correction;
- :func:`holm`: the Holm–Bonferroni step-down adjustment of a family of p-values;
- :func:`compare_runs` / :func:`compare_many`: all of it for two runs' ``per_program.csv``
  tables, or for every pair of many (Holm-adjusted across the pairs).

Positive class = understandable (human label 1); a score is higher for more understandable
programs. A value that does not exist on the data (an AUC with one human class, a run
without a score) is NaN, as everywhere in :mod:`mcu_exp.evaluation`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mcu_exp import names
from mcu_exp.evaluation.bootstrap import MIN_RESAMPLES, percentile_interval, stratified_indices
from mcu_exp.evaluation.metrics import ArrayLike, as_binary, as_score
from mcu_exp.evaluation.registry import UNDEFINED, Counts, Ranking, metric

EXACT_BELOW = 25  # McNemar: exact binomial p when b + c is below this, χ² with continuity correction otherwise
EXACT = "exact"
CHI2_CC = "chi2-cc"
_CELLS_PER_CHUNK = 2_000_000  # resamples × n cells scored at once, as in bootstrap.py
_SHOWN = 5  # program ids named in an error


class PairingError(ValueError):
    """Two per-program tables that cannot be compared; the message is one line."""


# ---------------------------------------------------------------------------------------------
# Pairing two runs' tables


@dataclass(frozen=True)
class Paired:
    """Two runs on their shared programs, in one order: the human labels, each run's 0/1
    labels and (None when the run has no finite score on every shared program) scores."""

    program_ids: np.ndarray
    truth: np.ndarray
    label_a: np.ndarray
    label_b: np.ndarray
    score_a: np.ndarray | None
    score_b: np.ndarray | None
    only_a: int = 0  # scored programs that the other run lacks (left out)
    only_b: int = 0

    @property
    def n(self) -> int:
        """Shared programs."""
        return int(self.truth.size)


def _scored(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of a per-program table that carry a human label and a proxy label."""
    missing = [c for c in (names.HUMAN_LABEL, names.LABEL) if c not in frame.columns]
    if missing:
        raise PairingError(f"run {name}'s per-program table lacks column(s) {', '.join(missing)}")
    kept = frame[frame[names.HUMAN_LABEL].notna() & frame[names.LABEL].notna()]
    return kept.set_axis(kept.index.astype(str), axis=0)


def _score_column(frame: pd.DataFrame) -> np.ndarray | None:
    if names.SCORE not in frame.columns:
        return None
    values = pd.to_numeric(frame[names.SCORE], errors="coerce").to_numpy(dtype=float)
    return values if np.isfinite(values).all() else None


def _listing(ids: Sequence[Any]) -> str:
    shown = ", ".join(str(i) for i in list(ids)[:_SHOWN])
    return shown + (", …" if len(ids) > _SHOWN else "")


def pair(a: pd.DataFrame, b: pd.DataFrame, names_ab: tuple[str, str] = ("A", "B")) -> Paired:
    """The programs both per-program tables (index ``program_id``) scored, i.e. with a human
    label and a proxy label in both, in A's order. Refuses (:class:`PairingError`) when they
    share no program or when their human labels differ on a shared one (the runs were scored
    against different human labels, e.g. another ``labels.group``)."""
    name_a, name_b = names_ab
    left, right = _scored(a, name_a), _scored(b, name_b)
    shared = left.index[left.index.isin(right.index)]
    if shared.has_duplicates or right.index.has_duplicates:
        dup = shared[shared.duplicated()].tolist() or right.index[right.index.duplicated()].tolist()
        raise PairingError(f"program ids repeat in a per-program table: {_listing(dup)}")
    if shared.empty:
        raise PairingError(f"runs {name_a} and {name_b} share no scored program ({name_a}: {len(left)} programs, "
                           f"e.g. {_listing(left.index) or 'none'}; {name_b}: {len(right)}, "
                           f"e.g. {_listing(right.index) or 'none'})")
    only_a, only_b = len(left) - len(shared), len(right) - len(shared)
    left, right = left.loc[shared], right.loc[shared]
    truth_a = as_binary(left[names.HUMAN_LABEL].to_numpy(), f"{name_a}'s {names.HUMAN_LABEL}")
    truth_b = as_binary(right[names.HUMAN_LABEL].to_numpy(), f"{name_b}'s {names.HUMAN_LABEL}")
    differ = np.flatnonzero(truth_a != truth_b)
    if differ.size:
        cases = [f"{shared[i]}: {truth_a[i]} vs {truth_b[i]}" for i in differ]
        raise PairingError(f"the human labels of runs {name_a} and {name_b} differ on {differ.size} of {len(shared)} "
                           f"shared programs ({_listing(cases)}): they were scored against different human labels "
                           "(labels.* settings or data), so a paired comparison has no meaning")
    return Paired(
        program_ids=shared.to_numpy(), truth=truth_a,
        label_a=as_binary(left[names.LABEL].to_numpy(), f"{name_a}'s {names.LABEL}"),
        label_b=as_binary(right[names.LABEL].to_numpy(), f"{name_b}'s {names.LABEL}"),
        score_a=_score_column(left), score_b=_score_column(right),
        only_a=only_a, only_b=only_b)


# ---------------------------------------------------------------------------------------------
# Point metrics through the registry


def f1_score(truth: np.ndarray, label: np.ndarray) -> float:
    """The registry's F1 of one labelling (NaN when undefined)."""
    return float(metric("f1").compute(Counts.from_labels(truth, label)))  # type: ignore[arg-type]


def auc_score(truth: np.ndarray, score: np.ndarray | None) -> float:
    """The registry's rank-sum AUC(score) (NaN without a score or with one human class)."""
    if score is None:
        return UNDEFINED
    return float(metric("auc_score").compute(Ranking.single(score, truth))[0])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Paired bootstrap


@dataclass(frozen=True)
class Difference:
    """A difference A − B with its paired bootstrap percentile interval and the share of
    resamples in which it was undefined (left out of the percentiles)."""

    value: float
    low: float
    high: float
    undefined_share: float = 0.0


def paired_bootstrap_distribution(
    truth: ArrayLike, label_a: ArrayLike, label_b: ArrayLike, score_a: ArrayLike | None = None,
    score_b: ArrayLike | None = None, resamples: int = 2000, seed: int = 0,
) -> dict[str, np.ndarray]:
    """ΔF1 and ΔAUC(score) (A − B) over ``resamples`` stratified resamples of the programs,
    the same rows for both runs. ``delta_auc`` is all NaN unless both scores are given."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"resamples must be at least {MIN_RESAMPLES} for a stable percentile interval, "
                         f"got {resamples}")
    t = as_binary(truth, "truth")
    la, lb = as_binary(label_a, "label_a"), as_binary(label_b, "label_b")
    if not t.size == la.size == lb.size:
        raise ValueError(f"truth and labels differ in length: {t.size}, {la.size}, {lb.size}")
    both = score_a is not None and score_b is not None
    sa = as_score(score_a, "score_a", t.size) if both else None  # type: ignore[arg-type]
    sb = as_score(score_b, "score_b", t.size) if both else None  # type: ignore[arg-type]
    f1, auc = metric("f1").compute, metric("auc_score").compute
    rng = np.random.default_rng(seed)
    chunk = max(1, _CELLS_PER_CHUNK // t.size)
    d_f1, d_auc = [], []
    for start in range(0, resamples, chunk):
        idx = stratified_indices(t, min(chunk, resamples - start), rng)
        rows = t[idx]
        d_f1.append(np.asarray(f1(Counts.from_labels(rows, la[idx])))  # type: ignore[arg-type]
                    - np.asarray(f1(Counts.from_labels(rows, lb[idx]))))  # type: ignore[arg-type]
        if sa is not None and sb is not None:
            auc_a = np.asarray(auc(Ranking(sa, idx, rows)))  # type: ignore[arg-type]
            d_auc.append(auc_a - np.asarray(auc(Ranking(sb, idx, rows))))  # type: ignore[arg-type]
        else:
            d_auc.append(np.full(idx.shape[0], UNDEFINED))
    return {"delta_f1": np.concatenate(d_f1), "delta_auc": np.concatenate(d_auc)}


def paired_bootstrap(
    truth: ArrayLike, label_a: ArrayLike, label_b: ArrayLike, score_a: ArrayLike | None = None,
    score_b: ArrayLike | None = None, resamples: int = 2000, seed: int = 0, confidence: float = 0.95,
) -> dict[str, Difference]:
    """ΔF1 and ΔAUC(score) (A − B): point values on all programs and paired stratified
    bootstrap percentile intervals (see :func:`paired_bootstrap_distribution`)."""
    t = as_binary(truth, "truth")
    la, lb = as_binary(label_a, "label_a"), as_binary(label_b, "label_b")
    both = score_a is not None and score_b is not None
    sa = as_score(score_a, "score_a", t.size) if both else None  # type: ignore[arg-type]
    sb = as_score(score_b, "score_b", t.size) if both else None  # type: ignore[arg-type]
    dist = paired_bootstrap_distribution(t, la, lb, sa, sb, resamples, seed)
    points = {"delta_f1": f1_score(t, la) - f1_score(t, lb), "delta_auc": auc_score(t, sa) - auc_score(t, sb)}
    out = {}
    for key, values in dist.items():
        low, high = percentile_interval(values, confidence)
        out[key] = Difference(points[key], low, high, float(np.isnan(values).mean()))
    return out


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
    b + c at ½, two-sided) or ``chi2-cc`` (χ² = (|b − c| − 1)² / (b + c), 1 df), ``statistic``
    the χ² (NaN for the exact test)."""

    b: int
    c: int
    statistic: float
    p: float
    method: str


def mcnemar_test(truth: ArrayLike, label_a: ArrayLike, label_b: ArrayLike,
                 exact_below: int = EXACT_BELOW) -> McNemar:
    """McNemar's test of equal accuracy (H₀: P(A right, B wrong) = P(A wrong, B right)).

    Exact when b + c < ``exact_below``: p = min(1, 2·P(Bin(b + c, ½) ≤ min(b, c))), which is
    the two-sided binomial test at ½ (b + c = 0: p = 1). Otherwise the χ² approximation with
    Edwards' continuity correction, p = P(χ²₁ ≥ (|b − c| − 1)² / (b + c)). The χ² version
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
    stat = (abs(b - c) - 1.0) ** 2 / (b + c)
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


# ---------------------------------------------------------------------------------------------
# Two runs, many runs


@dataclass(frozen=True)
class Comparison:
    """Run A against run B on their shared programs (see :func:`compare_runs`)."""

    n: int
    n_pos: int
    f1_a: float
    f1_b: float
    delta_f1: Difference
    auc_a: float
    auc_b: float
    delta_auc: Difference
    delong: DeLong | None
    mcnemar: McNemar
    prr_a: float
    prr_b: float
    resamples: int
    seed: int
    confidence: float

    def row(self) -> dict[str, float | int | str]:
        """One flat row (the CSV of ``mcu-exp compare`` and :func:`compare_many`)."""
        d = self.delong
        return {
            "n": self.n, "n_understandable": self.n_pos,
            "f1_a": self.f1_a, "f1_b": self.f1_b, "delta_f1": self.delta_f1.value,
            "delta_f1_ci_low": self.delta_f1.low, "delta_f1_ci_high": self.delta_f1.high,
            "auc_score_a": self.auc_a, "auc_score_b": self.auc_b, "delta_auc_score": self.delta_auc.value,
            "delta_auc_score_ci_low": self.delta_auc.low, "delta_auc_score_ci_high": self.delta_auc.high,
            "delong_variance": d.variance if d else UNDEFINED, "delong_z": d.z if d else UNDEFINED,
            "delong_p": d.p if d else UNDEFINED,
            "mcnemar_b": self.mcnemar.b, "mcnemar_c": self.mcnemar.c,
            "mcnemar_statistic": self.mcnemar.statistic, "mcnemar_p": self.mcnemar.p,
            "mcnemar_method": self.mcnemar.method,
            "prr_a": self.prr_a, "prr_b": self.prr_b,
            "resamples": self.resamples, "seed": self.seed, "confidence": self.confidence,
        }


def compare_paired(data: Paired, resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Comparison:
    """Every paired statistic of two runs already paired by :func:`pair`."""
    from mcu_exp.evaluation.rejection import prediction_rejection

    t = data.truth
    boot = paired_bootstrap(t, data.label_a, data.label_b, data.score_a, data.score_b, resamples, seed, confidence)
    delong = None
    if data.score_a is not None and data.score_b is not None:
        delong = delong_test(t, data.score_a, data.score_b)

    def prr(score: np.ndarray | None) -> float:
        return UNDEFINED if score is None else prediction_rejection(t, score).prr

    return Comparison(
        n=data.n, n_pos=int(t.sum()), f1_a=f1_score(t, data.label_a), f1_b=f1_score(t, data.label_b),
        delta_f1=boot["delta_f1"], auc_a=auc_score(t, data.score_a), auc_b=auc_score(t, data.score_b),
        delta_auc=boot["delta_auc"], delong=delong, mcnemar=mcnemar_test(t, data.label_a, data.label_b),
        prr_a=prr(data.score_a), prr_b=prr(data.score_b), resamples=resamples, seed=seed, confidence=confidence)


def compare_runs(a: pd.DataFrame, b: pd.DataFrame, resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95, names_ab: tuple[str, str] = ("A", "B")) -> Comparison:
    """Two runs' per-program tables (index ``program_id``; columns ``human_label``,
    ``label`` and, for score-based proxies, ``score``) compared on their shared programs:
    F1 and AUC(score) of each, paired bootstrap intervals of the differences, DeLong's and
    McNemar's tests, and each run's prediction rejection ratio."""
    return compare_paired(pair(a, b, names_ab), resamples, seed, confidence)


def compare_many(frames: Mapping[str, pd.DataFrame], resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> pd.DataFrame:
    """Every pair (in the order of ``frames``) as :meth:`Comparison.row` with columns
    ``run_a`` and ``run_b`` in front, plus ``delong_p_holm`` and ``mcnemar_p_holm``: each
    test's p-values Holm-adjusted over all the pairs (the family; undefined p-values left
    out of it). A pair that cannot be paired raises :class:`PairingError`."""
    rows = []
    for name_a, name_b in itertools.combinations(frames, 2):
        found = compare_runs(frames[name_a], frames[name_b], resamples, seed, confidence, (name_a, name_b))
        rows.append({"run_a": name_a, "run_b": name_b, **found.row()})
    table = pd.DataFrame(rows, columns=None if rows else ["run_a", "run_b", "delong_p", "mcnemar_p"])
    table["delong_p_holm"] = holm(table["delong_p"].to_numpy(dtype=float))
    table["mcnemar_p_holm"] = holm(table["mcnemar_p"].to_numpy(dtype=float))
    return table
