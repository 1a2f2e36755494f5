"""Prediction rejection: how well a proxy's score ranks the programs humans did not understand.

Read the score as the proxy's confidence that a program is understandable and reject
programs lowest score first. After rejecting k of n programs (rejection rate k/n,
k = 0 … n − 1) the n − k retained ones have a mean quality Q(k), the quality of a program
being its human label (1 understood, 0 not; any value in [0, 1], e.g. the share of readers
who understood it, works too). Three curves (lm-polygraph's ``PredictionRejectionArea``;
Malinin et al. 2017, Vashurin et al. 2025):

- **proxy**: reject by the score; programs with equal scores are rejected in random order,
  and the curve is the expectation over that order (each program's quality replaced by the
  mean quality of its tie group), so a constant score is exactly the random curve;
- **random**: reject in random order; in expectation Q(k) = q̄, the mean quality;
- **oracle**: reject by the quality itself, lowest first (the best any score can do).

The area under a curve is its mean over the n rejection rates (lm-polygraph's Riemann sum),
and the prediction rejection ratio is

    PRR = (A_proxy − A_random) / (A_oracle − A_random),

1 for a score that ranks like the humans, 0 in expectation for a random or constant score,
negative for a score that ranks the wrong way round (−1 for a reversed ranking of balanced
binary labels). It is undefined (NaN) when every program has the same quality, which leaves
nothing to reject. In the error form (areas under the curves of the retained error 1 − Q)
the same ratio reads (A_random − A_proxy) / (A_random − A_oracle).

The curves also give ``low_among_rejected``: the expected share of not-understood programs
among the k the proxy rejected (1 − their mean quality; NaN at k = 0).

**Uncertainty.** With 50 programs a PRR is noisy (under the null, n = 50 with 26/24 labels,
its SD is 0.20 and its central 95 % range ±0.39), so it is never printed alone. The area is
linear in the qualities: summing Q(k) over k gives A = (1/n) Σ_i t_i (H_n − H_{i−1}), t_i the
i-th most confident program's (tie-averaged) quality and H the harmonic numbers, so a tied
program weighs the mean of (H_n − H_{i−1}) over its tie group's positions.
:func:`prr_many` scores many bootstrap resamples at once from that form, and
:func:`prr_permutation_p` tests PRR against 0: the weights are fixed by the score, the random
and oracle areas by the label counts, so each random relabelling costs one dot product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from mcu_exp.evaluation.bootstrap import percentile_interval
from mcu_exp.evaluation.metrics import ArrayLike, as_binary, as_score
from mcu_exp.evaluation.registry import UNDEFINED
from mcu_exp.evaluation.significance import permuted_labels

_SPAN = 1e-12  # oracle − random areas at or below this: every quality equal, PRR undefined

CURVES = ("proxy", "random", "oracle")


@dataclass(frozen=True)
class Rejection:
    """The rejection curves (one row per rejection rate) and their areas and PRR."""

    curves: pd.DataFrame
    area_proxy: float
    area_random: float
    area_oracle: float
    prr: float


def _retained_means(sorted_quality: np.ndarray) -> np.ndarray:
    """Mean of the first n − k values (best first) for k = 0 … n − 1."""
    n = sorted_quality.size
    retained = np.arange(n, 0, -1)
    return np.cumsum(sorted_quality)[::-1] / retained


def rejection_curves(quality: ArrayLike, score: ArrayLike) -> pd.DataFrame:
    """Columns ``rejection_rate`` (k/n), ``proxy``, ``random``, ``oracle`` (mean quality of
    the retained programs) and ``low_among_rejected`` (proxy), k = 0 … n − 1."""
    q = np.asarray(quality, dtype=float)
    if q.ndim != 1 or q.size == 0:
        raise ValueError(f"quality must be a non-empty 1-D array, got shape {q.shape}")
    if not np.isfinite(q).all() or (q < 0).any() or (q > 1).any():
        raise ValueError("quality must hold values in [0, 1] (1 = understood)")
    s = as_score(score, "score", q.size)
    n = q.size
    order = np.argsort(-s, kind="stable")  # most confident first
    _, groups = np.unique(-s[order], return_inverse=True)
    tie_mean = np.bincount(groups, weights=q[order]) / np.bincount(groups)
    proxy = _retained_means(tie_mean[groups])
    oracle = _retained_means(np.sort(q)[::-1])
    k = np.arange(n)
    rejected_quality = np.full(n, np.nan)
    rejected_quality[1:] = (q.sum() - proxy[1:] * (n - k[1:])) / k[1:]
    return pd.DataFrame(
        {
            "rejection_rate": k / n,
            "proxy": proxy,
            "random": np.full(n, q.mean()),
            "oracle": oracle,
            "low_among_rejected": 1.0 - rejected_quality,
        }
    )


def prediction_rejection(quality: ArrayLike, score: ArrayLike) -> Rejection:
    """The curves of :func:`rejection_curves`, their areas (means over the rejection rates)
    and the prediction rejection ratio (NaN when the quality is constant)."""
    curves = rejection_curves(quality, score)
    areas = {name: float(curves[name].mean()) for name in CURVES}
    span = areas["oracle"] - areas["random"]
    prr = (areas["proxy"] - areas["random"]) / span if span > _SPAN else UNDEFINED
    return Rejection(curves, areas["proxy"], areas["random"], areas["oracle"], prr)


def prediction_rejection_ratio(quality: ArrayLike, score: ArrayLike) -> float:
    """PRR of ``score`` (higher = more understandable) against ``quality`` (1 = understood)."""
    return prediction_rejection(quality, score).prr


def _position_weights(score: np.ndarray) -> np.ndarray:
    """Per row of ``score`` (rows, n): each program's weight (1/n)·mean(H_n − H_{i−1}) over the
    positions i (1 = most confident) its tie group occupies; the proxy area is Σ quality·weight."""
    s = np.atleast_2d(score)
    n = s.shape[-1]
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])  # H_0 … H_n
    cumulative = np.concatenate([[0.0], np.cumsum(harmonic[n] - harmonic[:n])])  # C(p) = Σ_{i ≤ p} w_i
    order = np.argsort(-s, axis=-1, kind="stable")  # most confident first
    ranked = np.take_along_axis(s, order, axis=-1)
    position = np.broadcast_to(np.arange(1, n + 1), s.shape)
    starts = np.ones(s.shape, dtype=bool)
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    ends = np.ones(s.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)  # tie group's first position
    last = np.minimum.accumulate(np.where(ends, position, n + 1)[:, ::-1], axis=-1)[:, ::-1]
    weights = np.empty(s.shape)
    np.put_along_axis(weights, order, (cumulative[last] - cumulative[first - 1]) / (last - first + 1) / n, axis=-1)
    return weights.reshape(np.shape(score))


def prr_many(score: np.ndarray, quality: np.ndarray) -> np.ndarray:
    """PRR of each row of ``score`` (rows, n; higher = more understandable) against the same row
    of ``quality`` (values in [0, 1]); NaN for a row whose qualities are all equal. Equal to
    :func:`prediction_rejection_ratio` row by row."""
    s, q = np.atleast_2d(np.asarray(score, dtype=float)), np.atleast_2d(np.asarray(quality, dtype=float))
    proxy = (q * _position_weights(s)).sum(axis=-1)
    oracle = (np.sort(q, axis=-1)[:, ::-1] * _position_weights(-np.arange(q.shape[-1], dtype=float))).sum(axis=-1)
    random = q.mean(axis=-1)
    span = oracle - random
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(span > _SPAN, (proxy - random) / span, UNDEFINED)


def prr_permutation_p(y_true: ArrayLike, score: ArrayLike, permutations: int = 10_000, seed: int = 0) -> float:
    """Two-sided permutation p-value of PRR(score) against 0, on the relabellings of
    :func:`mcu_exp.evaluation.significance.permuted_labels` (the AUC test's): the share of them,
    the observed one counted, whose |PRR| is at least the observed one, (1 + b) / (1 + B).
    NaN when ``y_true`` has one class."""
    truth = as_binary(y_true, "y_true")
    values = as_score(score, "score", truth.size)
    if truth.min() == truth.max():
        return UNDEFINED
    weights = _position_weights(values[None, :])[0]
    random = truth.mean()
    observed = abs(float(truth @ weights) - random)
    extreme = 0
    for shuffled in permuted_labels(truth, permutations, seed):
        extreme += int(np.sum(np.abs(shuffled @ weights - random) >= observed - _SPAN))
    return (1 + extreme) / (1 + permutations)


def prr_interval_and_p(
    truth: np.ndarray, score: np.ndarray, indices: np.ndarray, confidence: float, permutations: int, seed: int
) -> tuple[float, float, float]:
    """PRR's percentile interval over the resample rows ``indices`` and its two-sided
    permutation p-value against 0: (low, high, p), as every table that shows PRR gives them."""
    low, high = percentile_interval(prr_many(score[indices], truth[indices]), confidence)
    return low, high, prr_permutation_p(truth, score, permutations, seed)
