"""The humans' ceiling as two bounds: split-half (lower) and a beta-binomial reader model (upper).

**Lower bound.** Today's split-half figures (:func:`mcu_exp.ceiling.split_half.split_half`): half a
panel's mean ABU50 against the other half's label. A proxy is scored against the *full* panel,
whose label is less noisy than a half panel's, so the half-panel AUC understates what a perfect
predictor could reach: a pessimistic bound. :func:`lower_bound` is that computation, unchanged.

**Upper bound.** A reader model of the per-evaluation ABU50 (1 = the reader understood it):

* each program p has a true understandability π_p ~ Beta(a, b), independently;
* each of its n_p readers understood it with probability π_p, independently, so the number who
  did, k_p, is Binomial(n_p, π_p) given π_p and beta-binomial(n_p, a, b) marginally.

Assumptions: readers are exchangeable within a program (no reader effect: a reader who is better
than average on every program is not modelled; a crossed reader × program model would be), and
the panel sizes n_p are taken as observed (their empirical distribution; they are not modelled).
The intra-class correlation of two readers of one program is ρ_ICC = 1 / (a + b + 1).

(a, b) are fitted by maximum likelihood on the per-program (k_p, n_p). The log-likelihood,
up to a constant, is ``Σ_p [ln B(k_p + a, n_p − k_p + b) − ln B(a, b)]`` which, for integer counts,
is ``Σ_j A_j ln(a + j) + B_j ln(b + j) − C_j ln(a + b + j)`` with ``A_j = #{p: k_p > j}``,
``B_j = #{p: n_p − k_p > j}``, ``C_j = #{p: n_p > j}``: the data enter only through three short
histograms, so many fits (one per bootstrap resample) run at once as one matrix product over a
(μ, ρ_ICC) grid followed by vectorised Newton steps in (ln a, ln b). A fit whose maximum lies at
ρ_ICC → 0 (no between-program variation: the binomial model) starts from the grid's smallest
ρ_ICC and the Newton steps carry it further towards 0 (still the maximum of the likelihood);
every bound there is ≈ chance, which is the limit.

From the fitted model, with the label rule ``L_p = [k_p / n_p ≥ min_fraction]`` (the tolerance of
:data:`mcu_exp.data.labels.TOLERANCE`), three population figures (programs → ∞, panel sizes drawn
from the observed ones) are computed by quadrature over π, not by simulation:

* ``upper_auc_score`` — the AUC of the true π against the full-panel label:
  ``P(π_i > π_j | L_i = 1, L_j = 0)``. It is also the expected AUC over datasets of any number of
  programs given that both classes occur (the positives and the negatives of a dataset are iid
  draws of the class-conditional π), so it is the expected AUC of an ideal proxy on data like
  these. :func:`simulate_upper_auc` checks it by direct Monte Carlo;
* ``second_panel_auc_score`` — the AUC of a second, independent full panel's mean ABU50 (same
  panel sizes) against this panel's label, ties counted ½: what a replication of the study would
  reach, between the two bounds;
* ``upper_spearman`` — the population Spearman ρ between π and the full panel's mean ABU50
  (mid-ranks for its ties: the correlation of the two mid-distribution functions). Note the human
  value here is the mean ABU50 of the model, not the mean correctness a proxy's ρ is computed
  against, and the expected *sample* ρ of P programs is lower by about 3(ρ − τ)/(P + 1) (≈ 0.01
  at 50 programs).

Quadrature: π is discretised on fixed bins (the quantiles of a reference Beta, usually the
point-estimate fit, joined with a uniform grid); each bin carries its Beta mass (regularised
incomplete beta at its edges) at its midpoint, and two programs in one bin count as a tie (½).
The discretisation error is below 1e-3 for the usual fits (tested against Monte Carlo).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcu_exp.ceiling.split_half import MIN_PROGRAMS, Reliability, split_half
from mcu_exp.data.labels import ALL, RULES, TOLERANCE, abu50, check_settings, label_evaluations, share_correct
from mcu_exp.data.types import Dataset

MODEL_RULE = "mean_abu50"
"""The only label rule the beta-binomial model describes (a count of readers who understood)."""
MODEL_FIGURES = ("upper_auc_score", "second_panel_auc_score", "upper_spearman")
"""The model-based figures, in the order :func:`model_figures` returns them."""
_ICC_RANGE = (-10.0, 2.5)  # logit ρ_ICC of the fitting grid: ρ_ICC from 4.5e-5 to 0.92
_MEAN_RANGE = (-6.0, 6.0)  # logit μ of the fitting grid
_GRID = 48  # points per axis of the fitting grid
_NEWTON_STEPS = 25
_MAX_LOG = math.log(1e7)  # a, b at most 1e7 (ρ_ICC ≥ 5e-8): beyond, the model is binomial
_BINS = 256  # quadrature bins from the reference Beta's quantiles, plus as many uniform ones


@dataclass(frozen=True)
class BetaBinomialFit:
    """Maximum-likelihood (a, b) of π ~ Beta(a, b), with the fit's log-likelihood (up to the
    constant ``Σ ln C(n_p, k_p)``) and the programs it saw."""

    a: float
    b: float
    loglik: float
    programs: int

    @property
    def mean(self) -> float:
        """E[π] = a / (a + b): the mean probability that a reader understands a program."""
        return self.a / (self.a + self.b)

    @property
    def icc(self) -> float:
        """ρ_ICC = 1 / (a + b + 1): the correlation of two readers' ABU50 on one program."""
        return 1.0 / (self.a + self.b + 1.0)


@dataclass(frozen=True)
class UpperBound:
    """The beta-binomial fit of one label set and its model-based figures (:data:`MODEL_FIGURES`,
    NaN when undefined), with the program counts (``programs``: those with ≥ 2 readers, which
    identify the dispersion; ``programs_left_out``: those with one reader, kept in the fit)."""

    fit: BetaBinomialFit
    figures: dict[str, float]
    programs: int
    programs_left_out: int
    min_fraction: float

    @property
    def defined(self) -> bool:
        """Whether enough programs have two readers, in both classes, for the bound to be a number."""
        return bool(np.isfinite(self.figures["upper_auc_score"]))


def reader_counts(
    dataset: Dataset, rule: str = MODEL_RULE, min_fraction: float = 0.5, group: str = ALL, readers: str = ALL
) -> pd.DataFrame:
    """Per program (dataset order, only those with an evaluation counted): ``readers`` (n_p),
    ``successes`` (k_p, readers with ABU50 = 1), ``fraction`` (the rule's score), ``label`` (the
    run's label: ``fraction ≥ min_fraction``, the tolerance of :mod:`mcu_exp.data.labels`) and
    ``correctness`` (mean ``correct / total``, the humans' continuous value of a proxy's ρ)."""
    check_settings(rule, min_fraction, group, readers)
    evaluations = label_evaluations(dataset, group, readers)
    by_program = evaluations["program_id"]
    fraction = RULES[rule](evaluations)
    kept = [pid for pid in dataset.program_ids if pid in fraction.index]
    frame = pd.DataFrame(
        {
            "readers": evaluations.groupby(by_program).size().reindex(kept).astype(int),
            "successes": abu50(evaluations).astype(int).groupby(by_program).sum().reindex(kept).astype(int),
            "fraction": fraction.reindex(kept).astype(float),
            "correctness": share_correct(evaluations).groupby(by_program).mean().reindex(kept).astype(float),
        }
    )
    frame["label"] = (frame["fraction"] >= min_fraction - TOLERANCE).astype(int)
    frame.index.name = "program_id"
    return frame


# --- the fit -------------------------------------------------------------------------------------


def count_histograms(successes: np.ndarray, readers: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """(rows, 3, J) histograms ``A_j, B_j, C_j`` (see the module docstring) of the programs, each
    counted ``weights[row, p]`` times (default: once, one row); J = the largest panel."""
    k, n = np.asarray(successes, dtype=int), np.asarray(readers, dtype=int)
    j = np.arange(max(int(n.max(initial=0)), 1))
    per_program = np.stack([k[:, None] > j, (n - k)[:, None] > j, n[:, None] > j], axis=1).astype(float)
    w = np.ones((1, k.size)) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    out: np.ndarray = np.einsum("rp,pcj->rcj", w, per_program)
    return out


def _loglik(hist: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Log-likelihood of each row's histograms at its (a, b): (rows,) arrays."""
    j = np.arange(hist.shape[2])
    out: np.ndarray = (
        hist[:, 0] * np.log(a[:, None] + j)
        + hist[:, 1] * np.log(b[:, None] + j)
        - hist[:, 2] * np.log((a + b)[:, None] + j)
    ).sum(axis=1)
    return out


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """The fitting grid's (a, b), flattened."""
    mu = 1.0 / (1.0 + np.exp(-np.linspace(*_MEAN_RANGE, _GRID)))
    icc = 1.0 / (1.0 + np.exp(-np.linspace(*_ICC_RANGE, _GRID)))
    total = 1.0 / icc[None, :] - 1.0
    return (mu[:, None] * total).ravel(), ((1.0 - mu[:, None]) * total).ravel()


def fit_histograms(hist: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximum-likelihood (a, b) and log-likelihood of each row of ``hist`` (:func:`count_histograms`).

    The best point of a (μ, ρ_ICC) grid, then Newton steps in (ln a, ln b), each kept only where
    it raises the likelihood (halved up to 8 times otherwise). NaN where a row has no success or
    no failure (μ at 0 or 1: the model is degenerate)."""
    rows, _, width = hist.shape
    ga, gb = _grid()
    j = np.arange(width)
    features = np.concatenate(
        [np.log(ga[:, None] + j), np.log(gb[:, None] + j), -np.log((ga + gb)[:, None] + j)], axis=1
    )
    best = np.argmax(hist.reshape(rows, -1) @ features.T, axis=1)
    x, y = np.log(ga[best]), np.log(gb[best])
    current = _loglik(hist, np.exp(x), np.exp(y))
    for _ in range(_NEWTON_STEPS):
        a, b = np.exp(x), np.exp(y)
        ia, ib, iab = 1.0 / (a[:, None] + j), 1.0 / (b[:, None] + j), 1.0 / ((a + b)[:, None] + j)
        ga_, gb_ = (hist[:, 0] * ia - hist[:, 2] * iab).sum(1), (hist[:, 1] * ib - hist[:, 2] * iab).sum(1)
        caa = (hist[:, 2] * iab**2).sum(1)
        haa, hbb = (-hist[:, 0] * ia**2).sum(1) + caa, (-hist[:, 1] * ib**2).sum(1) + caa
        gx, gy = a * ga_, b * gb_
        hxx, hyy, hxy = a * a * haa + gx, b * b * hbb + gy, a * b * caa
        det = hxx * hyy - hxy * hxy
        concave = (hxx < 0) & (det > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            dx = np.where(concave, -(hyy * gx - hxy * gy) / det, 0.0)
            dy = np.where(concave, -(hxx * gy - hxy * gx) / det, 0.0)
        norm = np.maximum(1.0, np.hypot(dx, dy))  # at most one unit of ln a, ln b per step
        dx, dy = dx / norm, dy / norm
        step = np.ones(rows)
        for _ in range(8):
            nx, ny = np.minimum(x + step * dx, _MAX_LOG), np.minimum(y + step * dy, _MAX_LOG)
            trial = _loglik(hist, np.exp(nx), np.exp(ny))
            better = trial >= current
            x, y, current = np.where(better, nx, x), np.where(better, ny, y), np.where(better, trial, current)
            step = np.where(better, 0.0, step / 2.0)
            if not step.any():
                break
    degenerate = (hist[:, 0, 0] == 0) | (hist[:, 1, 0] == 0)
    nan = np.where(degenerate, np.nan, 1.0)
    return np.exp(x) * nan, np.exp(y) * nan, current * nan


def fit_beta_binomial(successes: np.ndarray, readers: np.ndarray) -> BetaBinomialFit:
    """Maximum-likelihood beta-binomial fit of per-program successes k_p out of readers n_p
    (see :func:`fit_histograms`); NaN parameters when every reader or none succeeded."""
    a, b, loglik = fit_histograms(count_histograms(successes, readers))
    return BetaBinomialFit(a=float(a[0]), b=float(b[0]), loglik=float(loglik[0]), programs=int(np.size(readers)))


# --- the model's figures -------------------------------------------------------------------------


@dataclass(frozen=True)
class Quadrature:
    """Fixed bins of π and, per distinct panel size n, the binomial pmf of k = 0..n at each bin's
    midpoint; built once and reused for every fit of a bootstrap (:func:`quadrature`)."""

    edges: np.ndarray
    sizes: np.ndarray
    pmf: tuple[np.ndarray, ...]  # per size n: (bins, n + 1)
    cut: np.ndarray  # per size: the least k labelled 1
    values: np.ndarray  # the distinct k / n over all sizes, ascending
    value_index: tuple[np.ndarray, ...]  # per size: the position in ``values`` of each k / n


def quadrature(sizes: np.ndarray, min_fraction: float, a: float = math.nan, b: float = math.nan) -> Quadrature:
    """Bins for panel sizes ``sizes`` and the label ``k / n ≥ min_fraction``: ``_BINS`` quantiles
    of the reference Beta(a, b) (skipped when a, b are NaN) joined with ``_BINS`` uniform bins."""
    from scipy.special import betaincinv
    from scipy.stats import binom

    u = np.linspace(0.0, 1.0, _BINS + 1)
    edges = [u]
    if np.isfinite(a) and np.isfinite(b):
        edges.append(betaincinv(a, b, u))
    all_edges = np.unique(np.clip(np.concatenate(edges), 0.0, 1.0))
    mid = (all_edges[:-1] + all_edges[1:]) / 2.0
    distinct = np.unique(np.asarray(sizes, dtype=int))
    distinct = distinct[distinct > 0]
    pmf = tuple(binom.pmf(np.arange(n + 1)[None, :], n, mid[:, None]) for n in distinct)
    cut = np.array([int(np.flatnonzero(np.arange(n + 1) / n >= min_fraction - TOLERANCE)[0]) for n in distinct])
    fractions = [np.round(np.arange(n + 1) / n, 12) for n in distinct]
    values = np.unique(np.concatenate(fractions))
    index = tuple(np.searchsorted(values, f) for f in fractions)
    return Quadrature(edges=all_edges, sizes=distinct, pmf=pmf, cut=cut, values=values, value_index=index)


def model_figures(a: np.ndarray, b: np.ndarray, size_weights: np.ndarray, quad: Quadrature) -> dict[str, np.ndarray]:
    """The figures of :data:`MODEL_FIGURES` for each row's Beta(a, b) and panel-size distribution
    (``size_weights``: (rows, sizes) shares of programs with each of ``quad.sizes`` readers).

    With bin masses m_i at midpoints x_i, q_i = Σ_n w_n P(Bin(n, x_i) ≥ cut_n) the probability
    that a program in bin i is labelled 1:

    * AUC(π, L) = Σ_i m_i q_i (Σ_{h<i} m_h (1 − q_h) + ½ m_i (1 − q_i)) / (P₁ P₀);
    * AUC(M', L) with a second panel's mean M': the class-conditional distributions of M' are
      f_c(v) = Σ_n w_n Σ_i m_i P(L = c | n, x_i) P(k = vn | n, x_i), and
      AUC = Σ_{v>u} f₁(v) f₀(u) + ½ Σ_v f₁(v) f₀(v), over P₁ P₀;
    * Spearman(π, M) = Cov(U, G(M)) / √(Var U · Var G(M)), U the grade of π (Var U = 1/12) and
      G the mid-distribution function of M.
    """
    from scipy.special import betainc

    a, b = np.atleast_1d(np.asarray(a, dtype=float)), np.atleast_1d(np.asarray(b, dtype=float))
    w = np.atleast_2d(np.asarray(size_weights, dtype=float))
    with np.errstate(invalid="ignore"):
        cdf = betainc(a[:, None], b[:, None], quad.edges[None, :])
    mass = np.diff(cdf, axis=1)  # (rows, bins)
    rows, nv = a.size, quad.values.size
    q = np.zeros_like(mass)
    f1, f0, m_dist, cov = (np.zeros((rows, nv)) for _ in range(4))
    grade = np.cumsum(mass, axis=1) - mass / 2.0 - 0.5  # U − ½ at each bin
    for s, (pmf, cut, index) in enumerate(zip(quad.pmf, quad.cut, quad.value_index)):
        labelled = pmf[:, cut:].sum(axis=1)  # (bins,) P(L = 1 | n, x)
        q += w[:, s : s + 1] * labelled[None, :]
        joint1 = (mass * labelled[None, :]) @ pmf  # (rows, n + 1): P(L = 1, k | n)
        joint0 = (mass * (1.0 - labelled)[None, :]) @ pmf
        f1[:, index] += w[:, s : s + 1] * joint1  # distinct positions within one size
        f0[:, index] += w[:, s : s + 1] * joint0  # distinct positions within one size
        m_dist[:, index] += w[:, s : s + 1] * (joint1 + joint0)  # distinct positions within one size
        cov[:, index] += w[:, s : s + 1] * ((mass * grade) @ pmf)  # distinct positions within one size
    pos, neg = mass * q, mass * (1.0 - q)
    p1, p0 = pos.sum(axis=1), neg.sum(axis=1)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = (pos * (below + neg / 2.0)).sum(axis=1) / (p1 * p0)
        f0_below = np.cumsum(f0, axis=1) - f0
        second = (f1 * (f0_below + f0 / 2.0)).sum(axis=1) / (p1 * p0)
        mid_cdf = np.cumsum(m_dist, axis=1) - m_dist / 2.0  # G(v)
        var_g = (m_dist * mid_cdf**2).sum(axis=1) - 0.25
        rho = (cov * (mid_cdf - 0.5)).sum(axis=1) / np.sqrt(var_g / 12.0)
    defined = (p1 > 1e-12) & (p0 > 1e-12) & np.isfinite(a) & np.isfinite(b)
    return {
        name: np.where(defined, value, np.nan)
        for name, value in zip(MODEL_FIGURES, (upper, second, np.where(var_g > 1e-15, rho, 0.0)))
    }


def size_weights(readers: np.ndarray, sizes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """(rows, sizes) share of programs with each panel size, programs counted ``weights[row, p]``
    times (default once)."""
    n = np.asarray(readers, dtype=int)
    onehot = (n[:, None] == np.asarray(sizes)[None, :]).astype(float)
    w = np.ones((1, n.size)) if weights is None else np.atleast_2d(np.asarray(weights, dtype=float))
    counts = w @ onehot
    out: np.ndarray = counts / counts.sum(axis=1, keepdims=True)
    return out


def upper_bound(
    dataset: Dataset, rule: str = MODEL_RULE, min_fraction: float = 0.5, group: str = ALL, readers: str = ALL
) -> UpperBound:
    """The beta-binomial fit and the model-based figures of the label set ``rule ≥ min_fraction``
    over ``group``'s evaluations (``readers``: all, or only those asked questions). Undefined (NaN)
    below :data:`~mcu_exp.ceiling.split_half.MIN_PROGRAMS` programs with two readers, or when the
    full-panel labels have one class."""
    if rule != MODEL_RULE:
        raise ValueError(f"the beta-binomial upper bound models labels.rule={MODEL_RULE!r}, not {rule!r}")
    counts = reader_counts(dataset, rule, min_fraction, group, readers)
    return upper_bound_from_counts(
        counts["successes"].to_numpy(), counts["readers"].to_numpy(), min_fraction, counts["label"].to_numpy()
    )


def upper_bound_from_counts(
    successes: np.ndarray, readers: np.ndarray, min_fraction: float = 0.5, labels: np.ndarray | None = None
) -> UpperBound:
    """:func:`upper_bound` on per-program counts (``labels``: the full-panel labels, recomputed
    from the counts when None)."""
    k, n = np.asarray(successes, dtype=int), np.asarray(readers, dtype=int)
    if labels is None:
        labels = (k / np.maximum(n, 1) >= min_fraction - TOLERANCE).astype(int)
    fit = fit_beta_binomial(k, n) if n.size else BetaBinomialFit(math.nan, math.nan, math.nan, 0)
    splittable = int((n >= 2).sum())
    figures = dict.fromkeys(MODEL_FIGURES, math.nan)
    if splittable >= MIN_PROGRAMS and np.unique(labels).size == 2 and np.isfinite(fit.a):
        quad = quadrature(n, min_fraction, fit.a, fit.b)
        found = model_figures(np.array([fit.a]), np.array([fit.b]), size_weights(n, quad.sizes), quad)
        figures = {name: float(values[0]) for name, values in found.items()}
    figures["model_icc"] = fit.icc
    return UpperBound(
        fit=fit, figures=figures, programs=splittable, programs_left_out=int((n == 1).sum()), min_fraction=min_fraction
    )


def simulate_upper_auc(
    a: float, b: float, readers: np.ndarray, min_fraction: float = 0.5, draws: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Direct Monte Carlo of the upper bound: the mean over ``draws`` simulated datasets (π ~
    Beta(a, b) for each of the programs with panel sizes ``readers``, k ~ Binomial(n, π)) of the
    AUC of π against the labels ``k / n ≥ min_fraction``, datasets with one class skipped; returns
    (mean, its Monte Carlo standard error)."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    n = np.asarray(readers, dtype=int)
    pi = rng.beta(a, b, size=(draws, n.size))
    labels = rng.binomial(n[None, :], pi) / n[None, :] >= min_fraction - TOLERANCE
    n_pos = labels.sum(axis=1)
    n_neg = n.size - n_pos
    ranks = rankdata(pi, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = ((ranks * labels).sum(axis=1) - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    auc = auc[(n_pos > 0) & (n_neg > 0)]
    return float(auc.mean()), float(auc.std(ddof=1) / math.sqrt(auc.size))


def lower_bound(
    dataset: Dataset,
    rule: str = MODEL_RULE,
    min_fraction: float = 0.5,
    group: str = ALL,
    readers: str = ALL,
    splits: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Reliability:
    """The split-half (lower) bound: :func:`mcu_exp.ceiling.split_half.split_half` unchanged, its
    intervals the spread over splits (for intervals over programs see
    :func:`mcu_exp.ceiling.program_bootstrap.ceiling_bootstrap`)."""
    return split_half(dataset, rule, min_fraction, group, readers, splits, seed, confidence)
