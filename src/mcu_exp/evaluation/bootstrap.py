"""Stratified bootstrap percentile confidence intervals for the alignment metrics.

Each resample draws, with replacement, as many positives from the positives and as many
negatives from the negatives as the data hold. Stratification therefore fixes the
prevalence (and n) in every resample: the intervals describe the uncertainty of the metrics
at the observed class balance, and no resample lacks a class when the data have both.

All resamples are scored at once from an index matrix (resamples × n) with each registered
rate and AUC's vectorised implementation (:mod:`mcu_exp.evaluation.registry`): the label
metrics from per-row confusion counts, the score AUC in the rank-sum (Mann–Whitney) form
with mid-ranks for ties, which equals scikit-learn's ``roc_auc_score``. Conventions match
:mod:`mcu_exp.evaluation.metrics` (``zero_division=0``; AUC 0.5 when a resample has one
class).
"""

from __future__ import annotations

import numpy as np

from mcu_exp.evaluation.metrics import ArrayLike, as_score, check_pair
from mcu_exp.evaluation.registry import INTERVAL_KINDS, Counts, Ranking, compute

MIN_RESAMPLES = 1000
_CELLS_PER_CHUNK = 2_000_000  # resamples × n cells scored at once, bounds memory


def stratified_indices(y_true: ArrayLike, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """A (resamples, n) matrix of row indices: positives resampled among positives, negatives
    among negatives, each with replacement and in their original counts."""
    truth = np.asarray(y_true)
    pos = np.flatnonzero(truth == 1)
    neg = np.flatnonzero(truth == 0)
    parts = [group[rng.integers(0, group.size, size=(resamples, group.size))]
             for group in (pos, neg) if group.size]
    return np.concatenate(parts, axis=1)


def resample_metrics(
    y_true: ArrayLike, y_pred: ArrayLike, indices: np.ndarray, score: ArrayLike | None = None
) -> dict[str, np.ndarray]:
    """Every registered rate and AUC (score metrics such as ``auc_score`` only when
    ``score`` is given) of every resample row of ``indices``, vectorised; any index matrix
    works."""
    truth, pred = check_pair(y_true, y_pred)
    idx = np.asarray(indices)
    if idx.ndim != 2:
        raise ValueError(f"indices must be a (resamples, n) matrix, got shape {idx.shape}")
    t = truth[idx]
    ranking = None if score is None else Ranking(as_score(score, "score", truth.size), idx, t)
    return compute(Counts.from_labels(t, pred[idx]), ranking, kinds=INTERVAL_KINDS)


def bootstrap_distribution(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    score: ArrayLike | None = None,
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Each metric over ``resamples`` stratified resamples (seeded NumPy Generator)."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"evaluation.bootstrap_resamples must be at least {MIN_RESAMPLES} "
                         f"for a stable percentile interval, got {resamples}")
    truth, pred = check_pair(y_true, y_pred)
    rng = np.random.default_rng(seed)
    chunk = max(1, _CELLS_PER_CHUNK // truth.size)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, resamples, chunk):
        indices = stratified_indices(truth, min(chunk, resamples - start), rng)
        parts.append(resample_metrics(truth, pred, indices, score))
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"evaluation.confidence must lie in (0, 1), got {confidence}")


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` percentile interval of a bootstrap distribution."""
    _check_confidence(confidence)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    score: ArrayLike | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Stratified bootstrap percentile interval (low, high) of each metric."""
    _check_confidence(confidence)
    dist = bootstrap_distribution(y_true, y_pred, score, resamples, seed)
    return {key: percentile_interval(values, confidence) for key, values in dist.items()}
