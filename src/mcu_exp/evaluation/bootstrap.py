"""Stratified bootstrap percentile confidence intervals for the alignment metrics.

Each resample draws, with replacement, as many positives from the positives and as many
negatives from the negatives as the data hold. Stratification therefore fixes the
prevalence (and n) in every resample: the intervals describe the uncertainty of the metrics
at the observed class balance, and no resample lacks a class when the data have both.

Two kinds of interval (``evaluation.ci``):

- ``recalibrate`` (the default for calibrated proxies): the whole decision is re-run inside
  each resample: the threshold τ is recomputed from the resampled programs' calibration
  scores, the resampled programs are relabelled, then scored. The interval includes τ's own
  uncertainty. A ``relabel`` function (from the decision rule) does this for all resamples
  at once.
- ``conditional``: each program keeps the label the run gave it; the interval is
  conditional on the calibrated τ (narrower). Proxies without a calibrated threshold
  (P0, P3) only have this kind, which for them is the whole pipeline's interval.

All resamples are scored at once from an index matrix (resamples × n) with each registered
rate, AUC and correlation's vectorised implementation (:mod:`mcu_exp.evaluation.registry`).
A resample where a metric is undefined (e.g. no predicted positive: precision) is left out
of that metric's percentiles, and the report says in how many resamples that happened.

**Scoring a subset.** A reader subgroup, or the programs a reference proxy labelled, is
scored with the threshold calibrated on *all* the proxy's programs. Its recalibrating interval
must re-run that estimator: a :class:`Calibration` names all the programs and where the scored
ones sit among them. Each resample then draws every program (the scored ones stratified by
their own label, the others by the whole panel's), recalibrates τ on all the drawn programs,
and scores only the drawn scored programs. Scored programs come first in the draw, so when
the subset is the whole panel with the whole panel's labels the resamples, and so the
interval, are exactly the whole panel's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mcu_exp.evaluation.metrics import ArrayLike, as_score, check_pair
from mcu_exp.evaluation.registry import INTERVAL_KINDS, Counts, Ranking, compute

MIN_RESAMPLES = 1000
_CELLS_PER_CHUNK = 2_000_000  # resamples × n cells scored at once, bounds memory
Relabel = Callable[[np.ndarray], np.ndarray]  # (resamples, n) indices → (resamples, n) labels


@dataclass(frozen=True)
class Calibration:
    """All the programs a calibrated decision draws τ from, when the scored programs are a
    subset of them (see the module docstring).

    ``strata``: each calibration program's class in the whole panel (0/1; any other value is a
    stratum of its own, e.g. -1 for a program without a whole-panel label); ``scored``: the
    position among the calibration programs of each scored program, in the scored programs'
    order; ``relabel``: (rows, N) calibration-program indices → (rows, N) labels, τ
    recalibrated on each row (the decision rule's relabel function).
    """

    strata: np.ndarray
    scored: np.ndarray
    relabel: Relabel


def _draw(groups: list[np.ndarray], resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Each group's members resampled among themselves, with replacement, in their counts;
    the groups side by side in the order given (empty groups skipped)."""
    parts = [group[rng.integers(0, group.size, size=(resamples, group.size))] for group in groups if group.size]
    return np.concatenate(parts, axis=1)


def stratified_indices(y_true: ArrayLike, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """A (resamples, n) matrix of row indices: positives resampled among positives, negatives
    among negatives, each with replacement and in their original counts."""
    truth = np.asarray(y_true)
    return _draw([np.flatnonzero(truth == 1), np.flatnonzero(truth == 0)], resamples, rng)


def calibration_groups(truth: np.ndarray, calibration: Calibration) -> list[np.ndarray]:
    """The strata of a :class:`Calibration` draw, as positions among the calibration
    programs: the scored positives, the scored negatives (by ``truth``, the scored programs'
    labels), then the other programs by their whole-panel class (1, 0, then any other)."""
    scored = np.asarray(calibration.scored, dtype=np.int64)
    strata = np.asarray(calibration.strata)
    rest = np.ones(strata.size, dtype=bool)
    rest[scored] = False
    others = [np.flatnonzero(rest & (strata == 1)), np.flatnonzero(rest & (strata == 0))]
    others += [np.flatnonzero(rest & (strata == v)) for v in np.unique(strata[rest & (strata != 0) & (strata != 1)])]
    return [scored[truth == 1], scored[truth == 0], *others]


def calibrated_resamples(
    truth: np.ndarray, calibration: Calibration, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One :class:`Calibration` draw: (the (resamples, m) indices of the drawn scored programs
    among the m scored programs, their (resamples, m) labels with τ recalibrated on every
    drawn program of the row)."""
    drawn, indices = _calibrated_draw(truth, calibration, resamples, rng)
    labels = np.asarray(calibration.relabel(drawn), dtype=int)[:, : truth.size]
    return indices, labels


def _calibrated_draw(
    truth: np.ndarray, calibration: Calibration, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One :class:`Calibration` draw: the (resamples, all) positions drawn among the
    calibration programs, and the (resamples, m) indices of the drawn scored programs."""
    drawn = _draw(calibration_groups(truth, calibration), resamples, rng)
    m = truth.size
    inverse = np.full(np.asarray(calibration.strata).size, -1, dtype=np.int64)
    inverse[np.asarray(calibration.scored, dtype=np.int64)] = np.arange(m)
    return drawn, inverse[drawn[:, :m]]


def resample_metrics(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    indices: np.ndarray,
    score: ArrayLike | None = None,
    human: ArrayLike | None = None,
    relabel: Relabel | None = None,
    part: bool | None = None,
) -> dict[str, np.ndarray]:
    """Every registered rate, AUC and correlation (score metrics only when ``score`` is
    given, correlations only with ``human`` too) of every resample row of ``indices``,
    vectorised; any index matrix works. ``relabel`` gives each row's labels (recalibrated);
    without it a program keeps its ``y_pred``. ``part`` True/False: the score/label metrics
    only (the score metrics never depend on the labels, hence on the decision)."""
    truth, pred = check_pair(y_true, y_pred)
    idx = np.asarray(indices)
    if idx.ndim != 2:
        raise ValueError(f"indices must be a (resamples, n) matrix, got shape {idx.shape}")
    t = truth[idx]
    ranking = None
    if score is not None:
        values = as_score(score, "score", truth.size)
        ranking = Ranking(values, idx, t, None if human is None else as_score(human, "human", truth.size))
    if part:
        return compute(None, ranking, kinds=INTERVAL_KINDS, score=True)
    labels = pred[idx] if relabel is None else np.asarray(relabel(idx), dtype=int)
    return compute(Counts.from_labels(t, labels), ranking, kinds=INTERVAL_KINDS, score=part)


def bootstrap_distribution(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    score: ArrayLike | None = None,
    resamples: int = 2000,
    seed: int = 0,
    human: ArrayLike | None = None,
    relabel: Relabel | None = None,
    calibration: Calibration | None = None,
    part: bool | None = None,
) -> dict[str, np.ndarray]:
    """Each metric over ``resamples`` stratified resamples (seeded NumPy Generator); see
    :func:`resample_metrics` for ``human``, ``relabel`` and ``part``. With ``calibration``
    (scored programs that are a subset of those τ is calibrated on) each resample draws every
    calibration program and recalibrates on all of them (module docstring); ``relabel`` is
    then not used. The draws depend on the seed, the human labels and ``calibration`` only, so
    ``part=True`` and ``part=False`` split the full result exactly."""
    if resamples < MIN_RESAMPLES:
        raise ValueError(
            f"evaluation.bootstrap_resamples must be at least {MIN_RESAMPLES} "
            f"for a stable percentile interval, got {resamples}"
        )
    truth, pred = check_pair(y_true, y_pred)
    if calibration is not None and len(calibration.scored) != truth.size:
        raise ValueError(f"calibration.scored names {len(calibration.scored)} programs, the labels {truth.size}")
    rng = np.random.default_rng(seed)
    width = truth.size if calibration is None else max(truth.size, np.asarray(calibration.strata).size)
    chunk = max(1, _CELLS_PER_CHUNK // width)
    parts: list[dict[str, np.ndarray]] = []
    for start in range(0, resamples, chunk):
        rows = min(chunk, resamples - start)
        if calibration is None:
            indices = stratified_indices(truth, rows, rng)
            parts.append(resample_metrics(truth, pred, indices, score, human, relabel, part))
            continue
        if part:  # the score metrics need the draw, not the labels recalibrated on it
            indices = _calibrated_draw(truth, calibration, rows, rng)[1]
            parts.append(resample_metrics(truth, pred, indices, score, human, None, part))
            continue
        indices, labels = calibrated_resamples(truth, calibration, rows, rng)
        parts.append(resample_metrics(truth, pred, indices, score, human, _fixed(labels), part))
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def _fixed(labels: np.ndarray) -> Relabel:
    """A relabel that returns ``labels`` whatever the indices (already drawn with them)."""
    return lambda _indices: labels


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"evaluation.confidence must lie in (0, 1), got {confidence}")


def percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` percentile interval of a bootstrap distribution, over its
    defined (non-NaN) values; (NaN, NaN) when none is defined."""
    _check_confidence(confidence)
    defined = np.asarray(values, dtype=float)
    defined = defined[~np.isnan(defined)]
    if defined.size == 0:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return float(low), float(high)


def undefined_shares(dist: dict[str, np.ndarray]) -> dict[str, float]:
    """The share of resamples in which each metric was undefined (only those with any)."""
    shares = {key: float(np.isnan(values).mean()) for key, values in dist.items()}
    return {key: share for key, share in shares.items() if share > 0}


def bootstrap_ci(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    score: ArrayLike | None = None,
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    human: ArrayLike | None = None,
    relabel: Relabel | None = None,
    calibration: Calibration | None = None,
) -> dict[str, tuple[float, float]]:
    """Stratified bootstrap percentile interval (low, high) of each metric."""
    _check_confidence(confidence)
    dist = bootstrap_distribution(y_true, y_pred, score, resamples, seed, human, relabel, calibration)
    return {key: percentile_interval(values, confidence) for key, values in dist.items()}
